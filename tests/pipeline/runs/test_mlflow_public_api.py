"""``src/`` uses MLflow through its public API only, and no module of ``src/pipeline`` is
over 600 lines (issue 34).

Private MLflow is: a module of ``mlflow.store``, ``mlflow.utils`` or ``mlflow.server``, or
any module path with a part that starts with ``_`` (``mlflow.tracking._model_registry``,
``mlflow.entities._mlflow_object``), imported or named as a module to import (a string such
as the preload server's list; a logger name, ``logging.getLogger("mlflow.store.db.utils")``,
is not an import); a name with a leading underscore imported from ``mlflow``; an attribute
with a leading underscore read on an MLflow object (``client._tracking_client``,
``mlflow.sklearn._get_default_serialization_format``, ``run._outputs``): an object is
MLflow's when its expression names ``mlflow`` (a name, module or attribute spelled with
it) or a ``client``, or it was assigned from such an expression.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[3]
#: the most lines a module of src/pipeline may have
MAX_LINES = 600
_PRIVATE_PACKAGES = ("mlflow.store", "mlflow.utils", "mlflow.server")
_MODULE = re.compile(r"mlflow(\.\w+)+")


def private_module(name: str) -> bool:
    """Whether ``name`` is a private MLflow module path.

    Examples
    --------
    >>> private_module("mlflow.store.tracking.sqlalchemy_store"), private_module("mlflow.entities")
    (True, False)
    >>> private_module("mlflow.tracking._model_registry.fluent"), private_module("mlflow")
    (True, False)
    """
    if name != "mlflow" and not name.startswith("mlflow."):
        return False
    return name.startswith(_PRIVATE_PACKAGES) or any(p.startswith("_") for p in name.split("."))


def _mentions_mlflow(node: ast.AST, tainted: set[str]) -> bool:
    for sub in ast.walk(node):
        if isinstance(sub, ast.Name) and (
            "mlflow" in sub.id.lower() or sub.id == "client" or sub.id in tainted
        ):
            return True
        if isinstance(sub, ast.Attribute) and (
            "mlflow" in sub.attr.lower() or sub.attr == "client"
        ):
            return True
    return False


def violations(source: str) -> list[tuple[int, str]]:
    """(line, what) for each private MLflow use in ``source`` (see the module docstring).

    Examples
    --------
    >>> violations("from mlflow.store.tracking import dbmodels")
    [(1, 'import of mlflow.store.tracking')]
    >>> violations("x = client._tracking_client.store")
    [(1, 'client._tracking_client')]
    >>> violations("r = mlflow.active_run()\\nr._outputs = 1\\nself._mine = 2")
    [(2, 'r._outputs')]
    >>> violations("import logging\\nlogging.getLogger('mlflow.store.db.utils')")
    []
    """
    tree = ast.parse(source)
    out: list[tuple[int, str]] = []
    tainted: set[str] = set()
    loggers = {
        id(arg)
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "getLogger"
        for arg in node.args
    }
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if private_module(alias.name):
                    out.append((node.lineno, f"import of {alias.name}"))
                if alias.name.split(".")[0] == "mlflow":
                    tainted.add((alias.asname or alias.name).split(".")[0])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if private_module(node.module):
                out.append((node.lineno, f"import of {node.module}"))
            elif node.module.split(".")[0] == "mlflow":
                for alias in node.names:
                    if alias.name.startswith("_"):
                        out.append((node.lineno, f"import of {node.module}.{alias.name}"))
                    tainted.add(alias.asname or alias.name)
        elif isinstance(node, ast.Assign | ast.AnnAssign) and node.value is not None:
            if _mentions_mlflow(node.value, tainted):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                tainted.update(t.id for t in targets if isinstance(t, ast.Name))
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            if id(node) not in loggers and _MODULE.fullmatch(node.value):
                if private_module(node.value):
                    out.append((node.lineno, f"module name {node.value!r}"))
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Attribute)
            and node.attr.startswith("_")
            and not node.attr.startswith("__")
            and _mentions_mlflow(node.value, tainted)
        ):
            out.append((node.lineno, f"{ast.unparse(node.value)}.{node.attr}"))
    return sorted(set(out))


def src_violations(src: Path) -> dict[str, list[tuple[int, str]]]:
    """:func:`violations` of every module under ``src``, by path (those with some)."""
    found = {}
    for path in sorted(src.rglob("*.py")):
        bad = violations(path.read_text(encoding="utf-8"))
        if bad:
            found[str(path.relative_to(src))] = bad
    return found


def long_modules(package: Path, limit: int = MAX_LINES) -> dict[str, int]:
    """The modules of ``package`` over ``limit`` lines, with their line counts."""
    counts = {
        str(p.relative_to(package)): len(p.read_text(encoding="utf-8").splitlines())
        for p in sorted(package.rglob("*.py"))
    }
    return {name: n for name, n in counts.items() if n > limit}


def test_src_uses_mlflow_through_its_public_api_only() -> None:
    assert src_violations(ROOT / "src") == {}


def test_the_checks_find_what_they_look_for() -> None:
    """Each kind of private use is found (the checks can fail), on the shapes the code
    had before issue 34: a bulk writer into MLflow's tables, the store behind the client,
    a private helper of a flavor, a private module preloaded by name, a private attribute
    of the active run."""
    code = "\n".join(
        [
            "import mlflow",
            "from mlflow.store.tracking.dbmodels.models import SqlMetric",
            "from mlflow.tracking._model_registry.fluent import _register_model",
            "from mlflow.tracking.fluent import _create_logged_model",
            "PRELOAD = ('numpy', 'mlflow.store.tracking.sqlalchemy_store')",
            "def f(self):",
            "    store = self.client._tracking_client.store",
            "    fmt = mlflow.sklearn._get_default_serialization_format()",
            "    active = self._mlflow.active_run()",
            "    active._outputs = None",
            "    self._store = store",
        ]
    )
    found = [line for line, _ in violations(code)]
    assert found == [2, 3, 4, 5, 7, 8, 10]


def test_no_pipeline_module_is_over_600_lines() -> None:
    assert long_modules(ROOT / "src" / "pipeline") == {}
    assert long_modules(ROOT / "src" / "pipeline", limit=100)  # the count can fail
