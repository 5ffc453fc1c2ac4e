"""The guide's engine example (``docs/guide/engine.md``) runs as written."""

from __future__ import annotations

import re

import pytest

from docs_pages import GUIDE, page
from projloss.sets import SETS


def test_engine_example_runs(capsys):
    blocks = re.findall(r"```python\n(.*?)```", page("engine.md"), flags=re.S)
    assert blocks, "no python block in docs/guide/engine.md"
    if "birkhoff" not in SETS:
        pytest.skip("the Birkhoff polytope is not merged yet")
    namespace: dict = {}
    exec(compile(blocks[0], str(GUIDE / "engine.md"), "exec"), namespace)
    out = capsys.readouterr().out
    assert "entrywise accuracy" in out
    assert namespace["y_pred"].shape == (50, 4)
    assert namespace["model"].score(namespace["X"][150:], namespace["y"][150:]) > 0.6
