"""Python API to prepared datasets, for the training stages and for users.

>>> from pipeline.data import load_prepared
>>> d = load_prepared("birds", drop_empty=True)      # doctest: +SKIP
>>> X_train, Y_train = d.train                        # doctest: +SKIP
>>> d.stats["knapsack"]["u"]                          # doctest: +SKIP

The dataset is fetched (a no-op when its raw files are present and verified; a local
``path:`` file that changed is copied again) and its prepared variant is rebuilt when it
is missing, was built from other raw files or settings, or is corrupted (the sha256 of
each prepared file is recorded at write): see :func:`pipeline.data.prepare.staleness`.
With ``prepare_missing=False`` such a variant is an error instead
(:class:`~pipeline.errors.PreparedDataError`, a :class:`FileNotFoundError`).
"""

from __future__ import annotations

import logging
import zipfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import PreparedDataError
from .fetch import Opener, fetch_dataset
from .prepare import prepare, raw_checksums, staleness
from .protocol import SPLITS, Variant, small_train_warning
from .registry import DatasetSpec, get_spec
from .settings import DataSettings, data_settings
from .storage import load_split, load_stats

log = logging.getLogger(__name__)
#: what reading a damaged .npz may raise
_DAMAGED = (zipfile.BadZipFile, ValueError, OSError, KeyError, EOFError)


@dataclass
class PreparedData:
    """A prepared dataset: ``(X, y)`` per split, the row ids, and the statistics.

    X is float64, dense or CSR; y is int64: permutations ``y[rank] = label`` (label
    ranking), classes 1..K (ordinal) or a 0/1 indicator matrix (multilabel).
    """

    name: str
    task: str
    variant: str
    directory: Path
    train: tuple[Any, np.ndarray]
    val: tuple[Any, np.ndarray]
    test: tuple[Any, np.ndarray]
    index: dict[str, np.ndarray]
    stats: dict[str, Any]

    @property
    def train_val(self) -> tuple[Any, np.ndarray]:
        """Train and validation stacked (the refit set of the protocol)."""
        import scipy.sparse as sp

        (Xa, ya), (Xb, yb) = self.train, self.val
        X = sp.vstack([Xa, Xb], format="csr") if sp.issparse(Xa) else np.vstack([Xa, Xb])
        return X, np.concatenate([ya, yb])


def load_prepared(
    dataset: str | Mapping[str, Any] | DatasetSpec,
    settings: DataSettings | Mapping[str, Any] | None = None,
    *,
    split: int | None = None,
    drop_empty: bool | None = None,
    seed: int | None = None,
    test_size: float | None = None,
    val_size: float | None = None,
    prepare_missing: bool = True,
    opener: Opener | None = None,
) -> PreparedData:
    """Load a prepared dataset, fetching and preprocessing it first when needed.

    ``dataset``: a registry name, or a dataset mapping (e.g. Hydra's ``cfg.dataset``).
    ``settings``: the data settings (:class:`~pipeline.data.settings.DataSettings`, as a
    :class:`~pipeline.config.run.RunConfig` carries them), or a stage config or its
    ``data`` node to validate into them (default ``conf/data/default.yaml``); the keyword
    options override them (``split`` is the ordinal split index).
    """
    overrides = {
        k: v
        for k, v in {
            "drop_empty": drop_empty,
            "seed": seed,
            "test_size": test_size,
            "val_size": val_size,
        }.items()
        if v is not None
    }
    if split is not None:
        overrides["ordinal_split"] = split
    settings = data_settings(settings, **overrides)
    spec = get_spec(dataset, settings.dataset_dirs)
    variant = Variant.of(spec, settings, split)
    directory = settings.prepared_dir / variant.dirname
    if prepare_missing:
        # Verifies the raw files (re-copies a changed path: file); quiet when already here.
        here = (settings.raw_dir / spec.name / "SHA256SUMS").is_file()
        fetch_dataset(spec, settings.replace(progress=False) if here else settings, opener)
        prepare(spec, settings, variant.split)  # rebuilds a stale or corrupted variant
    else:
        # The raw files are checked when they are here (a prepared-only copy is fine).
        here = (settings.raw_dir / spec.name / "SHA256SUMS").is_file()
        sums = raw_checksums(spec, settings, variant.split) if here else None
        reason = staleness(directory, variant, sums, spec)
        if reason is not None:
            what = "no prepared variant" if reason == "missing" else f"prepared variant {reason}"
            raise PreparedDataError(
                f"dataset {spec.name!r}: {what} in {directory}; run "
                f"`python -m pipeline.preprocess datasets={spec.name}`"
            )
    try:
        loaded = {s: load_split(directory / f"{s}.npz") for s in SPLITS}
    except _DAMAGED as exc:  # damaged after the check (e.g. concurrently): rebuild once
        if not prepare_missing:
            raise PreparedDataError(
                f"dataset {spec.name!r}: cannot read {directory} ({type(exc).__name__}); run "
                f"`python -m pipeline.preprocess datasets={spec.name} data.force=true`"
            ) from None
        log.warning("prepared %s unreadable (%s): rebuilding it", directory, type(exc).__name__)
        prepare(spec, settings.replace(force=True), variant.split)
        loaded = {s: load_split(directory / f"{s}.npz") for s in SPLITS}
    stats = load_stats(directory) or {}
    warning = small_train_warning(
        f"dataset {spec.name!r} ({directory})", {s: len(loaded[s][1]) for s in SPLITS}
    )
    if warning:
        log.warning("%s", warning)
    return PreparedData(
        name=spec.name,
        task=spec.task,
        variant=variant.dirname,
        directory=directory,
        train=loaded["train"][:2],
        val=loaded["val"][:2],
        test=loaded["test"][:2],
        index={s: loaded[s][2] for s in SPLITS},
        stats=stats,
    )
