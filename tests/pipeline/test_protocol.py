"""The paper's protocol: splits, seed, validation fraction, scaler fitted without test."""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import scipy.sparse as sp
from sklearn.model_selection import train_test_split

from pipeline.data.protocol import Variant, apply_protocol, knapsack_upper, split_indices, stacked
from pipeline.data.registry import get_spec

CASES = [  # (dataset, drop_empty)
    ("iris", False),  # no own split: 80/20
    ("cal500", False),  # no own split, multilabel
    ("ERA", False),  # orreview split 0
    ("birds", False),  # own split
    ("birds", True),  # own split, samples without labels dropped
    ("tmc2007_500", False),  # sparse
]


def _variant(raw_all, name: str, **changes) -> tuple:
    spec = get_spec(name, raw_all.dataset_dirs)
    split = changes.pop("split", None)
    return spec, Variant.of(spec, raw_all.replace(**changes), split)


@pytest.mark.parametrize(("name", "drop"), CASES)
def test_split_partition_and_sizes(raw_all, load, name: str, drop: bool) -> None:
    spec, variant = _variant(raw_all, name, drop_empty=drop)
    raw = load(name)
    idx = split_indices(raw, variant)
    _, y = stacked(raw)
    kept = np.arange(len(y))
    if drop:
        kept = kept[y.sum(axis=1) > 0]
    all_ids = np.concatenate([idx["train"], idx["val"], idx["test"]])
    assert len(np.unique(all_ids)) == len(all_ids)  # disjoint: no test sample in train/val
    np.testing.assert_array_equal(np.sort(all_ids), kept)
    if spec.has_split:  # the dataset's own test part, exactly
        n_train_part = len(raw.parts["train"][1])
        np.testing.assert_array_equal(np.sort(idx["test"]), kept[kept >= n_train_part])
    else:  # 20% (scikit-learn rounds the test size up)
        assert len(idx["test"]) == math.ceil(0.2 * len(kept))
    n_rest = len(idx["train"]) + len(idx["val"])
    assert len(idx["val"]) == math.ceil(0.25 * n_rest)


@pytest.mark.parametrize("name", ["iris", "ERA"])
def test_seed_honoured(raw_all, load, name: str) -> None:
    """The splits are those of train_test_split(random_state=seed) on the raw arrays."""
    raw = load(name)
    X, _ = stacked(raw)
    for seed in (0, 7):
        _, variant = _variant(raw_all, name, seed=seed)
        idx = split_indices(raw, variant)
        if "all" in raw.parts:
            X_rest, X_test = train_test_split(X, test_size=0.2, random_state=seed)
        else:
            X_rest, X_test = raw.parts["train"][0], raw.parts["test"][0]
        X_train, X_val = train_test_split(X_rest, test_size=0.25, random_state=seed)
        np.testing.assert_array_equal(X[idx["train"]], X_train)
        np.testing.assert_array_equal(X[idx["val"]], X_val)
        np.testing.assert_array_equal(X[idx["test"]], X_test)
    a = split_indices(raw, _variant(raw_all, name, seed=0)[1])
    b = split_indices(raw, _variant(raw_all, name, seed=1)[1])
    assert not np.array_equal(a["train"], b["train"])


@pytest.mark.parametrize("drop", [False, True])
def test_reseeded_own_split_resamples_the_test_part(raw_all, load, drop: bool) -> None:
    """A multilabel dataset with its own split: seed 0 keeps the shipped test part, a seed
    s >= 1 draws a test part of the shipped size from the pooled rows with that seed."""
    raw = load("birds")
    _, y = stacked(raw)
    kept = np.arange(len(y))
    if drop:
        kept = kept[y.sum(axis=1) > 0]
    shipped = split_indices(raw, _variant(raw_all, "birds", drop_empty=drop)[1])
    tests = []
    for seed in (1, 2):
        idx = split_indices(raw, _variant(raw_all, "birds", drop_empty=drop, seed=seed)[1])
        all_ids = np.concatenate([idx["train"], idx["val"], idx["test"]])
        np.testing.assert_array_equal(np.sort(all_ids), kept)  # a partition of the pool
        assert len(idx["test"]) == len(shipped["test"])  # the paper's sizes
        assert len(idx["val"]) == len(shipped["val"])
        _, test = train_test_split(kept, test_size=len(shipped["test"]), random_state=seed)
        np.testing.assert_array_equal(idx["test"], test)
        # the test sample changes: some shipped training rows are now tested
        assert len(np.setdiff1d(idx["test"], shipped["test"])) > 0
        tests.append(idx["test"])
    assert not np.array_equal(np.sort(tests[0]), np.sort(tests[1]))


@pytest.mark.parametrize("val_size", [0.25, 0.4])
def test_validation_fraction(raw_all, load, val_size: float) -> None:
    raw = load("car")
    _, variant = _variant(raw_all, "car", val_size=val_size)
    idx = split_indices(raw, variant)
    assert len(idx["val"]) == math.ceil(val_size * len(raw.parts["train"][1]))


