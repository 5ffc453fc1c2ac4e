"""A fingerprint of the code that decides what MLflow shows, recorded beside the screenshots.

The screenshots of ``docs/ui/`` (``make ui-screenshots``,
:mod:`pipeline.tools.ui_screenshots`) show what the tracking code logs: run names, params,
metrics, tags, the dataset, the model, the artifacts and figures, the saved view. They
go stale when that code changes. :func:`record` writes ``docs/ui/FINGERPRINT`` when the
screenshots are taken: the SHA-256 of every file of :func:`tracked_files` and one digest
of them all; ``tests/pipeline/tools/test_ui_fingerprint.py`` fails, naming the changed
files and the remedy, when the code no longer matches it.

Which files: in ``src/pipeline/runs/``, every module whose name starts with one of
:data:`PREFIXES` (``tracking*.py``, ``mlflow_*.py``: the tracking modules, however they
are split, and a package of that name with its modules), every module that imports
``mlflow`` (a new module that logs to MLflow counts without being listed here), and the
modules of :data:`ALSO` (what tune and evaluate log, the figures logged as artifacts, the
screenshot tool's own runs and pages) -- a listed module that no longer exists is left
out, so renaming one is a change of the fingerprint, not an error.

Examples
--------
>>> files = tracked_files()
>>> "runs/tune.py" in files and all(f.endswith(".py") for f in files)
True
>>> len(fingerprint(files)["sha256"])
64
"""

from __future__ import annotations

import hashlib
import json
import re
from pathlib import Path

#: ``src/pipeline``: the paths below are relative to it
PACKAGE = Path(__file__).resolve().parents[1]
#: the folder of the tracking code
RUNS = "runs"
#: a module (or package) of ``runs/`` whose name starts with one of these is tracking code
PREFIXES = ("tracking", "mlflow_")
#: modules that decide what is logged without importing mlflow themselves
ALSO = (
    "runs/tune.py",  # the tune stage: parent and child runs, curves, params
    "runs/evaluate.py",  # the test metrics, predictions and figures of a run
    "runs/figures.py",  # the figures shown among the artifacts
    "tools/ui_screenshots.py",  # the runs of the demo store and the pages photographed
)
#: a module that imports mlflow (at the top or inside a function)
_IMPORTS_MLFLOW = re.compile(r"^\s*(?:import|from)\s+mlflow\b", re.M)
#: the file beside the screenshots
FILE_NAME = "FINGERPRINT"


def tracked_files(package: Path = PACKAGE) -> list[str]:
    """The modules that decide what MLflow shows, as paths relative to ``package``
    (``runs/tracking.py``), sorted."""
    runs = package / RUNS
    found: set[Path] = set()
    for path in runs.rglob("*.py"):
        top = path.relative_to(runs).parts[0]
        if top.startswith(PREFIXES) or _IMPORTS_MLFLOW.search(path.read_text(encoding="utf-8")):
            found.add(path)
    found.update(package / name for name in ALSO if (package / name).is_file())
    return sorted(p.relative_to(package).as_posix() for p in found)


def fingerprint(files: list[str] | None = None, package: Path = PACKAGE) -> dict:
    """``{"sha256": <digest of them all>, "files": {path: <its sha256>}}`` of ``files``
    (default: :func:`tracked_files`)."""
    files = tracked_files(package) if files is None else files
    each = {f: hashlib.sha256((package / f).read_bytes()).hexdigest() for f in files}
    whole = hashlib.sha256("".join(f"{h}  {f}\n" for f, h in sorted(each.items())).encode())
    return {"sha256": whole.hexdigest(), "files": each}


def record(out: Path) -> Path:
    """Write the fingerprint of the current code to ``out/FINGERPRINT`` (JSON)."""
    from ..fileio import make_dir, write_text

    path = make_dir(out) / FILE_NAME
    write_text(path, json.dumps(fingerprint(), indent=1, sort_keys=True) + "\n")
    return path


def changes(recorded: dict, current: dict) -> list[str]:
    """The files whose fingerprint differs: changed, added (``+``) or gone (``-``)."""
    old, new = recorded.get("files", {}), current["files"]
    return sorted(
        [f for f in new if f in old and old[f] != new[f]]
        + [f"+{f}" for f in new if f not in old]
        + [f"-{f}" for f in old if f not in new]
    )
