"""A set is one module: nothing outside ``src/projloss/sets/`` branches on set classes,
the registry (:data:`projloss.SETS`) equals the pipeline's ``conf/set/`` options (each
naming its class), every registered set has a specimen in the common set tests
(``specimens.py``), and :func:`projloss.sets.register_set` adds a set."""

from __future__ import annotations

import ast
import importlib
import inspect
from pathlib import Path

import pytest
import yaml
from specimens import SPECIMENS

import projloss.sets as sets_package
from projloss.sets import SETS, ConvexSet, UnitCube, register_set
from projloss.tasks import TASKS

ROOT = Path(__file__).resolve().parents[3]
SRC = ROOT / "src"
SETS_DIR = SRC / "projloss" / "sets"


def projloss_sets() -> dict[str, type[ConvexSet]]:
    """The registry's own sets (a test may register more for a while)."""
    return {n: c for n, c in SETS.items() if c.__module__.startswith("projloss.")}


def set_class_names() -> set[str]:
    """The names of every concrete set class of ``projloss.sets`` (any subclass of
    ``ConvexSet`` defined in the package, registered or not)."""
    names = set()
    for module in SETS_DIR.glob("*.py"):
        mod = importlib.import_module(f"projloss.sets.{module.stem}".removesuffix(".__init__"))
        for obj in vars(mod).values():
            if inspect.isclass(obj) and issubclass(obj, ConvexSet) and obj is not ConvexSet:
                names.add(obj.__name__)
    return names


def _names(node: ast.AST) -> set[str]:
    """The names a type expression refers to (``A``, ``m.A``, ``(A, B)``, ``A | B``)."""
    out = set()
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name):
            out.add(sub.id)
        elif isinstance(sub, ast.Attribute):
            out.add(sub.attr)
    return out


def set_class_branches(source: str, classes: set[str]) -> list[str]:
    """The places in ``source`` that branch on set classes: ``isinstance`` /
    ``issubclass`` over one (directly or through a module-level name bound to them, e.g.
    ``SEPARABLE = (UnitCube, Reals)``), ``type(x) is/== Class``, and tables keyed by set
    classes (``{Simplex: ..., ...}``). ``ConvexSet`` itself is fine."""
    tree = ast.parse(source)
    aliases: dict[str, set[str]] = {}
    for stmt in tree.body:
        targets = stmt.targets if isinstance(stmt, ast.Assign) else []
        if isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets = [stmt.target]
        for t in targets:
            if isinstance(t, ast.Name) and stmt.value is not None:
                aliases[t.id] = _names(stmt.value)

    def hits(names: set[str]) -> set[str]:
        expanded = set(names)
        for n in names:
            expanded |= aliases.get(n, set())
        return expanded & classes

    found = []
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ("isinstance", "issubclass")
            and len(node.args) == 2
            and hits(_names(node.args[1]))
        ):
            found.append(
                f"line {node.lineno}: {node.func.id} over {sorted(hits(_names(node.args[1])))}"
            )
        elif isinstance(node, ast.Compare) and any(
            isinstance(s, ast.Call) and isinstance(s.func, ast.Name) and s.func.id == "type"
            for s in [node.left, *node.comparators]
        ):
            bad = hits(set().union(*(_names(c) for c in [node.left, *node.comparators])))
            if bad:
                found.append(f"line {node.lineno}: type() compared with {sorted(bad)}")
        elif isinstance(node, ast.Dict):
            keys = set().union(set(), *(_names(k) for k in node.keys if k is not None))
            if hits(keys):
                found.append(f"line {node.lineno}: a table keyed by {sorted(hits(keys))}")
    return found


def branches_outside_the_sets(src: Path) -> dict[str, list[str]]:
    """:func:`set_class_branches` of every module of ``src`` outside ``projloss/sets``."""
    classes = set_class_names()
    out = {}
    for path in sorted(src.rglob("*.py")):
        if (src / "projloss" / "sets") in path.parents:
            continue
        found = set_class_branches(path.read_text(encoding="utf-8"), classes)
        if found:
            out[str(path.relative_to(src))] = found
    return out


def test_nothing_outside_the_sets_branches_on_set_classes():
    """The solver, the estimators, the task validation, the torch backend and the
    pipeline ask the set (its attributes and methods), never its class."""
    assert branches_outside_the_sets(SRC) == {}


def test_the_branch_check_finds_the_old_chains():
    """The check can fail: the shapes of the chains it replaced (``_newton.py``'s
    ``SEPARABLE`` tuple and ``isinstance`` chain, ``torch/_encoding.py``'s ``DECODERS``
    table, a ``type(s) is`` test)."""
    source = """
from projloss.sets import Knapsack, Reals, Simplex, UnitCube, ConvexSet
SEPARABLE = (UnitCube, Reals)
DECODERS = {Simplex: len}
def f(s):
    if isinstance(s, SEPARABLE + (Simplex,)):
        return 1
    if isinstance(s, Knapsack) and type(s) is Knapsack:
        return 2
    return isinstance(s, ConvexSet)
"""
    found = set_class_branches(source, set_class_names())
    assert [f.split(":")[0] for f in found] == ["line 4", "line 6", "line 8", "line 8"]


