"""The paper's experimental protocol (GUIDE §3) as pure functions on arrays.

- Test set: the dataset's own test part when it ships a train/test split (one of the 30
  orreview splits for ordinal data, ``split``), otherwise a random ``test_size`` = 20%.
  Beyond the paper (repeated splits): a dataset with its own test part and no indexed
  splits (the multilabel ones), with a ``seed`` other than the default 0, pools its parts
  and draws a test part of the shipped size with that seed; seed 0 is the shipped split.
- Validation set: a random ``val_size`` = 25% of the remaining training part.
- Both draws use :func:`sklearn.model_selection.train_test_split` with
  ``random_state=seed`` (0 by default), without stratification.
- Multilabel option ``drop_empty``: samples without any label are removed from every part
  before splitting (the paper's Table 5 counts for birds match this setting).
- Standardization (:class:`sklearn.preprocessing.StandardScaler`) fitted on train ∪
  validation -- the paper's "training set", everything but the test set -- and applied to
  all three parts; for sparse X without centering (``with_mean=False``) so it stays
  sparse.

Sample identity: rows are numbered by concatenating the raw parts in order (``train``
then ``test``, or ``all``); every prepared split keeps these ids (``index``) so that
tests and users can trace each prepared row back to its raw row.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import scipy.sparse as sp
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from ..errors import DataFormatError
from .readers import RawData
from .registry import DatasetSpec
from .settings import PROTOCOL_DEFAULTS, DataSettings

SPLITS = ("train", "val", "test")
#: a train split with fewer rows than this gets a warning (:func:`small_train_warning`):
#: below every dataset of the paper (the smallest, contact-lenses, trains on 13 rows), so
#: the paper's runs never warn, while a toy file of a few rows does -- under ten rows
#: the fit, the StandardScaler's statistics and the lambda chosen on a validation split
#: of two or three rows say little.
MIN_TRAIN_ROWS = 10


@dataclass(frozen=True)
class Variant:
    """The options that change a prepared dataset, with the name of its directory."""

    dataset: str
    split: int | None  # orreview split index (None: the dataset has no indexed splits)
    drop_empty: bool  # multilabel only
    seed: int
    test_size: float | None  # None: the dataset's own test part is used
    val_size: float

    @classmethod
    def of(cls, spec: DatasetSpec, settings: DataSettings, split: int | None = None) -> Variant:
        """The variant of ``spec`` that ``settings`` asks for (``split`` overrides it)."""
        if spec.n_splits is None:
            split = None
        else:
            if split is None:
                if not isinstance(settings.ordinal_split, int):
                    raise ValueError(
                        f"dataset {spec.name!r}: one split index is needed here, got "
                        f"ordinal_split={settings.ordinal_split!r}"
                    )
                split = settings.ordinal_split
            spec.part_files(split)  # validates the range
        return cls(
            dataset=spec.name,
            split=split,
            drop_empty=settings.drop_empty if spec.task == "multilabel" else False,
            seed=settings.seed,
            test_size=None if spec.has_split else settings.test_size,
            val_size=settings.val_size,
        )

    @property
    def suffix(self) -> str:
        """``""`` for the paper's defaults, else ``+split3+drop_empty+seed1...``."""
        d = PROTOCOL_DEFAULTS
        out = ""
        if self.split is not None and self.split != d["ordinal_split"]:
            out += f"+split{self.split}"
        if self.drop_empty:
            out += "+drop_empty"
        if self.seed != d["seed"]:
            out += f"+seed{self.seed}"
        if self.test_size is not None and self.test_size != d["test_size"]:
            out += f"+test{self.test_size:g}"
        if self.val_size != d["val_size"]:
            out += f"+val{self.val_size:g}"
        return out

    @property
    def dirname(self) -> str:
        """Directory name under ``data/prepared/``."""
        return self.dataset + self.suffix

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def row_offsets(raw: RawData) -> dict[str, np.ndarray]:
    """Global row ids of each raw part (parts concatenated in order)."""
    out, start = {}, 0
    for part, (_, y) in raw.parts.items():
        out[part] = np.arange(start, start + len(y))
        start += len(y)
    return out


def nonempty(y: np.ndarray) -> np.ndarray:
    """Mask of multilabel rows with at least one label."""
    return np.asarray(y).reshape(len(y), -1).sum(axis=1) > 0


def _held_out(n: int, fraction: float) -> int:
    """The rows :func:`train_test_split` holds out of ``n`` for a ``fraction`` (its ceil,
    computed as scikit-learn does)."""
    return math.ceil(fraction * n)


def _split_rows(n: int, test: float | None, val: float) -> tuple[int, ...]:
    """The row counts of the protocol's splits on ``n`` rows: (train, val, test) with a
    ``test`` fraction, (train, val) without (the train part of a shipped split)."""
    n_test = 0 if test is None else _held_out(n, test)
    n_val = _held_out(max(n - n_test, 0), val)
    return (n - n_test - n_val, n_val) + (() if test is None else (n_test,))


def _min_rows(test: float | None, val: float) -> int:
    """The fewest rows that give every split at least one row."""
    return next(n for n in range(1, 100_000) if min(_split_rows(n, test, val)) >= 1)


