"""Every mirrored dataset loads with the shapes of the mirror's README.md."""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

# From /work/shared/datasets/README.md (measured there by parsing the files):
# name: (samples, features, labels/classes)
LABEL_RANKING = {
    "authorship": (841, 70, 4),
    "glass": (214, 9, 6),
    "iris": (150, 4, 3),
    "vehicle": (846, 18, 4),
    "vowel": (528, 10, 11),
    "wine": (178, 13, 3),
}
# name: (samples, features, classes, train, test)
ORDINAL = {
    "automobile": (205, 71, 6, 153, 52),
    "balance-scale": (625, 4, 3, 468, 157),
    "car": (1728, 21, 4, 1296, 432),
    "contact-lenses": (24, 6, 3, 18, 6),
    "ERA": (1000, 4, 9, 750, 250),
    "ESL": (488, 4, 9, 366, 122),
    "eucalyptus": (736, 91, 5, 552, 184),
    "LEV": (1000, 4, 5, 750, 250),
    "newthyroid": (215, 5, 3, 161, 54),
    "pasture": (36, 25, 3, 27, 9),
    "squash-stored": (52, 51, 3, 39, 13),
    "squash-unstored": (52, 52, 3, 39, 13),
    "SWD": (1000, 10, 4, 750, 250),
    "tae": (151, 54, 3, 113, 38),
    "toy": (300, 2, 5, 225, 75),
    "winequality-red": (1599, 11, 6, 1199, 400),
}
# name: ({part: samples}, feature attributes, labels, label cardinality over all samples)
MULTILABEL = {
    "birds": ({"train": 322, "test": 323}, 260, 19, 1.01),
    "cal500": ({"all": 502}, 68, 174, 26.0),
    "emotions": ({"train": 391, "test": 202}, 72, 6, 1.87),
    "scene": ({"train": 1211, "test": 1196}, 294, 6, 1.07),
    "yeast": ({"train": 1500, "test": 917}, 103, 14, 4.24),
    "tmc2007_500": ({"train": 21519, "test": 7077}, 500, 22, 2.15),
}
OTHER_SPLITS = (1, 17, 29)


def test_every_mirrored_dataset_is_covered(registry) -> None:
    mirrored = {n for n, s in registry.items() if s.mirrored}
    assert mirrored == set(LABEL_RANKING) | set(ORDINAL) | set(MULTILABEL)


@pytest.mark.parametrize("name", sorted(LABEL_RANKING))
def test_label_ranking_shapes(load, name: str) -> None:
    n, d, k = LABEL_RANKING[name]
    raw = load(name)
    X, y = raw.parts["all"]
    assert X.shape == (n, d) and X.dtype == np.float64
    assert y.shape == (n, k) and raw.n_classes == k
    # every row is a permutation of 0..k-1
    np.testing.assert_array_equal(np.sort(y, axis=1), np.broadcast_to(np.arange(k), y.shape))


@pytest.mark.parametrize("name", sorted(ORDINAL))
def test_ordinal_shapes(load, name: str) -> None:
    n, d, k, n_train, n_test = ORDINAL[name]
    full = None
    for split in (0, *OTHER_SPLITS):
        raw = load(name, split)
        (Xa, ya), (Xb, yb) = raw.parts["train"], raw.parts["test"]
        assert Xa.shape == (n_train, d) and Xb.shape == (n_test, d)
        assert raw.n_classes == k
        y = np.concatenate([ya, yb])
        assert y.min() >= 1 and y.max() == k
        rows = np.column_stack([np.vstack([Xa, Xb]), y])
        rows = rows[np.lexsort(rows.T[::-1])]
        if full is None:
            full = rows
        else:  # train ∪ test is the same dataset for every split
            np.testing.assert_array_equal(rows, full)
    assert full is not None and len(full) == n


@pytest.mark.parametrize("name", sorted(MULTILABEL))
def test_multilabel_shapes(load, name: str) -> None:
    sizes, n_attr, n_labels, card = MULTILABEL[name]
    raw = load(name)
    assert {p: len(v[1]) for p, v in raw.parts.items()} == sizes
    assert raw.meta.get("n_attributes", raw.n_features) == n_attr
    assert raw.n_classes == n_labels
    Ys = [Y for _, Y in raw.parts.values()]
    assert all(Y.shape[1] == n_labels and set(np.unique(Y)) <= {0, 1} for Y in Ys)
    assert np.concatenate(Ys).sum(axis=1).mean() == pytest.approx(card, abs=0.05)  # README rounds
    widths = {X.shape[1] for X, _ in raw.parts.values()}
    assert len(widths) == 1


def test_birds_nominal_features_one_hot(load) -> None:
    raw = load("birds")
    X, _ = raw.parts["train"]
    # 258 numeric + hasSegments {0,1} as one column + location's 12 categories one-hot
    assert X.shape[1] == 258 + 1 + 12
    names = raw.meta["feature_names"]
    loc = [i for i, f in enumerate(names) if f.startswith("location=")]
    assert len(loc) == 12
    Xall = np.vstack([Xp for Xp, _ in raw.parts.values()])
    np.testing.assert_array_equal(Xall[:, loc].sum(axis=1), 1.0)


def test_sparse_stays_sparse(load) -> None:
    X, _ = load("tmc2007_500").parts["train"]
    assert sp.issparse(X)
    assert set(np.unique(X.data)) == {1.0}  # binary word features
    assert X.nnz < 0.1 * X.shape[0] * X.shape[1]


@pytest.mark.parametrize("name", ["scene", "yeast"])
def test_dense_libsvm_stored_dense(load, name: str) -> None:
    X, _ = load(name).parts["train"]
    assert isinstance(X, np.ndarray)
