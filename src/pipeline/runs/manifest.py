"""The results of one experiment that the report reads, as a manifest of their contents:
the dependencies of the report stage.

The report of an experiment list (``python -m pipeline.report``, the DVC stage ``report``)
reads the outputs of the list's experiments: ``data/eval/<key>/``,
``data/tuning/<key>.json`` and ``models/<key>/`` (:func:`outputs`). Its DVC dependencies
must be exactly those: a dependency on the whole ``data/eval`` (DVC hashes a directory
whole) also covers another list's outputs, e.g. the seeds of ``make repro-repeated``, so
that running that list changes the report's lock entry and a clone restored by ``dvc
pull`` (the paper's outputs only) sees the report as changed. DVC cannot take a list of
dependencies from ``params.yaml`` (DVC 3: ``deps: ${list}`` fails the schema check of
``dvc.yaml``; ``- ${list}`` "cannot interpolate data of type 'list'"), so the evaluate
stage ``evaluate@<key>``, the last of the experiment's stages, ends by writing
:func:`manifest` -- a SHA-256 digest of each of them -- to
``<report.dir>/inputs/<key>.json`` (:func:`manifest_path`, :func:`write`; an output of
that stage in ``dvc.yaml``: no stage, no process of its own); the report stage depends on
``<report.dir>/inputs/``: one file per experiment of its list, changed exactly when that
experiment's outputs change. Each list has its own report directory (``paper-repeated``
too: its seeds' manifests never land in the paper's ``reports/inputs/``).

The outputs are a function of the code and the data (no MLflow run id, no timing:
:mod:`pipeline.runs.index`), so the manifests are too: a ``dvc repro`` on a fresh clone
writes the committed lock's hashes.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ..paths import EVAL_DIR, MODELS_DIR, TUNING_DIR

#: the folder of the manifests, in the list's report directory
INPUTS = "inputs"


def outputs(key: str) -> tuple[Path, ...]:
    """The outputs of experiment ``key`` that the report reads (relative to the project
    root): its evaluation folder, its tuning JSON, its models folder.

    Examples
    --------
    >>> [p.as_posix() for p in outputs("lr")]
    ['data/eval/lr', 'data/tuning/lr.json', 'models/lr']
    """
    return (EVAL_DIR / key, TUNING_DIR / f"{key}.json", MODELS_DIR / key)


def digest(path: Path) -> str:
    """SHA-256 of a file, or of a folder's files (their paths relative to it and their
    contents, in sorted order).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as tmp:
    ...     (Path(tmp) / "a.txt").write_text("x")
    ...     digest(Path(tmp)) == digest(Path(tmp))
    1
    True
    """
    total = hashlib.sha256()
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    for file in files:
        name = file.relative_to(path).as_posix() if path.is_dir() else ""
        content = hashlib.sha256(file.read_bytes()).hexdigest()
        total.update(f"{name}\0{content}\n".encode())
    return total.hexdigest()


def manifest(root: Path, key: str) -> dict[str, Any]:
    """The manifest of experiment ``key``'s outputs under the project ``root``: its key
    and the digest of each output (:func:`outputs`, :func:`digest`)."""
    from ..errors import DatasetError

    missing = [str(p) for p in outputs(key) if not (root / p).exists()]
    if missing:
        raise DatasetError(
            f"no {', '.join(missing)}: run the experiment's stages first (dvc repro evaluate@{key})"
        )
    return {"experiment": key, "outputs": {p.as_posix(): digest(root / p) for p in outputs(key)}}


def manifest_path(params: Mapping[str, Any], key: str) -> Path:
    """``<report.dir>/inputs/<key>.json`` (``report.dir`` of params.yaml)."""
    from ..paths import resolve

    return resolve((params.get("report") or {}).get("dir", "reports")) / INPUTS / f"{key}.json"


def write(params: Mapping[str, Any], key: str, root: Path | None = None) -> Path:
    """Write the manifest of experiment ``key`` of params.yaml to its list's report
    directory (the last step of ``evaluate@<key>``); ``root``: the project (default: the
    project root)."""
    from ..fileio import write_text
    from ..paths import project_root

    path = manifest_path(params, key)
    write_text(path, json.dumps(manifest(root or project_root(), key), indent=2) + "\n")
    return path