def check_rows(raw: RawData, variant: Variant, ids: dict[str, np.ndarray]) -> None:
    """Refuse a dataset too small for the protocol (a split would be empty; scikit-learn
    would stop with a traceback): one line with the dataset, its row count, the minimum
    and the remedy (:class:`~pipeline.errors.DataFormatError`)."""
    dropped = " with a label (data.drop_empty=true)" if variant.drop_empty else ""
    remedy = "add rows to its file(s), or use another dataset"
    if "all" in ids:
        n = len(ids["all"])
        test_size = variant.test_size if variant.test_size is not None else 0.2
        need = _min_rows(test_size, variant.val_size)
        if n < need:
            raise DataFormatError(
                f"too few rows for the protocol: {n} row(s){dropped}, at least {need} needed "
                f"(one each for train, validation and test with data.test_size={test_size:g}, "
                f"data.val_size={variant.val_size:g})",
                remedy=remedy,
                dataset=raw.name,
            )
        return
    n_train, n_test = len(ids["train"]), len(ids["test"])
    need = _min_rows(None, variant.val_size)  # the train part: train and validation
    if n_train < need or n_test < 1:
        raise DataFormatError(
            f"too few rows for the protocol: {n_train} row(s){dropped} in the train part "
            f"(at least {need} needed: one each for train and validation with "
            f"data.val_size={variant.val_size:g}) and {n_test} in the test part (at least 1)",
            remedy=remedy,
            dataset=raw.name,
        )


def small_train_warning(name: str, n: Mapping[str, int]) -> str | None:
    """The one-line warning for a train split under :data:`MIN_TRAIN_ROWS` rows (``n``:
    rows per split), else None."""
    if n["train"] >= MIN_TRAIN_ROWS:
        return None
    return (
        f"warning: {name}: the train split has only {n['train']} row(s) (validation "
        f"{n['val']}, test {n['test']}), fewer than {MIN_TRAIN_ROWS}: the fitted model and "
        "the lambda chosen on validation mean little; add rows to the dataset"
    )


def split_indices(raw: RawData, variant: Variant) -> dict[str, np.ndarray]:
    """Global row ids of the train, val and test splits (in train_test_split's order).
    A dataset too small for the protocol is refused (:func:`check_rows`)."""
    ids = row_offsets(raw)
    if variant.drop_empty:
        ids = {p: i[nonempty(raw.parts[p][1])] for p, i in ids.items()}
    check_rows(raw, variant, ids)
    if "all" in ids:
        if variant.test_size is None:
            raise ValueError(f"dataset {raw.name!r} has no own split: test_size is needed")
        train_full, test = train_test_split(
            ids["all"], test_size=variant.test_size, random_state=variant.seed
        )
    elif variant.split is None and variant.seed != PROTOCOL_DEFAULTS["seed"]:
        # Repeated splits of a dataset with its own test part (the multilabel ones): a seed
        # other than the paper's draws a new test part of the shipped size from the pooled
        # rows, so that the splits resample the test sample, not only the validation part.
        pooled = np.concatenate([ids["train"], ids["test"]])
        train_full, test = train_test_split(
            pooled, test_size=len(ids["test"]), random_state=variant.seed
        )
    else:
        train_full, test = ids["train"], ids["test"]
    train, val = train_test_split(train_full, test_size=variant.val_size, random_state=variant.seed)
    return {"train": np.asarray(train), "val": np.asarray(val), "test": np.asarray(test)}


def stacked(raw: RawData) -> tuple[Any, np.ndarray]:
    """X and y of all raw parts concatenated (row ids as in :func:`row_offsets`)."""
    Xs = [X for X, _ in raw.parts.values()]
    ys = [y for _, y in raw.parts.values()]
    X = sp.vstack(Xs, format="csr") if sp.issparse(Xs[0]) else np.concatenate(Xs, axis=0)
    return X, np.concatenate(ys, axis=0)


def fit_scaler(X_fit: Any) -> StandardScaler:
    """StandardScaler fitted on ``X_fit`` (without centering when sparse)."""
    return StandardScaler(with_mean=not sp.issparse(X_fit)).fit(X_fit)


def apply_protocol(
    raw: RawData, variant: Variant
) -> tuple[dict[str, tuple[Any, np.ndarray, np.ndarray]], StandardScaler]:
    """Split and standardize: ``{split: (X, y, ids)}`` and the fitted scaler."""
    idx = split_indices(raw, variant)
    X, y = stacked(raw)
    fit_rows = np.concatenate([idx["train"], idx["val"]])
    scaler = fit_scaler(X[fit_rows])
    out = {}
    for name in SPLITS:
        Xs = scaler.transform(X[idx[name]])
        if sp.issparse(Xs):
            Xs = sp.csr_matrix(Xs, dtype=np.float64)
            Xs.sort_indices()
        else:
            Xs = np.ascontiguousarray(Xs, dtype=np.float64)
        out[name] = (Xs, y[idx[name]], idx[name])
    return out, scaler


def knapsack_upper(Y: np.ndarray) -> int:
    """u = ceil(E|Y| + sqrt(Var|Y|)) over the rows of a 0/1 label matrix (paper §6)."""
    sizes = np.asarray(Y).sum(axis=1).astype(np.float64)
    if sizes.size == 0:
        raise ValueError("no samples to compute the knapsack bound")
    # round before ceil so that an exact integer computed with rounding error stays put
    return math.ceil(round(float(sizes.mean() + np.sqrt(sizes.var())), 9))
