"""What differs from one run of the pipeline to the next, kept out of its outputs: the
MLflow run ids and the timings, in an uncommitted index beside them.

The DVC outputs of the experiment stages (``data/tuning/<key>.json``,
``models/<key>/<run>/refit.json``, ``data/eval/<key>/<run>/results.json``) and everything
built from them (``metrics/``, the report's tables, the manifests of
:mod:`pipeline.runs.manifest`) must be a function of the code and the data: then a
``dvc repro`` on a fresh clone writes the committed ``dvc.lock`` and report files again,
and a second one does nothing. A run id (new on every run) or a time (different on every
run) in them would change their hashes each time. So :func:`write_json` writes a record
without its per-run values (:data:`PER_RUN` keys, at any depth: :func:`split`) and puts
those in the index, ``data/runs/<the output's path>`` (:func:`index_path`; git-ignored,
not a DVC output), and :func:`read_json` merges them back (:func:`merge`) for the stages
that need them: the evaluate stage resumes the MLflow run that tune created (its
``run_id``) and logs the refit times, the report's ``runs.csv`` maps each table cell to
its MLflow run. An index entry records the digest of the output it belongs to and is used
only with that output: an output restored from DVC's cache (``dvc pull``, ``dvc
checkout``) of another run has no run ids and no times, never wrong ones. MLflow has them
all anyway (the runs' metrics ``fit_seconds``, ``tune_seconds``, ``refit_seconds``).

Examples
--------
>>> clean, per_run = split({"run_id": "ab", "tune": {"lambdas": [1.0], "seconds": 0.2}})
>>> clean, per_run
({'tune': {'lambdas': [1.0]}}, {'run_id': 'ab', 'tune': {'seconds': 0.2}})
>>> merge(clean, per_run) == {"run_id": "ab", "tune": {"lambdas": [1.0], "seconds": 0.2}}
True
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

#: the keys whose values differ per run (at any depth of a record)
PER_RUN = frozenset({"run_id", "seconds", "fit_seconds", "tune_seconds"})
#: the index, relative to the project root: it mirrors the outputs' paths
INDEX_DIR = Path("data/runs")


def split(record: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """``record`` without its :data:`PER_RUN` entries (at any depth of its mappings), and
    those entries in the same nesting."""
    clean: dict[str, Any] = {}
    per_run: dict[str, Any] = {}
    for key, value in record.items():
        if key in PER_RUN:
            per_run[key] = value
        elif isinstance(value, Mapping):
            clean[key], inner = split(value)
            if inner:
                per_run[key] = inner
        else:
            clean[key] = value
    return clean, per_run


def merge(clean: Mapping[str, Any], per_run: Mapping[str, Any]) -> dict[str, Any]:
    """The inverse of :func:`split`: ``clean`` with ``per_run``'s entries put back."""
    out = dict(clean)
    for key, value in per_run.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), Mapping):
            out[key] = merge(out[key], value)
        else:
            out[key] = value
    return out


def index_path(path: Path, root: Path | None = None) -> Path:
    """Where the per-run values of the output ``path`` go: ``<root>/data/runs/<path
    relative to the root>`` (``root``: the project, default its root; an output outside
    it: ``<its folder>/.runs/<its name>``).

    Examples
    --------
    >>> from pipeline.paths import project_root
    >>> index_path(project_root() / "data/tuning/lr.json").relative_to(project_root())
    PosixPath('data/runs/data/tuning/lr.json')
    """
    from ..paths import project_root

    path = Path(path).absolute()
    root = Path(root).absolute() if root is not None else project_root()
    try:
        return root / INDEX_DIR / path.relative_to(root)
    except ValueError:
        return path.parent / ".runs" / path.name


def write_json(path: Path, record: Mapping[str, Any], root: Path | None = None) -> None:
    """Write ``record`` to ``path`` without its per-run values, and those to the index
    of the project ``root`` (with the digest of what ``path`` now holds)."""
    from ..fileio import write_json as write

    clean, per_run = split(record)
    write(path, clean)
    index = index_path(path, root)
    if per_run:
        write(index, {"output": _digest(path), "per_run": per_run})
    elif index.is_file():
        index.unlink()


def read_json(path: Path, root: Path | None = None) -> dict[str, Any]:
    """The record at ``path`` with its per-run values from the index of the project
    ``root``, when the index entry belongs to what ``path`` holds (else without them)."""
    record = json.loads(Path(path).read_text(encoding="utf-8"))
    index = index_path(path, root)
    if not index.is_file():
        return record
    try:
        entry = json.loads(index.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return record
    if entry.get("output") != _digest(path):
        return record
    return merge(record, entry.get("per_run") or {})


def _digest(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()
