"""Every public callable of the engine has a numpydoc docstring with its sections.

The public names are those in the ``__all__`` of the engine's public modules (and the
public methods and properties of the public classes). Each is validated with numpydoc's
own validator (:func:`numpydoc.validate.validate`, as scikit-learn's
``test_docstring_parameters``): a summary, every parameter documented and no unknown one
(``PR01``/``PR02``), a ``Returns`` (or ``Yields``) section where the callable returns a
value (``RT01``). On top of numpydoc: a callable whose own body raises an exception
documents it in a ``Raises`` section. The API reference of the documentation site is
generated from these docstrings.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import textwrap
from collections.abc import Iterator

import pytest

numpydoc_validate = pytest.importorskip("numpydoc.validate")

#: The engine's public modules: the API reference documents their ``__all__``.
PUBLIC_MODULES = (
    "projloss.sets",
    "projloss.sets.jacobians",
    "projloss.geometry",
    "projloss.losses",
    "projloss.decoding",
    "projloss.target_losses",
    "projloss.metrics",
    "projloss.isotonic",
    "projloss.tasks",
    "projloss.estimators",
    "projloss.torch",
    "projloss",  # last: its names are re-exports, named where they are defined above
)

#: numpydoc checks enforced (the rest, e.g. See Also or Examples on every method, are not).
CHECKS = {
    "GL08": "no docstring",
    "SS01": "no summary",
    "PR01": "a parameter is not documented",
    "PR02": "a documented parameter does not exist",
    "PR07": "a parameter has no description",
    "RT01": "no Returns section",
}


def _public_names() -> Iterator[str]:
    seen: set[int] = set()
    for modname in PUBLIC_MODULES:
        module = importlib.import_module(modname)
        names = getattr(module, "__all__", None)
        if names is None:
            own = vars(module).items()
            names = [
                n
                for n, v in own
                if not n.startswith("_") and getattr(v, "__module__", "") == modname
            ]
        for name in sorted(names):
            obj = getattr(module, name)
            if not (inspect.isclass(obj) or callable(obj)) or id(obj) in seen:
                continue
            seen.add(id(obj))
            yield f"{modname}.{name}"
            if inspect.isclass(obj):
                yield from _public_members(obj, f"{modname}.{name}", seen)


def _public_members(cls: type, path: str, seen: set[int]) -> Iterator[str]:
    """The public methods and properties of ``cls``, those it inherits from the engine's
    own base classes included (named where they are defined: a base's ``fit`` is
    validated once, on the base)."""
    done: set[str] = set()
    for klass in cls.__mro__:
        if not klass.__module__.startswith("projloss"):
            continue
        where = path if klass is cls else f"{klass.__module__}.{klass.__qualname__}"
        for attr, member in vars(klass).items():
            if attr in done or (attr.startswith("_") and attr != "__call__"):
                continue
            done.add(attr)
            if (
                not (
                    inspect.isfunction(member)
                    or isinstance(member, property | classmethod | staticmethod)
                )
                or id(member) in seen
            ):
                continue
            seen.add(id(member))
            yield f"{where}.{attr}"


PUBLIC = sorted(set(_public_names()))


def _raises_in_body(obj: object) -> list[str]:
    """The exceptions a function's own body raises (not its nested functions')."""
    func = obj.fget if isinstance(obj, property) else obj
    func = getattr(func, "__func__", func)
    try:
        source = textwrap.dedent(inspect.getsource(func))
    except (OSError, TypeError):
        return []
    tree = ast.parse(source)
    root = tree.body[0]
    found: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(
                child, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef | ast.Lambda
            ):
                continue
            if isinstance(child, ast.Raise) and child.exc is not None:
                exc = child.exc.func if isinstance(child.exc, ast.Call) else child.exc
                name = exc.attr if isinstance(exc, ast.Attribute) else getattr(exc, "id", "")
                if name and name != "NotImplementedError":
                    found.append(name)
            visit(child)

    visit(root)
    return found


def _resolve(path: str) -> object:
    parts = path.split(".")
    for i in range(len(parts), 0, -1):
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = inspect.getattr_static(obj, attr) if inspect.isclass(obj) else getattr(obj, attr)
        return obj
    raise ImportError(path)


def test_the_public_api_is_found() -> None:
    assert len(PUBLIC) > 150
    assert "projloss.sets.Birkhoff" in PUBLIC
    assert any(p.endswith("ConvexSet.project") for p in PUBLIC)  # inherited, on its base
    assert "projloss.estimators._base.ProjectionEstimatorBase.fit" in PUBLIC


@pytest.mark.parametrize("path", PUBLIC)
def test_numpydoc_sections(path: str) -> None:
    result = numpydoc_validate.validate(path)
    obj = _resolve(path)
    errors = [f"{code} ({CHECKS[code]}): {msg}" for code, msg in result["errors"] if code in CHECKS]
    raised = sorted(set(_raises_in_body(obj))) if not inspect.isclass(obj) else []
    if raised:
        doc = inspect.getdoc(obj.fget if isinstance(obj, property) else obj) or ""
        if "Raises\n------" not in doc:
            errors.append(
                f"Raises: the body raises {raised} but the docstring has no Raises section"
            )
    assert not errors, f"{path}:\n  " + "\n  ".join(errors)
