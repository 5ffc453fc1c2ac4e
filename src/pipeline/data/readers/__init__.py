"""Readers of the upstream formats, and :func:`load_raw` which reads a fetched dataset.

Each reader module has ``read(paths, **options) -> (parts, meta)``: it reads the files
together (they share labels and features) and returns one ``(X, y)`` per file plus
metadata with at least ``n_classes``.  X is float64, dense or CSR; y is encoded for the
task: label ranking int64 permutations ``y[rank] = label``; ordinal int64 classes 1..K;
multilabel a 0/1 indicator matrix.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import scipy.sparse as sp

from ...errors import DataFormatError, MissingRawDataError, RegistryError
from ..registry import DatasetSpec

#: options that name a file of the dataset (resolved in its raw directory)
FILE_OPTIONS = {"labels_xml"}
#: formats whose attributes have names, so that the option ``drop: [name, ...]`` applies
NAMED_FORMATS = ("label_ranking", "mulan_arff")


def _reader(fmt: str) -> Callable[..., Any]:
    # Imported lazily: liac-arff is only needed for ARFF datasets.
    if fmt == "label_ranking":
        from . import label_ranking as mod
    elif fmt == "orreview":
        from . import orreview as mod
    elif fmt == "mulan_arff":
        from . import mulan_arff as mod
    elif fmt == "libsvm":
        from . import libsvm as mod
    else:
        raise ValueError(f"unknown format {fmt!r}")
    return mod.read


@dataclass
class RawData:
    """A dataset as read from its raw files: ``parts`` maps ``train``/``test`` or ``all``
    to ``(X, y)``."""

    name: str
    task: str
    parts: dict[str, tuple[Any, np.ndarray]]
    n_classes: int
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def n_features(self) -> int:
        return int(next(iter(self.parts.values()))[0].shape[1])

    @property
    def sparse(self) -> bool:
        return sp.issparse(next(iter(self.parts.values()))[0])


def load_raw(spec: DatasetSpec, raw_dir: Path, split: int | None = None) -> RawData:
    """Read ``spec``'s files from ``raw_dir/<name>/`` (fetched beforehand).

    ``split`` selects one of the dataset's indexed train/test splits (ignored otherwise).
    X is converted to dense or CSR as the spec's ``sparse`` field asks.
    """
    base = Path(raw_dir) / spec.name
    files = spec.part_files(split if spec.n_splits else None)
    options = dict(spec.options)
    for key in FILE_OPTIONS & set(options):
        options[key] = base / options[key]
    needed = list(files.values()) + [options[k].name for k in FILE_OPTIONS & set(options)]
    missing = [f for f in needed if not (base / f).is_file()]
    if missing:
        raise MissingRawDataError(
            f"dataset {spec.name!r}: raw file(s) {missing} missing in {base}; "
            f"run `python -m pipeline.fetch datasets={spec.name}` first"
        )
    if "drop" in options and spec.format not in NAMED_FORMATS:
        raise RegistryError(
            f"dataset {spec.name!r} ({spec.source or 'its YAML'}): the option drop needs named "
            f"attributes, which the {spec.format} format has not; remove the option (formats "
            f"with names: {', '.join(NAMED_FORMATS)})"
        )
    read = _reader(spec.format)
    try:
        arrays, meta = read([base / f for f in files.values()], **options)
    except TypeError as exc:
        raise RegistryError(
            f"dataset {spec.name!r} ({spec.source or 'its YAML'}): bad reader options "
            f"{spec.options}: {exc}; see docs/guide/datasets.md, 'Adding a dataset'"
        ) from None
    except DataFormatError as exc:
        raise exc.with_dataset(spec.name) from None
    except ValueError as exc:  # a parser's own error (sklearn, numpy): still one line
        raise DataFormatError(
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
            ", ".join(str(base / f) for f in files.values()),
            None,
            "check the file against its format (docs/guide/datasets.md, 'Adding a dataset')",
            spec.name,
        ) from None
    parts = {}
    for part, (X, y) in zip(files, arrays, strict=True):
        if spec.sparse is True:
            X = sp.csr_matrix(X, dtype=np.float64)
        elif spec.sparse is False and sp.issparse(X):
            X = np.asarray(X.toarray(), dtype=np.float64)
        parts[part] = (X, y)
    return RawData(
        name=spec.name,
        task=spec.task,
        parts=parts,
        n_classes=int(meta.pop("n_classes")),
        meta={"files": files, **meta},
    )
