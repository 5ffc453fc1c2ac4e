"""The README's engine example runs as written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from projloss.sets import SETS

README = Path(__file__).resolve().parents[1] / "README.md"


def test_engine_example_runs(capsys):
    text = README.read_text()
    section = text.split("## Engine example", 1)[1]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "no python block in the 'Engine example' section"
    if "birkhoff" not in SETS:
        pytest.skip("the Birkhoff polytope is not merged yet")
    namespace: dict = {}
    exec(compile(blocks[0], str(README), "exec"), namespace)
    out = capsys.readouterr().out
    assert "entrywise accuracy" in out
    assert namespace["y_pred"].shape == (50, 4)
    assert namespace["model"].score(namespace["X"][150:], namespace["y"][150:]) > 0.6
