r"""Target losses with an affine decomposition (paper eq. 8 and Appendix A).

A target loss :math:`L \colon \mathcal{O} \times \mathcal{Y} \to \mathbb{R}_+` decomposes as

.. math::
    L(\hat y, y) = \langle \psi(\hat y), V\varphi(y) + b\rangle + c(y),

so that the decoding calibrated for :math:`L` is
:math:`\hat y_L(u) = \operatorname{argmin}_{\hat y}\langle\psi(\hat y), Vu + b\rangle
= \mathrm{MAP}(-Vu - b)` (paper eq. 9; see :mod:`projloss.decoding`).

Each loss here is the full Appendix A tuple: the encodings ``psi`` (outputs) and ``phi``
(ground truth), the linear map :math:`u \mapsto Vu` (applied as a structured operation, never
as a dense matrix), the offset ``b``, the constant ``c``, and the **direct** definition
``loss(yhat, y)`` on structures. ``scores(u)`` returns :math:`-Vu - b`, the input of the
MAP oracle of the decoding set. ``decoders`` lists the registry names of the sets whose
vertices are :math:`\psi(\mathcal{O})`, i.e. the valid decoding sets.

Structures (batched over leading axes) and encodings:

- ``hamming``: 0/1 arrays (vectors, or ``k x k`` matrices with ``event_ndim=2``); identity;
- ``hamming_ranking``: permutations ``y[rank] = label``; permutation matrices
  ``[rank, label]``;
- ``absolute``: integers ``1..k``; :math:`\sum_{i<y} e_i \in \{0,1\}^{k-1}`;
- ``zero_one``: integers ``0..k-1``; one-hot;
- ``loss_matrix``: integers (rows / columns of ``M``); one-hot;
- ``spearman``: permutations; permuted ``w`` (label ``y[r]`` gets ``w[r]``);
- ``ndcg``: permutations of documents / relevance scores; permuted ``w`` / :math:`y / N(y)`;
- ``precision_at_k``: permutations / 0-1 relevance; permuted ``w`` / :math:`y / k'`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from ._params import ParamsMixin
from ._permutations import (
    _as_int,
    check_permutations,
    inverse_permutation,
    permutation_matrix,
    permuted_weights,
)


def _axes(n: int) -> tuple[int, ...]:
    return tuple(range(-n, 0))


class TargetLoss(ParamsMixin, ABC):
    r"""A target loss with the affine decomposition of paper eq. 8."""

    #: Registry name.
    name: ClassVar[str]
    #: Registry names of the valid decoding sets (their vertices are psi(O)).
    decoders: ClassVar[tuple[str, ...]]
    #: Number of trailing axes of one encoded structure.
    event_ndim: int = 1

    # ---------------------------------------------------------------- decomposition
    @abstractmethod
    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`Vu`, batched over leading axes (a structured linear map)."""

    def b(self, u: NDArray[np.float64]) -> NDArray[np.float64] | float:
        r"""The offset :math:`b` (broadcastable against :math:`Vu`); 0 unless overridden."""
        return 0.0

    @abstractmethod
    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y)`, from the encoded ground truth, one per leading index."""

    def scores(self, u: ArrayLike) -> NDArray[np.float64]:
        r""":math:`-Vu - b`: feed to the decoding set's MAP oracle (paper eq. 9)."""
        u = np.asarray(u, dtype=np.float64)
        return -self.apply_V(u) - self.b(u)

    def decomposed(self, psi_yhat: ArrayLike, phi_y: ArrayLike) -> NDArray[np.float64]:
        r""":math:`\langle\psi(\hat y), V\varphi(y) + b\rangle + c(y)` from the encodings."""
        psi_yhat = np.asarray(psi_yhat, dtype=np.float64)
        phi_y = np.asarray(phi_y, dtype=np.float64)
        lin = self.apply_V(phi_y) + self.b(phi_y)
        return np.sum(psi_yhat * lin, axis=_axes(self.event_ndim)) + self.c(phi_y)

    def expected_loss(self, psi_yhat: ArrayLike, u: ArrayLike) -> NDArray[np.float64]:
        r""":math:`\langle\psi(\hat y), Vu + b\rangle`: the expected loss up to a constant
        when :math:`u = \mathbb{E}[\varphi(Y)]`."""
        return -np.sum(np.asarray(psi_yhat) * self.scores(u), axis=_axes(self.event_ndim))

    # ---------------------------------------------------------------- encodings
    @abstractmethod
    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y)`."""

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        r"""The ground-truth encoding :math:`\varphi(y)` (equal to :math:`\psi` unless
        :math:`\mathcal{O} \neq \mathcal{Y}`)."""
        return self.psi(y)

    # ---------------------------------------------------------------- direct definition
    @abstractmethod
    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition :math:`L(\hat y, y)` on structures (batched)."""

    def __call__(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        """Same as :meth:`loss`."""
        return self.loss(yhat, y)


class HammingLoss(TargetLoss):
    r"""Hamming loss on 0/1 vectors or matrices: the number of differing entries.

    :math:`L(\hat y, y) = \langle\psi(\hat y), \mathbf 1\rangle
    + \langle\varphi(y), \mathbf 1\rangle - 2\langle\psi(\hat y), \varphi(y)\rangle`:
    :math:`V = -2I`, :math:`b = \mathbf 1`,
    :math:`c(y) = |y|` (Appendix A, multilabel). Calibrated decoding is
    :math:`\mathrm{MAP}(2u - 1)` (threshold at 1/2 on the cube).

    With ``event_ndim=2`` it is the entrywise Hamming loss between ``k x k`` 0/1 matrices,
    the metric of the paper's label-ranking tables; on permutation matrices it equals twice
    :class:`RankingHammingLoss`, so both decode identically on the Birkhoff polytope and on
    row-stochastic matrices; on the cube this one thresholds :math:`u` at 1/2 (it counts
    extra marks as errors), :class:`RankingHammingLoss` at 0.
    """

    name: ClassVar[str] = "hamming"
    decoders: ClassVar[tuple[str, ...]] = (
        "unit_cube",
        "knapsack",
        "cube",
        "row_simplex",
        "birkhoff",
    )

    def __init__(self, event_ndim: int = 1) -> None:
        self.event_ndim = int(event_ndim)

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return -2.0 * u

    def b(self, u: NDArray[np.float64]) -> float:
        return 1.0

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.sum(phi_y, axis=_axes(self.event_ndim))

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        return np.asarray(yhat, dtype=np.float64)

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        diff = np.asarray(yhat) != np.asarray(y)
        return np.sum(diff, axis=_axes(self.event_ndim)).astype(np.float64)

    def get_params(self) -> dict[str, Any]:
        return {"event_ndim": self.event_ndim}


class RankingHammingLoss(TargetLoss):
    r"""Hamming loss for rankings: the number of ranks holding a different label.

    :math:`L(\hat y, y) = \sum_r 1[\hat y_r \neq y_r] = k - \langle\psi(\hat y), \varphi(y)\rangle`
    with permutation matrices: :math:`V = -I`, :math:`b = 0`, :math:`c(y) = k` (Appendix A).
    Calibrated decoding is :math:`\mathrm{MAP}_D(u)`, the decoding of the paper's reference
    implementation (its ``predict`` without ``V`` and ``b``).

    ``outputs="rankings"`` (default): outputs are maps rank -> label ``(..., k)``
    (permutations, or any map: the vertices of the row-stochastic matrices).
    ``outputs="matrices"``: outputs are 0/1 matrices ``(..., k, k)`` ``[rank, label]`` (the
    vertices of the cube, the paper's Table 1 :math:`[0,1]^{k\times k}` decoder); the same
    decomposition then counts the ranks whose true label the output does not mark,
    :math:`k - \sum_r \hat Y_{r, y_r}` (extra marks cost nothing, so the calibrated
    decoding over the cube, :math:`\hat Y = 1[u > 0]`, marks every entry with positive
    mass). On permutations all definitions agree. Truths are permutations either way.
    """

    name: ClassVar[str] = "hamming_ranking"
    decoders: ClassVar[tuple[str, ...]] = ("birkhoff", "row_simplex", "cube")
    event_ndim = 2
    OUTPUTS: ClassVar[tuple[str, ...]] = ("rankings", "matrices")

    def __init__(self, outputs: str = "rankings") -> None:
        if outputs not in self.OUTPUTS:
            raise ValueError(f"unknown outputs {outputs!r}; valid: {list(self.OUTPUTS)}")
        self.outputs = outputs

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return -u

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.full(phi_y.shape[:-2], float(phi_y.shape[-1]))

    @staticmethod
    def _maps(y: ArrayLike, name: str) -> NDArray[np.float64]:
        arr = _as_int(y, name)
        k = arr.shape[-1]
        if arr.min(initial=0) < 0 or arr.max(initial=0) >= k:
            raise ValueError(f"rankings must hold labels in 0..{k - 1}")
        return permutation_matrix(arr)

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        if self.outputs == "matrices":
            return _check_01_matrices(yhat, "yhat")
        return self._maps(yhat, "yhat")

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        return self._maps(y, "y")

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        if self.outputs == "matrices":
            Y = _check_01_matrices(yhat, "yhat")
            y = _as_int(y, "y")
            marked = np.take_along_axis(Y, y[..., None], axis=-1)[..., 0]
            return y.shape[-1] - np.sum(marked, axis=-1)
        return np.sum(np.asarray(yhat) != np.asarray(y), axis=-1).astype(np.float64)

    def get_params(self) -> dict[str, Any]:
        return {"outputs": self.outputs}


def _check_01_matrices(m: ArrayLike, name: str) -> NDArray[np.float64]:
    arr = np.asarray(m, dtype=np.float64)
    if arr.ndim < 2 or arr.shape[-1] != arr.shape[-2]:
        raise ValueError(f"{name} must hold k x k matrices on its last two axes, got {arr.shape}")
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must hold 0/1 matrices")
    return arr


class AbsoluteLoss(TargetLoss):
    r"""Absolute loss for ordinal regression, :math:`|\hat y - y|` on labels ``1..k``.

    With :math:`\varphi(y) = \sum_{i<y} e_i \in \{0,1\}^{k-1}`:
    :math:`V = -2I`, :math:`b = \mathbf 1`, :math:`c(y) = \langle\varphi(y), \mathbf 1\rangle`
    (Appendix A).
    """

    name: ClassVar[str] = "absolute"
    decoders: ClassVar[tuple[str, ...]] = ("order_simplex",)

    def __init__(self, n_classes: int | None = None) -> None:
        self.n_classes = n_classes

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return -2.0 * u

    def b(self, u: NDArray[np.float64]) -> float:
        return 1.0

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.sum(phi_y, axis=-1)

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        if self.n_classes is None:
            raise ValueError("AbsoluteLoss.psi needs n_classes")
        y = _as_int(yhat, "yhat")
        k = int(self.n_classes)
        if y.size and (y.min() < 1 or y.max() > k):
            raise ValueError(f"ordinal labels must lie in 1..{k}")
        return (
            (np.arange(1, k)[None, :] < y.reshape(-1, 1))
            .astype(np.float64)
            .reshape((*y.shape, k - 1))
        )

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        return np.abs(np.asarray(yhat, dtype=np.float64) - np.asarray(y, dtype=np.float64))

    def get_params(self) -> dict[str, Any]:
        return {"n_classes": self.n_classes}


class ZeroOneLoss(TargetLoss):
    r"""0-1 loss for multiclass classification, :math:`1[\hat y \neq y]`.

    One-hot encodings and :math:`V = \mathbf 1\mathbf 1^\top - I` (the 0-1 cost matrix),
    applied as :math:`Vu = \langle u, \mathbf 1\rangle\mathbf 1 - u` (Appendix A).
    """

    name: ClassVar[str] = "zero_one"
    decoders: ClassVar[tuple[str, ...]] = ("simplex",)

    def __init__(self, n_classes: int | None = None) -> None:
        self.n_classes = n_classes

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.sum(u, axis=-1, keepdims=True) - u

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.zeros(phi_y.shape[:-1])

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        if self.n_classes is None:
            raise ValueError("ZeroOneLoss.psi needs n_classes")
        return np.eye(int(self.n_classes))[_as_int(yhat, "yhat")]

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        return (np.asarray(yhat) != np.asarray(y)).astype(np.float64)

    def get_params(self) -> dict[str, Any]:
        return {"n_classes": self.n_classes}


class LossMatrix(TargetLoss):
    r"""Any loss on small finite spaces, given as a matrix ``M[yhat, y]`` (Appendix A,
    "General loss"): :math:`\psi = \varphi =` one-hot, :math:`V = M`, :math:`b = 0`,
    :math:`c = 0`. The output space (rows) may differ from the label space (columns).
    """

    name: ClassVar[str] = "loss_matrix"
    decoders: ClassVar[tuple[str, ...]] = ("simplex",)

    def __init__(self, matrix: ArrayLike) -> None:
        M = np.asarray(matrix, dtype=np.float64)
        if M.ndim != 2 or M.shape[0] < 1 or M.shape[1] < 1:
            raise ValueError(f"the loss matrix must be 2-D (n_outputs, n_labels), got {M.shape}")
        if not np.all(np.isfinite(M)):
            raise ValueError("the loss matrix must be finite")
        self.matrix = M

    @property
    def n_outputs(self) -> int:
        return self.matrix.shape[0]

    @property
    def n_labels(self) -> int:
        return self.matrix.shape[1]

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        if u.shape[-1] != self.n_labels:
            raise ValueError(
                f"u must have {self.n_labels} entries on its last axis (the loss matrix has "
                f"{self.n_labels} columns), got {u.shape[-1]}"
            )
        return u @ self.matrix.T

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.zeros(phi_y.shape[:-1])

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        return np.eye(self.n_outputs)[_as_int(yhat, "yhat")]

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        return np.eye(self.n_labels)[_as_int(y, "y")]

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        return self.matrix[_as_int(yhat, "yhat"), _as_int(y, "y")]

    def get_params(self) -> dict[str, Any]:
        return {"matrix": self.matrix}


class _PermutahedronLoss(TargetLoss):
    """Shared parts of the losses whose outputs are permutations encoded by permuted w."""

    decoders: ClassVar[tuple[str, ...]] = ("permutahedron",)

    def __init__(self, w: ArrayLike | None = None) -> None:
        self.w = None if w is None else np.asarray(w, dtype=np.float64)

    def weights(self, k: int) -> NDArray[np.float64]:
        """The weights ``w`` for size ``k`` (default given by :meth:`default_weights`)."""
        if self.w is None:
            return self.default_weights(k)
        if self.w.shape != (k,):
            raise ValueError(f"w must have shape ({k},), got {self.w.shape}")
        return self.w

    @abstractmethod
    def default_weights(self, k: int) -> NDArray[np.float64]: ...

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        return -u

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        y = check_permutations(yhat, "yhat")
        return permuted_weights(y, self.weights(y.shape[-1]))

    def get_params(self) -> dict[str, Any]:
        return {"w": self.w}


class SpearmanLoss(_PermutahedronLoss):
    r"""Squared distance between permuted weights,
    :math:`L(\hat\pi, \pi) = \tfrac12\|\psi(\hat\pi) - \psi(\pi)\|^2`.

    With the default :math:`w = (k, \dots, 1)` it is half the sum of squared rank
    differences (Spearman's distance). :math:`V = -I`, :math:`b = 0`,
    :math:`c(\pi) = \|w\|^2`; calibrated decoding is MAP on the permutahedron, i.e. sorting
    :math:`u` — the decoding the paper uses with the permutahedron (Appendix B.1).
    """

    name: ClassVar[str] = "spearman"

    def default_weights(self, k: int) -> NDArray[np.float64]:
        return np.arange(k, 0, -1, dtype=np.float64)

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.sum(phi_y * phi_y, axis=-1)

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        yhat = check_permutations(yhat, "yhat")
        y = check_permutations(y, "y")
        w = self.weights(y.shape[-1])
        # rank of each label under each permutation, then the weight at that rank
        d = w[inverse_permutation(yhat)] - w[inverse_permutation(y)]
        return 0.5 * np.sum(d * d, axis=-1)


class NDCGLoss(_PermutahedronLoss):
    r"""NDCG loss :math:`1 - \mathrm{DCG}(\pi, y) / N(y)` with linear gains (Appendix A).

    Outputs are rankings of ``m`` documents ``pi[rank] = document``; the ground truth is a
    vector of relevance scores :math:`y \in \mathbb{R}_+^m`. Discounts
    :math:`w_r = 1/\log_2(1 + r)` (ranks from 1) by default;
    :math:`N(y) = \langle \mathrm{sort}_\downarrow(y), w\rangle`.
    :math:`\psi(\pi)` = permuted ``w``, :math:`\varphi(y) = y / N(y)`, :math:`V = -I`,
    :math:`c = 1`. For :math:`y = 0` (no relevant document) :math:`\varphi(y) = 0` and
    :math:`L = 1`. For exponential gains pass :math:`2^y - 1` as ``y``.
    """

    name: ClassVar[str] = "ndcg"

    def default_weights(self, k: int) -> NDArray[np.float64]:
        return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))

    def _norm(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        w = self.weights(y.shape[-1])
        return np.sum(-np.sort(-y, axis=-1) * w, axis=-1)

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        y = np.asarray(y, dtype=np.float64)
        if np.any(y < 0):
            raise ValueError("relevance scores must be non-negative")
        n = self._norm(y)[..., None]
        return np.divide(y, n, out=np.zeros_like(y), where=n > 0)

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.ones(phi_y.shape[:-1])

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        pi = check_permutations(yhat, "yhat")
        y = np.asarray(y, dtype=np.float64)
        m = y.shape[-1]
        w = self.weights(m)
        gains = np.take_along_axis(y, pi, axis=-1)  # relevance of the document at each rank
        dcg = np.sum(gains * w, axis=-1)
        ideal = self._norm(y)
        return 1.0 - np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)


