"""The import graph of src/pipeline: no cycle, no import of a command module."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.paths import project_root
from pipeline.tools import import_graph as ig

PACKAGE = project_root() / "src" / "pipeline"


def test_no_import_cycle() -> None:
    assert ig.cycles(ig.graph(PACKAGE)) == []


def test_no_module_imports_a_command() -> None:
    g = ig.graph(PACKAGE)
    assert set(ig.COMMANDS) <= set(g)  # the list names real modules
    assert ig.command_imports(g) == []


def test_the_layers_are_respected() -> None:
    """data -> config (its settings) -> runs -> report: runs, report and the commands are
    imported by nothing below them; the common modules import no folder."""
    g = ig.graph(PACKAGE)
    common = (
        "pipeline.errors",
        "pipeline.paths",
        "pipeline.fileio",
        "pipeline.plain",
        "pipeline.lifecycle",
        "pipeline.argv",
        "pipeline._hydra",
    )
    for m in common:
        assert not {t for t in g[m] if t.count(".") > 1}, m
    for m, targets in g.items():
        if m.startswith(("pipeline.data.", "pipeline.config.")):
            assert not {t for t in targets if t.startswith("pipeline.report")}, m


def _package(tmp_path: Path, files: dict[str, str]) -> Path:
    root = tmp_path / "pipeline"
    for name, text in {"__init__.py": "", **files}.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return root


def test_a_lazy_cycle_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A cycle through an import inside a function is a cycle (the one of
    composition.py <-> scoring.py was)."""
    root = _package(
        tmp_path,
        {
            "sub/__init__.py": "",
            "sub/a.py": "from ..b import f\n",
            "b.py": "def f():\n    from .sub import a\n",
            "c.py": "import pipeline.b\n",
        },
    )
    g = ig.graph(root)
    assert g["pipeline.c"] == {"pipeline.b"}
    assert ig.cycles(g) == [["pipeline.b", "pipeline.sub.a"]]
    with pytest.raises(SystemExit) as exc:
        ig.main([str(root)])
    assert exc.value.code == 1
    assert "error: import cycle: pipeline.b <-> pipeline.sub.a" in capsys.readouterr().err


def test_an_import_of_a_command_is_found(tmp_path: Path) -> None:
    root = _package(tmp_path, {"stage.py": "", "x.py": "from . import stage\n"})
    assert ig.command_imports(ig.graph(root)) == [("pipeline.x", "pipeline.stage")]
