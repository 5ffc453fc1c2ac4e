"""Calibrated decoding equals the brute-force minimizer of the expected target loss.

For a distribution q over the label space and u = E_q[phi(Y)], the decoded output
MAP_D(-V u - b) must minimize sum_y q(y) L(yhat, y) over every output yhat of the decoding
set (enumerated from its vertices), with L the *direct* definition of the loss.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import make_set

from projloss.decoding import (
    calibrated_decode,
    calibrated_vertices,
    decode_scores,
    round_to_class,
)
from projloss.target_losses import (
    AbsoluteLoss,
    HammingLoss,
    LossMatrix,
    NDCGLoss,
    PrecisionAtKLoss,
    RankingHammingLoss,
    SpearmanLoss,
    ZeroOneLoss,
)


def perms(k):
    return np.array(list(itertools.permutations(range(k))))


def subsets(k):
    return np.array(list(itertools.product([0, 1], repeat=k)))


def perm_from_matrix(V):
    return np.argmax(V, axis=-1)


def perm_from_weights(V):
    # psi[label] = w[rank]: labels by decreasing weight (ties: any order, same loss)
    return np.argsort(-V, axis=-1, kind="stable")


def identity(V):
    return np.rint(V).astype(int)


def ordinal_from_cumulative(V):
    return np.rint(V).sum(axis=-1).astype(int) + 1


def class_from_onehot(V):
    return np.argmax(V, axis=-1)


def permutation_matrices(k):
    return np.eye(k)[perms(k)]


# (id, loss, decoding set name, set params, k, truths, phi(truths), vertex -> structure)
CASES = [
    ("hamming-cube", HammingLoss(), "unit_cube", {}, 3, subsets(3), None, identity),
    (
        "hamming-knapsack",
        HammingLoss(),
        "knapsack",
        {"lower": 1, "upper": 2},
        4,
        subsets(4),
        None,
        identity,
    ),
    (
        "hamming-matrix-cube",
        HammingLoss(event_ndim=2),
        "cube",
        {},
        2,
        permutation_matrices(2),
        None,
        identity,
    ),
    (
        "hamming-matrix-row_simplex",
        HammingLoss(event_ndim=2),
        "row_simplex",
        {},
        3,
        permutation_matrices(3),
        None,
        identity,
    ),
    (
        "hamming-matrix-birkhoff",
        HammingLoss(event_ndim=2),
        "birkhoff",
        {},
        4,
        permutation_matrices(4),
        None,
        identity,
    ),
    (
        "ranking-birkhoff",
        RankingHammingLoss(),
        "birkhoff",
        {},
        4,
        perms(4),
        None,
        perm_from_matrix,
    ),
    (
        "ranking-row_simplex",
        RankingHammingLoss(),
        "row_simplex",
        {},
        3,
        perms(3),
        None,
        perm_from_matrix,
    ),
    (
        "absolute-order_simplex",
        AbsoluteLoss(n_classes=6),
        "order_simplex",
        {},
        6,
        np.arange(1, 7),
        None,
        ordinal_from_cumulative,
    ),
    (
        "zero_one-simplex",
        ZeroOneLoss(n_classes=5),
        "simplex",
        {},
        5,
        np.arange(5),
        None,
        class_from_onehot,
    ),
    (
        "spearman-permutahedron",
        SpearmanLoss(),
        "permutahedron",
        {},
        4,
        perms(4),
        None,
        perm_from_weights,
    ),
]


def _extra_cases():
    rng = np.random.default_rng(0)
    M = rng.uniform(0, 1, size=(4, 3))  # 4 outputs, 3 labels
    w_ndcg = 1 / np.log2(np.arange(2, 6))
    rel = np.array(list(itertools.product(range(3), repeat=4)), dtype=float)
    return [
        (
            "loss_matrix-simplex",
            LossMatrix(M),
            "simplex",
            {},
            4,
            np.arange(3),
            None,
            class_from_onehot,
        ),
        (
            "ndcg-permutahedron",
            NDCGLoss(),
            "permutahedron",
            {"w": w_ndcg},
            4,
            rel,
            None,
            perm_from_weights,
        ),
        (
            "p@2-permutahedron",
            PrecisionAtKLoss(2),
            "permutahedron",
            {"w": np.array([1.0, 1.0, 0.0, 0.0])},
            4,
            subsets(4),
            None,
            perm_from_weights,
        ),
    ]


ALL = CASES + _extra_cases()


@pytest.mark.parametrize(
    ("loss", "set_name", "params", "k", "truths", "phi", "to_struct"),
    [c[1:] for c in ALL],
    ids=[c[0] for c in ALL],
)
def test_calibrated_decoding_is_the_bayes_decision(
    loss, set_name, params, k, truths, phi, to_struct
):
    D = make_set(set_name, **params)
    phi = loss.phi(truths) if phi is None else phi
    verts = D.vertices(k)
    outputs = to_struct(verts)
    rng = np.random.default_rng(1)
    m = len(truths)
    for trial in range(30):
        alpha = 0.2 if trial % 2 else 1.0  # sparse and dense distributions
        q = rng.dirichlet(np.full(m, alpha))
        u = np.tensordot(q, phi, axes=1)
        v = calibrated_vertices(u, loss, D)
        assert D.contains(v[None]).all()
        yhat = to_struct(v)
        risk = q @ loss.loss(np.broadcast_to(yhat, (m, *yhat.shape)), truths)
        # brute force: the expected loss of every output of the decoding set
        risks = [q @ loss.loss(np.broadcast_to(o, (m, *o.shape)), truths) for o in outputs]
        assert risk <= min(risks) + 1e-9


def test_decode_pipeline_and_batching():
    rng = np.random.default_rng(2)
    theta = rng.standard_normal((8, 5))
    # the cube with the Hamming loss: threshold the projection at 1/2
    out = calibrated_decode(np.clip(theta, 0, 1), HammingLoss(), "unit_cube")
    np.testing.assert_array_equal(out, (np.clip(theta, 0, 1) > 0.5).astype(int))
    np.testing.assert_array_equal(
        decode_scores(theta, "unit_cube", "euclidean", "hamming", "unit_cube"), out
    )
    batched = calibrated_vertices(np.clip(theta, 0, 1), "hamming", "unit_cube")
    for i in range(8):
        np.testing.assert_array_equal(
            batched[i], calibrated_vertices(np.clip(theta[i], 0, 1), "hamming", "unit_cube")
        )


def test_round_to_class():
    z = np.array([-3.0, 0.49, 0.5, 1.49, 1.5, 2.5, 3.7, 10.0])
    np.testing.assert_array_equal(round_to_class(z, 4), [1, 1, 1, 1, 2, 3, 4, 4])
    with pytest.raises(ValueError, match="NaN"):
        round_to_class([np.nan], 3)
    with pytest.raises(ValueError, match="n_classes"):
        round_to_class([1.0], 0)


def test_unbounded_decoding_set_is_refused():
    with pytest.raises(ValueError, match="no vertices"):
        calibrated_decode(np.zeros((2, 3)), "hamming", "reals")