@pytest.mark.parametrize("name", ["iris", "birds", "tmc2007_500"])
def test_scaler_fitted_on_train_and_val_only(raw_all, load, name: str) -> None:
    raw = load(name)
    _, variant = _variant(raw_all, name)
    out, scaler = apply_protocol(raw, variant)
    X, _ = stacked(raw)
    fit = np.concatenate([out["train"][2], out["val"][2]])
    Xf = X[fit].toarray() if sp.issparse(X) else X[fit]
    std = Xf.std(axis=0)
    np.testing.assert_allclose(scaler.scale_, np.where(std > 0, std, 1.0), rtol=1e-10)
    if sp.issparse(X):
        assert scaler.mean_ is None or not scaler.with_mean
    else:
        np.testing.assert_allclose(scaler.mean_, Xf.mean(axis=0), rtol=1e-10, atol=1e-12)
    # Leak check: changing every test row changes neither the scaler nor train/val.
    shifted = copy.deepcopy(raw)
    test_ids = out["test"][2]
    offsets = np.cumsum([0] + [len(v[1]) for v in raw.parts.values()])
    for (part, (Xp, yp)), start in zip(raw.parts.items(), offsets, strict=False):
        is_test = np.isin(np.arange(start, start + len(yp)), test_ids)
        factor = np.where(is_test, 1e3, 1.0)
        if sp.issparse(Xp):
            Xp = sp.csr_matrix(sp.diags(factor) @ Xp)
        else:
            Xp = Xp * factor[:, None] + 5.0 * is_test[:, None]
        shifted.parts[part] = (Xp, yp)
    out2, scaler2 = apply_protocol(shifted, variant)
    np.testing.assert_array_equal(scaler2.scale_, scaler.scale_)
    for s in ("train", "val"):
        a, b = out[s][0], out2[s][0]
        a, b = (a.toarray(), b.toarray()) if sp.issparse(a) else (a, b)
        np.testing.assert_array_equal(a, b)


def test_dense_standardized_train_val(raw_all, load) -> None:
    out, _ = apply_protocol(load("vehicle"), _variant(raw_all, "vehicle")[1])
    Z = np.vstack([out["train"][0], out["val"][0]])
    np.testing.assert_allclose(Z.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(Z.std(axis=0), 1.0, rtol=1e-12)


def test_sparse_stays_sparse(raw_all, load) -> None:
    raw = load("tmc2007_500")
    out, scaler = apply_protocol(raw, _variant(raw_all, "tmc2007_500")[1])
    X, _ = stacked(raw)
    for Xs, _, ids in out.values():
        assert sp.isspmatrix_csr(Xs) and Xs.dtype == np.float64
        assert Xs.nnz == X[ids].nnz  # no centering: the zero pattern is kept
        np.testing.assert_allclose((Xs.multiply(scaler.scale_)).toarray(), X[ids].toarray())


def test_drop_empty_birds(raw_all, load) -> None:
    raw = load("birds")
    _, y = stacked(raw)
    out, _ = apply_protocol(raw, _variant(raw_all, "birds", drop_empty=True)[1])
    for _, Y, _ in out.values():
        assert (Y.sum(axis=1) > 0).all()
    assert sum(len(v[1]) for v in out.values()) == int((y.sum(axis=1) > 0).sum())


def test_variant_names(raw_all) -> None:
    def name(ds: str, **kw) -> str:
        return _variant(raw_all, ds, **kw)[1].dirname

    assert name("ERA") == "ERA"
    assert name("ERA", split=3) == "ERA+split3"
    assert name("birds", drop_empty=True) == "birds+drop_empty"
    assert name("iris", drop_empty=True) == "iris"  # multilabel-only option
    assert name("iris", seed=2, test_size=0.3, val_size=0.2) == "iris+seed2+test0.3+val0.2"
    assert name("birds", test_size=0.3) == "birds"  # own split: test_size unused
    with pytest.raises(ValueError, match="0..29"):
        name("ERA", split=30)


@pytest.mark.parametrize("seed", range(5))
def test_knapsack_upper_bound(seed: int) -> None:
    rng = np.random.default_rng(seed)
    Y = (rng.random((50, 8)) < rng.random()).astype(int)
    sizes = Y.sum(axis=1)
    expected = math.ceil(np.mean(sizes) + math.sqrt(np.mean((sizes - np.mean(sizes)) ** 2)))
    assert knapsack_upper(Y) == expected


def test_knapsack_upper_exact_integer() -> None:
    assert knapsack_upper(np.ones((4, 3))) == 3  # E|Y| = 3, Var = 0: not 4
    assert knapsack_upper(np.array([[1, 0], [1, 1]])) == 2  # 1.5 + 0.5


def test_paper_cal500_row_explained(load, registry) -> None:
    """The note in conf/dataset/cal500.yaml: the paper's cal500 train/dev row is a 75/25
    split of all 502 samples (test samples included)."""
    _, Y = stacked(load("cal500"))
    train, dev = train_test_split(np.arange(len(Y)), test_size=0.25, random_state=0)
    paper = registry["cal500"].paper
    assert (len(train), len(dev)) == (paper["train"], paper["dev"])
    assert round(Y[train].sum(axis=1).mean(), 2) == paper["avg_labels"]
