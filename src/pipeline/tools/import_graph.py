"""``python -m pipeline.tools.import_graph``: the import graph of ``src/pipeline``.

Every ``import`` / ``from ... import`` of a ``pipeline`` module, at module level or inside
a function (a lazy import is still a dependency), read with :mod:`ast` (nothing is
imported). Prints one line per module, ``module -> imported modules``, then the cycles
(strongly connected components of more than one module, or a module importing itself),
the imports of a command module and the imports against the folder order; exits 1 when
there is any.

The folders are in one order (the rule of :mod:`pipeline`'s docstring, :data:`LAYERS`):
common -> data -> config -> runs -> cluster | report -> commands. A module imports the
modules of its own layer and of the layers before it, never one after it (a back-edge);
cluster and report share a rank and import neither each other. The commands
(``python -m pipeline.<command>``, :data:`COMMANDS`) are the top of the graph: no module
imports them. ``tests/pipeline/tools/test_import_graph.py`` keeps it so.
"""

from __future__ import annotations

import argparse
import ast
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path

#: the command modules: entry points only, imported by no other module of the package
COMMANDS = (
    "pipeline.fetch",
    "pipeline.params",
    "pipeline.preprocess",
    "pipeline.report.__main__",
    "pipeline.report.repeated",
    "pipeline.stage",
    "pipeline.train",
)
#: developer tools run as ``python -m pipeline.tools.<name>``: entry points themselves (e.g.
#: ``ui_screenshots`` drives ``pipeline.train``), so they may import a command
TOOLS = "pipeline.tools."
#: entry points started by a command, imported by none (``python -m pipeline.preload``
#: starts it): the commands' layer
SERVERS = ("pipeline.preload_server",)


#: the layers, lowest first: (name, rank); a module may import its own layer and lower ranks
LAYERS = (
    ("common", 0),
    ("data", 1),
    ("config", 2),
    ("runs", 3),
    ("cluster", 4),
    ("report", 4),
    ("commands", 5),
)
_RANK = dict(LAYERS)
#: :data:`LAYERS` in words
ORDER = "common -> data -> config -> runs -> cluster | report -> commands"


def layer(name: str) -> str:
    """The layer of module ``name``: its folder (``pipeline.runs.tune`` -> ``runs``); the
    commands (:data:`COMMANDS`, the developer tools :data:`TOOLS`, the preload server) ->
    ``commands``; every other top-level module (and the package itself) -> ``common``.

    >>> layer("pipeline.config.run"), layer("pipeline.errors"), layer("pipeline.train")
    ('config', 'common', 'commands')
    >>> layer("pipeline.report.__main__"), layer("pipeline.tools.import_graph")
    ('commands', 'commands')
    """
    if name in COMMANDS or name in SERVERS or name.startswith(TOOLS):
        return "commands"
    parts = name.split(".")
    if len(parts) > 2 or (len(parts) == 2 and parts[1] in _RANK):
        return parts[1] if parts[1] in _RANK else "common"
    return "common"


def back_edges(g: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, imported) for every import against the folder order (:data:`LAYERS`):
    of a higher layer, or between the two layers of one rank (cluster, report).

    >>> back_edges({"pipeline.data.api": {"pipeline.config.run", "pipeline.errors"}})
    [('pipeline.data.api', 'pipeline.config.run')]
    >>> back_edges({"pipeline.report.x": {"pipeline.cluster.y", "pipeline.runs.z"}})
    [('pipeline.report.x', 'pipeline.cluster.y')]
    """
    out = []
    for m, targets in g.items():
        lm = layer(m)
        for t in targets:
            lt = layer(t)
            if lt != lm and _RANK[lt] >= _RANK[lm]:
                out.append((m, t))
    return sorted(out)


def module_name(path: Path, src: Path) -> str:
    """``src/pipeline/data/api.py`` -> ``pipeline.data.api`` (a package: its name)."""
    parts = list(path.relative_to(src).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(package_dir: Path) -> dict[str, Path]:
    """Every module of the package under ``package_dir``, by dotted name."""
    src = package_dir.parent
    return {module_name(p, src): p for p in sorted(package_dir.rglob("*.py"))}


def imports(name: str, path: Path, known: Iterable[str]) -> set[str]:
    """The modules of ``known`` that module ``name`` (file ``path``) imports."""
    known = set(known)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    out: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*up, base] if base else up)
            # ``from pkg import sub``: the submodule when it is one, else the package
            targets = [
                f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names
            ]
        else:
            continue
        for target in targets:
            while target and target not in known:  # ``import a.b.c``: the deepest module
                target = target.rpartition(".")[0]
            if target and target != name:
                out.add(target)
    return out


def graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the package's modules it imports."""
    mods = modules(package_dir)
    return {name: imports(name, path, mods) for name, path in mods.items()}


def cycles(g: Mapping[str, set[str]]) -> list[list[str]]:
    """The import cycles of ``g``: its strongly connected components with more than one
    module (Tarjan's algorithm, iterative), each sorted; sorted.

    >>> cycles({"a": {"b"}, "b": {"a"}, "c": {"a"}})
    [['a', 'b']]
    >>> cycles({"a": {"b"}, "b": set()})
    []
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []
    counter = 0
    for root in sorted(g):
        if root in index:
            continue
        work = [(root, iter(sorted(g.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(g.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    m = stack.pop()
                    on_stack.discard(m)
                    component.append(m)
                    if m == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return sorted(out)


def command_imports(g: Mapping[str, set[str]]) -> list[tuple[str, str]]:
    """(importer, command) for every import of a command module by a library module (a
    developer tool, :data:`TOOLS`, is an entry point and may)."""
    return sorted(
        (m, t) for m, ts in g.items() for t in ts if t in COMMANDS and not m.startswith(TOOLS)
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipeline.tools.import_graph")
    parser.add_argument(
        "package",
        nargs="?",
        type=Path,
        default=Path(__file__).resolve().parents[1],
        help="default: pipeline",
    )
    args = parser.parse_args(argv)
    g = graph(args.package)
    short = lambda m: m.removeprefix("pipeline.") or m  # noqa: E731
    for name in sorted(g):
        print(f"{short(name)} -> {' '.join(sorted(short(t) for t in g[name]))}".rstrip())
    found, bad, back = cycles(g), command_imports(g), back_edges(g)
    for component in found:
        print(f"error: import cycle: {' <-> '.join(component)}", file=sys.stderr)
    for importer, command in bad:
        print(f"error: {importer} imports the command module {command}", file=sys.stderr)
    for importer, target in back:
        print(
            f"error: {importer} ({layer(importer)}) imports {target} ({layer(target)}): "
            f"against the folder order {ORDER}",
            file=sys.stderr,
        )
    if found or bad or back:
        sys.exit(1)
    print(f"{len(g)} modules, no import cycle, no import of a command module, the folders in order")


if __name__ == "__main__":
    main()
