"""Each target loss: its affine decomposition equals its direct definition on every pair of
a small output space, and its encodings agree with the decoding sets' ``encode``."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers import make_set
from sklearn.metrics import ndcg_score

from projloss.target_losses import (
    TARGET_LOSSES,
    AbsoluteLoss,
    HammingLoss,
    LossMatrix,
    NDCGLoss,
    PrecisionAtKLoss,
    RankingHammingLoss,
    SpearmanLoss,
    ZeroOneLoss,
    check_permutations,
    get_target_loss,
)


def perms(k):
    return np.array(list(itertools.permutations(range(k))))


def binary(shape):
    p = int(np.prod(shape))
    return np.array(list(itertools.product([0, 1], repeat=p))).reshape(-1, *shape)


def all_pairs(a, b):
    i, j = np.meshgrid(np.arange(len(a)), np.arange(len(b)), indexing="ij")
    return a[i.ravel()], b[j.ravel()]


def check_decomposition(loss, outputs, truths):
    yhat, y = all_pairs(outputs, truths)
    direct = loss.loss(yhat, y)
    dec = loss.decomposed(loss.psi(yhat), loss.phi(y))
    np.testing.assert_allclose(dec, direct, atol=1e-12)
    # the calibrated scores give the expected loss up to c(y): <psi, Vu + b> = L - c
    np.testing.assert_allclose(
        loss.expected_loss(loss.psi(yhat), loss.phi(y)) + loss.c(loss.phi(y)), direct, atol=1e-12
    )
    return direct


def test_hamming_multilabel_all_subsets():
    Y = binary((4,))
    direct = check_decomposition(HammingLoss(), Y, Y)
    # independent count: number of differing labels
    a, b = all_pairs(Y, Y)
    np.testing.assert_array_equal(direct, np.abs(a - b).sum(axis=1))


def test_hamming_matrices_and_permutations():
    M = binary((2, 2))
    check_decomposition(HammingLoss(event_ndim=2), M, M)
    P = np.eye(3)[perms(3)]
    direct = check_decomposition(HammingLoss(event_ndim=2), P, P)
    # on permutation matrices it is twice the ranking Hamming loss
    a, b = all_pairs(perms(3), perms(3))
    np.testing.assert_allclose(direct, 2 * RankingHammingLoss().loss(a, b))


@pytest.mark.parametrize("k", [3, 4])
def test_ranking_hamming_permutations_and_maps(k):
    check_decomposition(RankingHammingLoss(), perms(k), perms(k))
    # outputs that are maps rank -> label (row-stochastic vertices), truths permutations
    maps = np.array(list(itertools.product(range(k), repeat=k)))
    direct = check_decomposition(RankingHammingLoss(), maps, perms(k))
    a, b = all_pairs(maps, perms(k))
    np.testing.assert_array_equal(
        direct,
        [sum(x != z for x, z in zip(r, s, strict=False)) for r, s in zip(a, b, strict=False)],
    )


def test_ranking_hamming_on_cube_outputs():
    """outputs='matrices': every 0/1 3x3 matrix against every permutation; the direct loss
    counts the ranks whose true label is not marked; on permutation matrices it is the
    ranking Hamming loss; the calibrated decoding over the cube is 1[u > 0]."""
    loss = RankingHammingLoss(outputs="matrices")
    M = binary((3, 3))
    direct = check_decomposition(loss, M, perms(3))
    a, b = all_pairs(M, perms(3))
    missed = [sum(m[r, t[r]] == 0 for r in range(3)) for m, t in zip(a, b, strict=True)]
    np.testing.assert_array_equal(direct, missed)
    P, Q = all_pairs(perms(3), perms(3))
    np.testing.assert_array_equal(loss.loss(np.eye(3)[P], Q), RankingHammingLoss().loss(P, Q))
    u = np.random.default_rng(0).uniform(-1, 1, size=(5, 3, 3))
    np.testing.assert_array_equal(make_set("cube").argmax(loss.scores(u)), u > 0)
    assert "cube" in loss.decoders
    with pytest.raises(ValueError, match="unknown outputs 'sets'"):
        RankingHammingLoss(outputs="sets")
    with pytest.raises(ValueError, match="0/1 matrices"):
        loss.psi(np.full((1, 3, 3), 0.5))


def test_absolute_loss_ordinal():
    k = 6
    y = np.arange(1, k + 1)
    direct = check_decomposition(AbsoluteLoss(n_classes=k), y, y)
    a, b = all_pairs(y, y)
    np.testing.assert_array_equal(direct, np.abs(a - b))
    np.testing.assert_array_equal(
        AbsoluteLoss(n_classes=4).psi([1, 3, 4]), [[0, 0, 0], [1, 1, 0], [1, 1, 1]]
    )


def test_zero_one_and_loss_matrix():
    k = 5
    y = np.arange(k)
    direct = check_decomposition(ZeroOneLoss(n_classes=k), y, y)
    a, b = all_pairs(y, y)
    np.testing.assert_array_equal(direct, a != b)
    rng = np.random.default_rng(0)
    M = rng.uniform(0, 3, size=(3, 4))  # 3 outputs, 4 labels
    direct = check_decomposition(LossMatrix(M), np.arange(3), np.arange(4))
    a, b = all_pairs(np.arange(3), np.arange(4))
    np.testing.assert_allclose(direct, M[a, b])
    # the 0-1 loss as a loss matrix
    np.testing.assert_allclose(
        LossMatrix(1 - np.eye(k)).scores(np.eye(k)), ZeroOneLoss().scores(np.eye(k))
    )


@pytest.mark.parametrize("w", [None, [4.0, 2.5, 2.0, -1.0]])
def test_spearman(w):
    k = 4
    P = perms(k)
    direct = check_decomposition(SpearmanLoss(w), P, P)
    # independent: with w = (k..1), half the sum of squared rank differences
    if w is None:
        a, b = all_pairs(P, P)
        ra = np.array([[list(r).index(lab) for lab in range(k)] for r in a])
        rb = np.array([[list(r).index(lab) for lab in range(k)] for r in b])
        np.testing.assert_allclose(direct, 0.5 * np.sum((ra - rb) ** 2, axis=1))


def test_ndcg_against_scikit_learn():
    m = 4
    P = perms(m)
    rel = np.array(list(itertools.product(range(3), repeat=m)), dtype=float)
    direct = check_decomposition(NDCGLoss(), P, rel)
    a, b = all_pairs(P, rel)
    keep = b.sum(axis=1) > 0  # sklearn's NDCG of an all-zero relevance is 0 by convention
    keep &= np.random.default_rng(0).uniform(size=len(b)) < 0.2  # a sample of the pairs
    # scores that order documents as in the permutation (document a[r] at rank r)
    scores = np.empty_like(a, dtype=float)
    np.put_along_axis(scores, a, np.arange(m, 0, -1, dtype=float)[None].repeat(len(a), 0), axis=1)
    ref = np.array([1 - ndcg_score(b[i : i + 1], scores[i : i + 1]) for i in np.flatnonzero(keep)])
    np.testing.assert_allclose(direct[keep], ref, atol=1e-12)
    np.testing.assert_allclose(direct[b.sum(axis=1) == 0], 1.0)


@pytest.mark.parametrize("top", [1, 2, 3])
def test_precision_at_k(top):
    m = 4
    P = perms(m)
    rel = binary((m,))
    direct = check_decomposition(PrecisionAtKLoss(top), P, rel)
    a, b = all_pairs(P, rel)
    ref = []
    for pi, y in zip(a, b, strict=True):
        relevant = set(np.flatnonzero(y))
        kp = max(min(top, len(relevant)), 1)
        ref.append(1 - len(relevant & set(pi[:top])) / kp)
    np.testing.assert_allclose(direct, ref)


def test_scores_are_minus_V_u_minus_b_structured():
    """The structured maps equal the dense matrices of Appendix A."""
    rng = np.random.default_rng(1)
    u = rng.uniform(size=(7, 5))
    np.testing.assert_allclose(HammingLoss().scores(u), u @ (2 * np.eye(5)).T - 1)
    np.testing.assert_allclose(ZeroOneLoss().scores(u), -u @ (1 - np.eye(5)).T)
    np.testing.assert_allclose(AbsoluteLoss().scores(u), 2 * u - 1)
    U = rng.uniform(size=(7, 3, 3))
    np.testing.assert_allclose(RankingHammingLoss().scores(U), U)
    np.testing.assert_allclose(HammingLoss(event_ndim=2).scores(U), 2 * U - 1)


@pytest.mark.parametrize(
    ("loss", "set_name", "params", "structures", "k"),
    [
        (HammingLoss(), "unit_cube", {}, binary((3,)), 3),
        (HammingLoss(), "knapsack", {"lower": 0, "upper": 3}, binary((3,)), 3),
        (RankingHammingLoss(), "birkhoff", {}, perms(3), 3),
        (AbsoluteLoss(n_classes=5), "order_simplex", {}, np.arange(1, 6), 5),
        (ZeroOneLoss(n_classes=4), "simplex", {}, np.arange(4), 4),
        (SpearmanLoss(), "permutahedron", {}, perms(4), 4),
        (SpearmanLoss([3.0, 1.0, 0.5]), "permutahedron", {"w": [3.0, 1.0, 0.5]}, perms(3), 3),
    ],
    ids=[
        "hamming-cube",
        "hamming-knapsack",
        "ranking-birkhoff",
        "abs-order",
        "01-simplex",
        "spearman-perm",
        "spearman-w",
    ],
)
def test_psi_agrees_with_the_decoding_sets_encode(loss, set_name, params, structures, k):
    s = make_set(set_name, **params)
    np.testing.assert_allclose(s.encode(structures, k), loss.psi(structures))
    assert set_name in loss.decoders


def test_registry_and_bad_input():
    assert set(TARGET_LOSSES) == {
        "hamming",
        "hamming_ranking",
        "absolute",
        "zero_one",
        "loss_matrix",
        "spearman",
        "ndcg",
        "precision_at_k",
    }
    assert isinstance(get_target_loss("hamming", event_ndim=2), HammingLoss)
    with pytest.raises(ValueError, match="unknown target loss 'spam'.*valid target losses"):
        get_target_loss("spam")
    with pytest.raises(ValueError, match="not a permutation"):
        check_permutations([[0, 0, 1]])
    with pytest.raises(ValueError, match="integers"):
        check_permutations([[0.5, 1, 2]])
    with pytest.raises(ValueError, match="2-D"):
        LossMatrix(np.zeros(3))
    with pytest.raises(ValueError, match="w must have shape"):
        SpearmanLoss([1.0, 2.0]).psi([[0, 1, 2]])
    with pytest.raises(ValueError, match="1..3"):
        AbsoluteLoss(n_classes=3).psi([4])
    with pytest.raises(ValueError, match="k >= 1"):
        PrecisionAtKLoss(0)
    with pytest.raises(ValueError, match="non-negative"):
        NDCGLoss().phi([[-1.0, 2.0]])
