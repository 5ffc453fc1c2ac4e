"""Every module a DVC stage runs is one of its dependencies in dvc.yaml.

A stage's code is the function of its command that the stage runs (``pipeline.stage
tune`` runs :func:`pipeline.stage.tune`, the functions of ``stage.py`` it calls and the
command's ``main``), every module it imports (at module level or inside a function:
``ast``), and everything those import in turn. A subprocess imports all of them and lists
``sys.modules``: each ``pipeline`` / ``projloss`` file loaded must lie under a ``deps``
path of the stage (a folder or the file), or ``dvc repro`` could reuse results computed by
older code.
"""

from __future__ import annotations

import ast
import functools
import json
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from pipeline.paths import project_root
from pipeline.tools.import_graph import graph

ROOT = project_root()
#: dvc.yaml stage -> (its command module, the function of it the stage runs; None: all)
STAGES: dict[str, tuple[str, str | None]] = {
    "fetch": ("pipeline.stage", "fetch"),
    "preprocess": ("pipeline.stage", "preprocess"),
    "tune": ("pipeline.stage", "tune"),
    "refit": ("pipeline.stage", "refit"),
    "evaluate": ("pipeline.stage", "evaluate"),
    "report": ("pipeline.report.__main__", None),
}
#: the functions every ``pipeline.stage`` command passes through
_ENTRY = ("main", "_run_stage")


def _module_file(module: str) -> Path:
    path = ROOT / "src" / Path(*module.split("."))
    return path / "__init__.py" if path.is_dir() else path.with_suffix(".py")


def _imports_of(node: ast.AST, package: str, known: set[str]) -> set[str]:
    out: set[str] = set()
    for n in ast.walk(node):
        if isinstance(n, ast.ImportFrom) and (n.level or (n.module or "").startswith("pipeline")):
            base = n.module or ""
            if n.level:
                up = package.split(".")[: len(package.split(".")) - (n.level - 1)]
                base = ".".join([*up, base] if base else up)
            for a in n.names:
                out.add(f"{base}.{a.name}" if f"{base}.{a.name}" in known else base)
        elif isinstance(n, ast.Import):
            out.update(a.name for a in n.names if a.name.startswith(("pipeline", "projloss")))
        elif isinstance(n, ast.ImportFrom) and (n.module or "").startswith("projloss"):
            out.add(n.module)
    return out


def stage_modules(command: str, function: str | None) -> set[str]:
    """The modules (``pipeline.*``, ``projloss`` names as imported) a stage's code imports:
    ``function`` of ``command``, the module-level functions of ``command`` it calls, the
    command's entry functions and module-level imports, then the transitive closure."""
    g = graph(ROOT / "src" / "pipeline")
    known = set(g)
    tree = ast.parse(_module_file(command).read_text(encoding="utf-8"))
    package = command.rpartition(".")[0]
    if function is None:
        roots = _imports_of(tree, package, known)
    else:
        funcs = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
        top = [n for n in tree.body if not isinstance(n, ast.FunctionDef | ast.ClassDef)]
        roots = set().union(*(_imports_of(n, package, known) for n in top))
        seen: set[str] = set()
        todo = [function, *_ENTRY]
        while todo:
            name = todo.pop()
            if name in seen:
                continue
            seen.add(name)
            roots |= _imports_of(funcs[name], package, known)
            if name in _ENTRY:
                continue  # the dispatch names every stage: its own imports only
            called = {n.id for n in ast.walk(funcs[name]) if isinstance(n, ast.Name)}
            others = {f for _, f in STAGES.values()} - {function}
            todo += [c for c in called & set(funcs) if c not in others]
    out = {command}
    todo = [m for m in roots if m in known]
    while todo:
        m = todo.pop()
        if m in out:
            continue
        out.add(m)
        todo += sorted(g[m] - out)
    # the engine modules they import (lazily too): projloss is not in the graph
    engine = {m for m in roots if m.startswith("projloss")}
    for m in out:
        tree = ast.parse(_module_file(m).read_text(encoding="utf-8"))
        engine |= {i for i in _imports_of(tree, m, known) if i.startswith("projloss")}
    return out | engine


def loaded_files(modules: Iterable[str]) -> set[Path]:
    """The files of every ``pipeline`` / ``projloss`` module loaded once ``modules`` are
    imported (a fresh interpreter: what the stage's process loads)."""
    return set(_loaded(frozenset(modules)))


@functools.cache
def _loaded(modules: frozenset[str]) -> frozenset[Path]:
    code = (
        "import importlib, json, sys\n"
        f"for m in {sorted(modules)!r}:\n"
        "    importlib.import_module(m)\n"
        "print(json.dumps(sorted({getattr(m, '__file__', None) or '' for n, m in "
        "list(sys.modules.items()) if n.split('.')[0] in ('pipeline', 'projloss')})))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return frozenset(Path(f).resolve() for f in json.loads(done.stdout) if f)


def stage_deps(dvc: Mapping[str, object], stage: str) -> list[str]:
    """The code dependencies (``src/...``) of ``stage`` in the parsed dvc.yaml."""
    node = dvc["stages"][stage]
    node = node.get("do", node)
    return [d for d in node.get("deps", []) if isinstance(d, str) and d.startswith("src/")]


def uncovered(files: Iterable[Path], deps: Sequence[str]) -> list[str]:
    """The files (relative to the project root) under none of ``deps``."""
    paths = [(ROOT / d).resolve() for d in deps]
    out = []
    for f in files:
        if not any(f == p or p in f.parents for p in paths):
            out.append(str(f.relative_to(ROOT)) if ROOT in f.parents else str(f))
    return sorted(out)


@pytest.fixture(scope="module")
def dvc() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text(encoding="utf-8"))


def test_every_stage_is_checked(dvc: dict) -> None:
    assert set(dvc["stages"]) == set(STAGES)


@pytest.mark.parametrize("stage", sorted(STAGES))
def test_stage_deps_cover_its_code(dvc: dict, stage: str) -> None:
    command, function = STAGES[stage]
    files = loaded_files(stage_modules(command, function))
    assert _module_file(command).resolve() in files
    missing = uncovered(files, stage_deps(dvc, stage))
    assert not missing, f"dvc.yaml stage {stage!r} runs code it does not depend on: {missing}"


def test_a_missing_dep_is_found(dvc: dict) -> None:
    """The check itself: the tune stage without src/pipeline/runs misses runs/tune.py."""
    files = loaded_files(stage_modules("pipeline.stage", "tune"))
    deps = [d for d in stage_deps(dvc, "tune") if d != "src/pipeline/runs"]
    assert "src/pipeline/runs/tune.py" in uncovered(files, deps)