class PrecisionAtKLoss(_PermutahedronLoss):
    r"""Precision-at-``top`` loss :math:`1 - |\text{top-}k(\pi) \cap y| / k'` (Appendix A).

    Outputs are rankings ``pi[rank] = document``; the ground truth a 0/1 relevance vector.
    :math:`k' = \min(k, |y|)` (the paper's convention when fewer than ``k`` documents are
    relevant), and :math:`L = 1` when no document is relevant. :math:`w = (1, \dots, 1, 0,
    \dots, 0)` with ``top`` ones, :math:`\varphi(y) = y / k'`, :math:`V = -I`, :math:`c = 1`.
    """

    name: ClassVar[str] = "precision_at_k"

    def __init__(self, top: int = 1) -> None:
        if int(top) < 1:
            raise ValueError(f"precision at k needs k >= 1, got {top}")
        self.top = int(top)
        super().__init__(None)

    def default_weights(self, k: int) -> NDArray[np.float64]:
        if self.top > k:
            raise ValueError(f"precision at {self.top} needs at least {self.top} documents")
        return (np.arange(k) < self.top).astype(np.float64)

    def _kprime(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(np.minimum(self.top, np.sum(y, axis=-1)), 1.0)

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        y = np.asarray(y, dtype=np.float64)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("precision at k needs 0/1 relevance labels")
        return y / self._kprime(y)[..., None]

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.ones(phi_y.shape[:-1])

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        pi = check_permutations(yhat, "yhat")
        y = np.asarray(y, dtype=np.float64)
        hits = np.sum(np.take_along_axis(y, pi[..., : self.top], axis=-1), axis=-1)
        return 1.0 - hits / self._kprime(y)

    def get_params(self) -> dict[str, Any]:
        return {"top": self.top}


#: Registry: name -> class.
TARGET_LOSSES: dict[str, type[TargetLoss]] = {
    cls.name: cls
    for cls in (
        HammingLoss,
        RankingHammingLoss,
        AbsoluteLoss,
        ZeroOneLoss,
        LossMatrix,
        SpearmanLoss,
        NDCGLoss,
        PrecisionAtKLoss,
    )
}


def get_target_loss(name: str | TargetLoss, **params: Any) -> TargetLoss:
    """Instantiate the target loss registered as ``name`` (instances pass through)."""
    if isinstance(name, TargetLoss):
        return name
    try:
        cls = TARGET_LOSSES[name]
    except (KeyError, TypeError):
        raise ValueError(
            f"unknown target loss {name!r}; valid target losses are {sorted(TARGET_LOSSES)}"
        ) from None
    return cls(**params)


__all__ = [
    "TARGET_LOSSES",
    "AbsoluteLoss",
    "HammingLoss",
    "LossMatrix",
    "NDCGLoss",
    "PrecisionAtKLoss",
    "RankingHammingLoss",
    "SpearmanLoss",
    "TargetLoss",
    "ZeroOneLoss",
    "check_permutations",
    "get_target_loss",
    "inverse_permutation",
    "permutation_matrix",
    "permuted_weights",
]