def test_conf_set_options_are_the_registry():
    """``conf/set/<name>.yaml`` for each registered set, ``name`` its file name and
    ``class`` the import path of the registered class."""
    confs = {p.stem: yaml.safe_load(p.read_text()) for p in (ROOT / "conf" / "set").glob("*.yaml")}
    assert set(confs) == set(projloss_sets())
    for stem, node in confs.items():
        assert node["name"] == stem
        module, _, attr = node["class"].rpartition(".")
        assert getattr(importlib.import_module(module), attr) is SETS[stem], stem


def missing_specimens(registry: dict[str, type[ConvexSet]]) -> set[str]:
    """The registered sets that no specimen builds (exact class)."""
    built = {type(spec.make(max(spec.sizes))) for spec in SPECIMENS}
    return {name for name, cls in registry.items() if cls not in built}


def test_every_set_has_a_specimen():
    """Adding a set means adding a specimen: the common tests then cover it."""
    assert missing_specimens(projloss_sets()) == set()

    class Orphan(UnitCube):
        name = "orphan"

    assert missing_specimens({**projloss_sets(), "orphan": Orphan}) == {"orphan"}


def test_register_set():
    class Box(UnitCube):
        name = "test_box"

    try:
        assert register_set(Box) is Box and SETS["test_box"] is Box
        assert register_set(Box, "test_box") is Box  # again: a no-op
        assert sets_package.get_set("test_box") == Box()

        class Other(UnitCube):
            name = "test_box"

        with pytest.raises(ValueError, match="is taken by"):
            register_set(Other)
        with pytest.raises(ValueError, match="is named 'test_box', not 'box'"):
            register_set(Box, "box")
        with pytest.raises(TypeError, match="subclass of ConvexSet"):
            register_set(dict)  # type: ignore[arg-type]
    finally:
        SETS.pop("test_box", None)


def test_the_tasks_take_their_sets_from_the_registry():
    """Each encoding's projection and decoding sets are the registered sets that declare
    it (``ConvexSet.encodings`` / ``decodes``): the paper's lists (paper §6)."""
    projection = {e.name: e.projection_sets for t in TASKS.values() for e in t.encodings}
    decoders = {e.name: e.decoders for t in TASKS.values() for e in t.encodings}
    assert projection == {
        "permutation_matrix": ("reals", "nonneg", "cube", "row_simplex", "birkhoff"),
        "permutahedron": ("reals", "nonneg", "permutahedron"),
        "cumulative": ("reals", "nonneg", "unit_cube", "order_simplex"),
        "indicator": ("reals", "nonneg", "unit_cube", "knapsack"),
        "one_hot": ("reals", "nonneg", "unit_cube", "simplex"),
    }
    assert {k: set(v) for k, v in decoders.items()} == {
        "permutation_matrix": {"birkhoff", "row_simplex", "cube"},
        "permutahedron": {"permutahedron"},
        "cumulative": {"order_simplex"},
        "indicator": {"unit_cube", "knapsack"},
        "one_hot": {"simplex"},
    }
    assert decoders["permutation_matrix"][0] == "birkhoff"  # the marginal polytope first


def set_name_comparisons(source: str, names: set[str]) -> list[str]:
    """Comparisons (``==``, ``!=``, ``in``, ``not in``) with a set's registry name as a
    string constant (``comp.set == "knapsack"``, ``"knapsack" in (comp.set, ...)``)."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Compare):
            consts = {
                c.value
                for part in [node.left, *node.comparators]
                for c in ast.walk(part)
                if isinstance(c, ast.Constant) and isinstance(c.value, str)
            }
            if consts & names:
                found.append(f"line {node.lineno}: {sorted(consts & names)}")
    return found


#: the name comparisons the pipeline keeps, and why (none is a set's own knowledge)
PIPELINE_NAME_CASES = {
    # decoder=round is the ordinal ridge baseline of Table 4: it is defined on R^p alone
    "pipeline/config/composition.py": ["['reals']"],
    # the remedy for a label-ranking composition (cube decoder, entrywise Hamming loss)
    "pipeline/runs/structure_flags.py": ["['cube']"],
}


def test_the_pipeline_has_no_set_name_special_cases():
    """``make_estimator``, ``validate`` and the MLflow view read what they need from the
    set (``estimator_params``, ``run_params``, ``permutation_outputs``), not its name."""
    names = set(projloss_sets())
    found = {}
    for folder in ("config", "runs"):
        for path in sorted((SRC / "pipeline" / folder).glob("*.py")):
            hits = set_name_comparisons(path.read_text(encoding="utf-8"), names)
            if hits:
                found[str(path.relative_to(SRC))] = [h.split(": ", 1)[1] for h in hits]
    assert found == PIPELINE_NAME_CASES
