"""The import graph of src/pipeline: no cycle, no import of a command module, the
folders in one order."""

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


def test_the_folders_are_in_order() -> None:
    """common -> data -> config -> runs -> cluster | report -> commands: no import (lazy
    ones included) of a later layer, nor between cluster and report."""
    g = ig.graph(PACKAGE)
    assert ig.back_edges(g) == []
    layers = {ig.layer(m) for m in g}
    assert layers == {name for name, _ in ig.LAYERS}  # every layer has modules
    assert ig.layer("pipeline") == "common"  # the package itself: imported by every module
    for m in ("pipeline.errors", "pipeline.paths", "pipeline.fileio", "pipeline.lifecycle"):
        assert ig.layer(m) == "common", m
    assert {m for m in g if ig.layer(m) == "commands"} >= set(ig.COMMANDS)


def test_a_back_edge_is_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A lazy import of a later folder is a back-edge (config/run.py's of runs.scoring
    was); cluster and report, one rank, import neither each other; a common module
    imports no folder."""
    root = _package(
        tmp_path,
        {
            "errors.py": "",
            "data/__init__.py": "",
            "data/api.py": "from ..errors import x\n",
            "config/__init__.py": "",
            "config/run.py": "def f():\n    from ..runs import scoring\n",
            "runs/__init__.py": "",
            "runs/scoring.py": "from ..config import run\nfrom ..data import api\n",
            "cluster/__init__.py": "",
            "cluster/a.py": "from ..report import b\nfrom ..runs import scoring\n",
            "report/__init__.py": "",
            "report/b.py": "",
            "paths.py": "import pipeline.data.api\n",
        },
    )
    g = ig.graph(root)
    assert ig.back_edges(g) == [
        ("pipeline.cluster.a", "pipeline.report.b"),
        ("pipeline.config.run", "pipeline.runs.scoring"),
        ("pipeline.paths", "pipeline.data.api"),
    ]
    with pytest.raises(SystemExit) as exc:
        ig.main([str(root)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "pipeline.config.run (config) imports pipeline.runs.scoring (runs)" in err


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
