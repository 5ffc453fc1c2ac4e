"""Every writer of the pipeline writes through :mod:`pipeline.fileio` (issue 36, item 2).

``fileio`` turns a full, read-only or unwritable disk into one :class:`DiskError` line
naming the path and the free space, and writes atomically (its tests and the stage-level
ones in ``test_disk.py``: preprocess, fetch, evaluate, MLflow artifacts). What keeps that
true for *every* writer -- fetch, prepare, the tune/refit/evaluate outputs, the reports,
MLflow artifacts -- is that none of them writes a file another way: this test reads the
source of ``src/pipeline`` and fails on a write call (``open(..., "w")``, ``write_text``,
``savefig``, ``np.save*``, ``mkdir``, ``shutil.copy*``) that is neither inside a
``with`` of ``fileio.atomic_path`` / ``atomic_open`` / ``writing`` nor in the list below
of writes that are not outputs (each with its reason).
"""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[2] / "src" / "pipeline"

#: calls that write or create files
WRITE_ATTRS = {"write_text", "write_bytes", "savefig", "savez", "savez_compressed", "save",
               "copytree", "copy", "copy2", "copyfile", "mkdir", "makedirs", "dump"}  # fmt: skip
#: the fileio context managers under which a write is converted and atomic
FILEIO_CONTEXTS = {"atomic_path", "atomic_open", "writing"}
#: (file, call) -> why it may write outside fileio
ALLOWED = {
    ("fileio.py", "*"): "the writer itself",
    ("preload_server.py", "open"): "its private socket directory's ready file (not an output)",
    ("sweep_stop.py", "mkdir"): "the sweep's stop records, a courtesy (errors suppressed)",
    ("sweep_stop.py", "write_text"): "the sweep's stop record, written by the signal handler",
    ("runs/store.py", "mkdir"): "the SQLite store's directory: a store fault is a "
    "TrackingError line of its own (test_tracking.py)",
    ("runs/store.py", "open"): "the store's lock file (fcntl.flock), not an output",
    ("runs/model_packaging.py", "copytree"): "MLflow's temporary model directory, under writing()",
    ("runs/model_packaging.py", "open"): "the MLmodel of MLflow's temporary model directory",
    ("runs/figures.py", "savefig"): "into an in-memory buffer (io.BytesIO)",
    ("cluster/services.py", "mkdir"): "the log of a service the tests / users start",
    ("cluster/services.py", "open"): "the log of a service the tests / users start",
    ("tools/ui_screenshots.py", "mkdir"): "a developer tool (make ui-screenshots)",
    ("tools/gen_registry.py", "mkdir"): "a developer tool (regenerates conf/dataset)",
    ("tools/gen_registry.py", "write_text"): "a developer tool (regenerates conf/dataset)",
}


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return None


def _is_write_open(call: ast.Call) -> bool:
    mode = call.args[1] if len(call.args) > 1 else None
    for kw in call.keywords:
        if kw.arg == "mode":
            mode = kw.value
    return (
        isinstance(mode, ast.Constant)
        and isinstance(mode.value, str)
        and any(c in mode.value for c in "wax+")
    )


def _unguarded_writes(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    parents: dict[ast.AST, ast.AST] = {}
    for node in ast.walk(tree):
        for child in ast.iter_child_nodes(node):
            parents[child] = node

    def guarded(node: ast.AST) -> bool:
        while node in parents:
            node = parents[node]
            if isinstance(node, ast.With):
                for item in node.items:
                    ctx = item.context_expr
                    if isinstance(ctx, ast.Call) and _name(ctx.func) in FILEIO_CONTEXTS:
                        return True
        return False

    found = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        name = _name(node.func)
        writes = (name == "open" and _is_write_open(node)) or (
            name in WRITE_ATTRS and isinstance(node.func, ast.Attribute)
        )
        if name == "dump" and not (
            isinstance(node.func, ast.Attribute) and _name(node.func.value) in ("json", "pickle")
        ):
            writes = False  # yaml.dump(...) to a string, not a file
        if name in ("copytree", "copy", "copy2", "copyfile") and (
            _name(getattr(node.func, "value", None)) != "shutil"
        ):
            writes = False  # an array's .copy(), not shutil's
        if name == "save" and _name(getattr(node.func, "value", None)) != "np":
            writes = False  # e.g. an object's own save() into a path fileio gave it
        if writes and not guarded(node):
            found.append((node.lineno, name))
    return found


def test_every_writer_goes_through_fileio() -> None:
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        rel = path.relative_to(SRC).as_posix()
        if (rel, "*") in ALLOWED:
            continue
        for line, name in _unguarded_writes(path):
            if (rel, name) not in ALLOWED:
                offenders.append(f"src/pipeline/{rel}:{line}: {name}(...)")
    assert not offenders, (
        "writes outside pipeline.fileio (a full disk would be a traceback, a kill half a "
        "file): " + "; ".join(offenders)
    )


def test_the_check_finds_a_raw_write(tmp_path: Path) -> None:
    module = tmp_path / "m.py"
    module.write_text(
        "import json\n"
        "from pathlib import Path\n"
        "from pipeline.fileio import atomic_path\n"
        "def ok(p):\n"
        "    with atomic_path(p) as tmp, open(tmp, 'w') as f:\n"
        "        json.dump({}, f)\n"
        "def bad(p):\n"
        "    Path(p).write_text('x')\n"
        "    with open(p, 'a') as f:\n"
        "        f.write('y')\n"
    )
    assert _unguarded_writes(module) == [(8, "write_text"), (9, "open")]
