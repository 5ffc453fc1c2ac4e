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
    r"""A target loss with the affine decomposition of paper eq. 8.

    :math:`L(\hat y, y) = \langle \psi(\hat y), V\varphi(y) + b\rangle + c(y)`. A
    subclass gives the encodings :meth:`psi` and :meth:`phi`, the linear map
    :meth:`apply_V`, the offset :meth:`b`, the constant :meth:`c` and the direct
    definition :meth:`loss`; :meth:`scores` is then the input of the calibrated decoding's
    MAP oracle (paper eq. 9).

    Attributes
    ----------
    name : str
        Registry name (a key of :data:`TARGET_LOSSES`).
    decoders : tuple of str
        Registry names of the valid decoding sets (their vertices are
        :math:`\psi(\mathcal{O})`).
    event_ndim : int
        Number of trailing axes of one encoded structure (1 for vectors, 2 for matrices).

    See Also
    --------
    get_target_loss : Instantiate a target loss by its registry name.
    projloss.decoding.calibrated_decode : The decoding calibrated for a target loss.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import HammingLoss
    >>> L = HammingLoss()
    >>> yhat, y = np.array([1, 0, 1]), np.array([1, 1, 0])
    >>> L.loss(yhat, y)
    np.float64(2.0)
    >>> L.decomposed(L.psi(yhat), L.phi(y))  # the affine decomposition agrees
    np.float64(2.0)
    """

    #: Registry name.
    name: ClassVar[str]
    #: Registry names of the valid decoding sets (their vertices are psi(O)).
    decoders: ClassVar[tuple[str, ...]]
    #: Number of trailing axes of one encoded structure.
    event_ndim: int = 1

    # ---------------------------------------------------------------- decomposition
    @abstractmethod
    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`Vu`, batched over leading axes (a structured linear map).

        Parameters
        ----------
        u : ndarray of shape (..., ``*event_shape``)
            Points in the space of the encoded labels :math:`\varphi(y)` (e.g. the
            expectation :math:`\mathbb{E}[\varphi(Y)]`), batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., ``*event_shape``)
            The linear map applied to each point, in the space of the output encodings
            :math:`\psi(\hat y)`.
        """

    def b(self, u: NDArray[np.float64]) -> NDArray[np.float64] | float:
        r"""The offset :math:`b` (broadcastable against :math:`Vu`); 0 unless overridden.

        Parameters
        ----------
        u : ndarray of shape (..., ``*event_shape``)
            The points :math:`Vu` is computed for (only their shape may matter).

        Returns
        -------
        b : float or ndarray
            The offset, broadcastable against :meth:`apply_V` of ``u``.
        """
        return 0.0

    @abstractmethod
    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y)`, from the encoded ground truth, one per leading index.

        Parameters
        ----------
        phi_y : ndarray of shape (..., ``*event_shape``)
            Encoded ground truths :math:`\varphi(y)` (see :meth:`phi`).

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """

    def scores(self, u: ArrayLike) -> NDArray[np.float64]:
        r""":math:`-Vu - b`: feed to the decoding set's MAP oracle (paper eq. 9).

        Parameters
        ----------
        u : array-like of shape (..., ``*event_shape``)
            Points in the space of the encoded labels (e.g. projections of model outputs
            onto the projection set), batched over leading axes.

        Returns
        -------
        scores : ndarray of shape (..., ``*event_shape``)
            :math:`-Vu - b`, float64, in the space of the output encodings.
        """
        u = np.asarray(u, dtype=np.float64)
        return -self.apply_V(u) - self.b(u)

    def decomposed(self, psi_yhat: ArrayLike, phi_y: ArrayLike) -> NDArray[np.float64]:
        r""":math:`\langle\psi(\hat y), V\varphi(y) + b\rangle + c(y)` from the encodings.

        Equals :meth:`loss` on the structures the encodings come from (paper eq. 8).

        Parameters
        ----------
        psi_yhat : array-like of shape (..., ``*event_shape``)
            Encoded outputs :math:`\psi(\hat y)` (see :meth:`psi`).
        phi_y : array-like of shape (..., ``*event_shape``)
            Encoded ground truths :math:`\varphi(y)` (see :meth:`phi`).

        Returns
        -------
        loss : ndarray of shape (...)
            The loss for each leading index, float64.
        """
        psi_yhat = np.asarray(psi_yhat, dtype=np.float64)
        phi_y = np.asarray(phi_y, dtype=np.float64)
        lin = self.apply_V(phi_y) + self.b(phi_y)
        return np.sum(psi_yhat * lin, axis=_axes(self.event_ndim)) + self.c(phi_y)

    def expected_loss(self, psi_yhat: ArrayLike, u: ArrayLike) -> NDArray[np.float64]:
        r""":math:`\langle\psi(\hat y), Vu + b\rangle`: the expected loss up to a constant.

        It is the expected loss :math:`\mathbb{E}[L(\hat y, Y)]` minus
        :math:`\mathbb{E}[c(Y)]` when :math:`u = \mathbb{E}[\varphi(Y)]`; the calibrated
        decoding minimizes it over :math:`\hat y`.

        Parameters
        ----------
        psi_yhat : array-like of shape (..., ``*event_shape``)
            Encoded outputs :math:`\psi(\hat y)` (see :meth:`psi`).
        u : array-like of shape (..., ``*event_shape``)
            Points in the space of the encoded labels, e.g. :math:`\mathbb{E}[\varphi(Y)]`.

        Returns
        -------
        value : ndarray of shape (...)
            :math:`\langle\psi(\hat y), Vu + b\rangle` for each leading index.
        """
        return -np.sum(np.asarray(psi_yhat) * self.scores(u), axis=_axes(self.event_ndim))

    # ---------------------------------------------------------------- encodings
    @abstractmethod
    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y)`.

        Parameters
        ----------
        yhat : array-like of shape (..., ``*structure_shape``)
            Output structures (see the module docstring for each loss's structures),
            batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., ``*event_shape``)
            The encoded outputs, float64.
        """

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        r"""The ground-truth encoding :math:`\varphi(y)`.

        Equal to :math:`\psi` unless :math:`\mathcal{O} \neq \mathcal{Y}`.

        Parameters
        ----------
        y : array-like of shape (..., ``*structure_shape``)
            Ground-truth structures, batched over leading axes.

        Returns
        -------
        phi : ndarray of shape (..., ``*event_shape``)
            The encoded ground truths, float64.
        """
        return self.psi(y)

    # ---------------------------------------------------------------- direct definition
    @abstractmethod
    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition :math:`L(\hat y, y)` on structures (batched).

        Parameters
        ----------
        yhat : array-like of shape (..., ``*structure_shape``)
            Output structures.
        y : array-like of shape (..., ``*structure_shape``)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.
        """

    def __call__(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""Same as :meth:`loss`.

        Parameters
        ----------
        yhat : array-like of shape (..., ``*structure_shape``)
            Output structures.
        y : array-like of shape (..., ``*structure_shape``)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.
        """
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

    Parameters
    ----------
    event_ndim : int, default=1
        Number of trailing axes of one structure: 1 for 0/1 vectors (multilabel), 2 for
        ``k x k`` 0/1 matrices (label ranking, entrywise).

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import HammingLoss
    >>> HammingLoss().loss(np.array([[1, 0, 1], [0, 0, 0]]), np.array([[1, 1, 0], [0, 0, 0]]))
    array([2., 0.])
    >>> HammingLoss().scores(np.array([0.9, 0.2, 0.5]))  # 2u - 1: threshold at 1/2
    array([ 0.8, -0.6,  0. ])
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
        """:math:`Vu = -2u`.

        Parameters
        ----------
        u : ndarray of shape (..., k) or (..., k, k)
            Points in the space of the encoded labels, batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., k) or (..., k, k)
            The linear map applied to each point.
        """
        return -2.0 * u

    def b(self, u: NDArray[np.float64]) -> float:
        r"""The offset :math:`b = \mathbf 1` (a scalar, broadcast).

        Parameters
        ----------
        u : ndarray of shape (..., ``*event_shape``)
            The points :math:`Vu` is computed for (unused: the offset is constant).

        Returns
        -------
        b : float
            1.0.
        """
        return 1.0

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = |y|`, the number of ones.

        Parameters
        ----------
        phi_y : ndarray of shape (..., k) or (..., k, k)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.sum(phi_y, axis=_axes(self.event_ndim))

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y)`: the identity (as float64).

        Parameters
        ----------
        yhat : array-like of shape (..., k) or (..., k, k)
            Output structures, batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., k) or (..., k, k)
            The encoded outputs, float64.
        """
        return np.asarray(yhat, dtype=np.float64)

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: the number of differing entries.

        Parameters
        ----------
        yhat : array-like of shape (..., k) or (..., k, k)
            Output structures.
        y : array-like of shape (..., k) or (..., k, k)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.
        """
        diff = np.asarray(yhat) != np.asarray(y)
        return np.sum(diff, axis=_axes(self.event_ndim)).astype(np.float64)

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'event_ndim': event_ndim}``.
        """
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

    Parameters
    ----------
    outputs : {"rankings", "matrices"}, default="rankings"
        The output structures: maps rank -> label of shape ``(..., k)``, or 0/1 matrices
        ``[rank, label]`` of shape ``(..., k, k)``.

    Raises
    ------
    ValueError
        If ``outputs`` is not one of ``OUTPUTS``.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import RankingHammingLoss
    >>> RankingHammingLoss().loss(np.array([2, 0, 1]), np.array([2, 1, 0]))
    np.float64(2.0)
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
        """:math:`Vu = -u`.

        Parameters
        ----------
        u : ndarray of shape (..., k, k)
            Points in the space of the encoded labels, batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., k, k)
            The linear map applied to each point.
        """
        return -u

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = k`, the number of labels.

        Parameters
        ----------
        phi_y : ndarray of shape (..., k, k)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.full(phi_y.shape[:-2], float(phi_y.shape[-1]))

    @staticmethod
    def _maps(y: ArrayLike, name: str) -> NDArray[np.float64]:
        arr = _as_int(y, name)
        k = arr.shape[-1]
        if arr.min(initial=0) < 0 or arr.max(initial=0) >= k:
            raise ValueError(f"rankings must hold labels in 0..{k - 1}")
        return permutation_matrix(arr)

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y)`: permutation matrices ``[rank, label]``.

        With ``outputs="matrices"`` the outputs are already 0/1 matrices, returned as is.

        Parameters
        ----------
        yhat : array-like of shape (..., k) or (..., k, k)
            Output structures, batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., k, k)
            The encoded outputs, float64.

        Raises
        ------
        ValueError
            If the outputs are not maps rank -> label in ``0..k-1`` (or, with
            ``outputs="matrices"``, not ``k x k`` 0/1 matrices).
        """
        if self.outputs == "matrices":
            return _check_01_matrices(yhat, "yhat")
        return self._maps(yhat, "yhat")

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        r"""The ground-truth encoding :math:`\varphi(y)`: permutation matrices ``[rank, label]``.

        Parameters
        ----------
        y : array-like of shape (..., k)
            Ground-truth structures, batched over leading axes.

        Returns
        -------
        phi : ndarray of shape (..., k, k)
            The encoded ground truths, float64.

        Raises
        ------
        ValueError
            If ``y`` does not hold integer labels in ``0..k-1``.
        """
        return self._maps(y, "y")

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: the number of ranks holding a different label.

        With ``outputs="matrices"``: the number of ranks whose true label is not marked.

        Parameters
        ----------
        yhat : array-like of shape (..., k) or (..., k, k)
            Maps rank -> label, or with ``outputs="matrices"`` 0/1 matrices ``[rank, label]``.
        y : array-like of shape (..., k)
            Ground-truth rankings ``y[rank] = label`` (permutations), with the leading shape
            of ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.

        Raises
        ------
        ValueError
            With ``outputs="matrices"``, if ``yhat`` does not hold ``k x k`` 0/1 matrices or
            ``y`` does not hold integers.
        """
        if self.outputs == "matrices":
            Y = _check_01_matrices(yhat, "yhat")
            y = _as_int(y, "y")
            marked = np.take_along_axis(Y, y[..., None], axis=-1)[..., 0]
            return y.shape[-1] - np.sum(marked, axis=-1)
        return np.sum(np.asarray(yhat) != np.asarray(y), axis=-1).astype(np.float64)

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'outputs': outputs}``.
        """
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

    Parameters
    ----------
    n_classes : int or None, default=None
        Number of ordinal classes ``k``; needed by :meth:`psi` (the encoding has ``k - 1``
        entries), not by :meth:`loss`.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import AbsoluteLoss
    >>> L = AbsoluteLoss(n_classes=4)
    >>> L.psi(np.array([1, 3]))
    array([[0., 0., 0.],
           [1., 1., 0.]])
    >>> L.loss(np.array([1, 3]), np.array([4, 3]))
    array([3., 0.])
    """

    name: ClassVar[str] = "absolute"
    decoders: ClassVar[tuple[str, ...]] = ("order_simplex",)

    def __init__(self, n_classes: int | None = None) -> None:
        self.n_classes = n_classes

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`Vu = -2u`.

        Parameters
        ----------
        u : ndarray of shape (..., k - 1)
            Points in the space of the encoded labels, batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., k - 1)
            The linear map applied to each point.
        """
        return -2.0 * u

    def b(self, u: NDArray[np.float64]) -> float:
        r"""The offset :math:`b = \mathbf 1` (a scalar, broadcast).

        Parameters
        ----------
        u : ndarray of shape (..., ``*event_shape``)
            The points :math:`Vu` is computed for (unused: the offset is constant).

        Returns
        -------
        b : float
            1.0.
        """
        return 1.0

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = \langle\varphi(y), \mathbf 1\rangle = y - 1`.

        Parameters
        ----------
        phi_y : ndarray of shape (..., k - 1)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.sum(phi_y, axis=-1)

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y) = \sum_{i<\hat y} e_i \in \{0,1\}^{k-1}`.

        Parameters
        ----------
        yhat : array-like of shape (...)
            Output structures, batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., k - 1)
            The encoded outputs, float64.

        Raises
        ------
        ValueError
            If ``n_classes`` is None, or the labels are not integers in ``1..k``.
        """
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
        r"""The direct definition: :math:`|\hat y - y|`.

        Parameters
        ----------
        yhat : array-like of shape (...)
            Output structures.
        y : array-like of shape (...)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.
        """
        return np.abs(np.asarray(yhat, dtype=np.float64) - np.asarray(y, dtype=np.float64))

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'n_classes': n_classes}``.
        """
        return {"n_classes": self.n_classes}


class ZeroOneLoss(TargetLoss):
    r"""0-1 loss for multiclass classification, :math:`1[\hat y \neq y]`.

    One-hot encodings and :math:`V = \mathbf 1\mathbf 1^\top - I` (the 0-1 cost matrix),
    applied as :math:`Vu = \langle u, \mathbf 1\rangle\mathbf 1 - u` (Appendix A).

    Parameters
    ----------
    n_classes : int or None, default=None
        Number of classes ``k``; needed by :meth:`psi` (one-hot of size ``k``), not by
        :meth:`loss`.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import ZeroOneLoss
    >>> L = ZeroOneLoss(n_classes=3)
    >>> L.loss(np.array([0, 2]), np.array([0, 1]))
    array([0., 1.])
    >>> L.scores(np.array([0.2, 0.5, 0.3]))  # -Vu = u - 1: MAP picks the most probable class
    array([-0.8, -0.5, -0.7])
    """

    name: ClassVar[str] = "zero_one"
    decoders: ClassVar[tuple[str, ...]] = ("simplex",)

    def __init__(self, n_classes: int | None = None) -> None:
        self.n_classes = n_classes

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        r""":math:`Vu = \langle u, \mathbf 1\rangle\mathbf 1 - u`.

        Parameters
        ----------
        u : ndarray of shape (..., k)
            Points in the space of the encoded labels, batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., k)
            The linear map applied to each point.
        """
        return np.sum(u, axis=-1, keepdims=True) - u

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = 0`.

        Parameters
        ----------
        phi_y : ndarray of shape (..., k)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.zeros(phi_y.shape[:-1])

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y)`: one-hot vectors.

        Parameters
        ----------
        yhat : array-like of shape (...)
            Output structures, batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., k)
            The encoded outputs, float64.

        Raises
        ------
        ValueError
            If ``n_classes`` is None, or the labels are not integers.
        """
        if self.n_classes is None:
            raise ValueError("ZeroOneLoss.psi needs n_classes")
        return np.eye(int(self.n_classes))[_as_int(yhat, "yhat")]

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: :math:`1[\hat y \neq y]`.

        Parameters
        ----------
        yhat : array-like of shape (...)
            Output structures.
        y : array-like of shape (...)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.
        """
        return (np.asarray(yhat) != np.asarray(y)).astype(np.float64)

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'n_classes': n_classes}``.
        """
        return {"n_classes": self.n_classes}


class LossMatrix(TargetLoss):
    r"""Any loss on small finite spaces, given as a matrix ``M[yhat, y]``.

    Appendix A, "General loss": :math:`\psi = \varphi =` one-hot, :math:`V = M`,
    :math:`b = 0`, :math:`c = 0`. The output space (rows) may differ from the label space
    (columns).

    Parameters
    ----------
    matrix : array-like of shape (n_outputs, n_labels)
        The finite loss values ``M[yhat, y]``.

    Raises
    ------
    ValueError
        If ``matrix`` is not a non-empty 2-D array or has non-finite entries.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import LossMatrix
    >>> L = LossMatrix([[0.0, 1.0], [2.0, 0.0]])
    >>> L.loss(np.array([0, 1]), np.array([1, 0]))
    array([1., 2.])
    >>> L.scores(np.array([0.5, 0.5]))  # -M u: the expected loss of each output, negated
    array([-0.5, -1. ])
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
        """Number of outputs (rows of the matrix)."""
        return self.matrix.shape[0]

    @property
    def n_labels(self) -> int:
        """Number of labels (columns of the matrix)."""
        return self.matrix.shape[1]

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`Vu = Mu`, the expected loss of each output under :math:`u`.

        Parameters
        ----------
        u : ndarray of shape (..., n_labels)
            Points in the space of the encoded labels, batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., n_outputs)
            The linear map applied to each point.

        Raises
        ------
        ValueError
            If the last axis of ``u`` does not have ``n_labels`` entries.
        """
        if u.shape[-1] != self.n_labels:
            raise ValueError(
                f"u must have {self.n_labels} entries on its last axis (the loss matrix has "
                f"{self.n_labels} columns), got {u.shape[-1]}"
            )
        return u @ self.matrix.T

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = 0`.

        Parameters
        ----------
        phi_y : ndarray of shape (..., n_labels)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.zeros(phi_y.shape[:-1])

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\hat y)`: one-hot vectors of size ``n_outputs``.

        Parameters
        ----------
        yhat : array-like of shape (...)
            Output structures, batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., n_outputs)
            The encoded outputs, float64.

        Raises
        ------
        ValueError
            If ``yhat`` does not hold integers.
        """
        return np.eye(self.n_outputs)[_as_int(yhat, "yhat")]

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        r"""The ground-truth encoding :math:`\varphi(y)`: one-hot vectors of size ``n_labels``.

        Parameters
        ----------
        y : array-like of shape (...)
            Ground-truth structures, batched over leading axes.

        Returns
        -------
        phi : ndarray of shape (..., n_labels)
            The encoded ground truths, float64.

        Raises
        ------
        ValueError
            If ``y`` does not hold integers.
        """
        return np.eye(self.n_labels)[_as_int(y, "y")]

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: the matrix entry ``M[yhat, y]``.

        Parameters
        ----------
        yhat : array-like of shape (...)
            Output structures.
        y : array-like of shape (...)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.

        Raises
        ------
        ValueError
            If ``yhat`` or ``y`` does not hold integers.
        """
        return self.matrix[_as_int(yhat, "yhat"), _as_int(y, "y")]

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'matrix': matrix}``.
        """
        return {"matrix": self.matrix}


class _PermutahedronLoss(TargetLoss):
    """Shared parts of the losses whose outputs are permutations encoded by permuted w."""

    decoders: ClassVar[tuple[str, ...]] = ("permutahedron",)

    def __init__(self, w: ArrayLike | None = None) -> None:
        self.w = None if w is None else np.asarray(w, dtype=np.float64)

    def weights(self, k: int) -> NDArray[np.float64]:
        """The weights ``w`` for size ``k`` (default given by :meth:`default_weights`).

        Parameters
        ----------
        k : int
            Number of labels (or documents).

        Returns
        -------
        w : ndarray of shape (k,)
            The constructor's ``w``, or the default weights when it is None.

        Raises
        ------
        ValueError
            If the constructor's ``w`` does not have shape ``(k,)`` (or, for
            :class:`PrecisionAtKLoss`, ``top > k``).
        """
        if self.w is None:
            return self.default_weights(k)
        if self.w.shape != (k,):
            raise ValueError(f"w must have shape ({k},), got {self.w.shape}")
        return self.w

    @abstractmethod
    def default_weights(self, k: int) -> NDArray[np.float64]: ...

    def apply_V(self, u: NDArray[np.float64]) -> NDArray[np.float64]:
        """:math:`Vu = -u`.

        Parameters
        ----------
        u : ndarray of shape (..., k)
            Points in the space of the encoded labels, batched over leading axes.

        Returns
        -------
        Vu : ndarray of shape (..., k)
            The linear map applied to each point.
        """
        return -u

    def psi(self, yhat: ArrayLike) -> NDArray[np.float64]:
        r"""The output encoding :math:`\psi(\pi)_{\pi_r} = w_r`: label ``pi[r]`` gets ``w[r]``.

        Parameters
        ----------
        yhat : array-like of shape (..., k)
            Rankings ``pi[rank] = label`` (permutations of ``0..k-1``), batched over leading axes.

        Returns
        -------
        psi : ndarray of shape (..., k)
            The permuted weights, float64.

        Raises
        ------
        ValueError
            If ``yhat`` does not hold permutations, or ``w`` does not have shape ``(k,)``.
        """
        y = check_permutations(yhat, "yhat")
        return permuted_weights(y, self.weights(y.shape[-1]))

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'w': w}``.
        """
        return {"w": self.w}


class SpearmanLoss(_PermutahedronLoss):
    r"""Squared distance between permuted weights (Spearman's distance by default).

    :math:`L(\hat\pi, \pi) = \tfrac12\|\psi(\hat\pi) - \psi(\pi)\|^2`. With the default
    :math:`w = (k, \dots, 1)` it is half the sum of squared rank differences (Spearman's
    distance). :math:`V = -I`, :math:`b = 0`, :math:`c(\pi) = \|w\|^2`; calibrated decoding
    is MAP on the permutahedron, i.e. sorting :math:`u` — the decoding the paper uses with
    the permutahedron (Appendix B.1).

    Parameters
    ----------
    w : array-like of shape (k,) or None, default=None
        The weights of the encoding :math:`\psi(\pi)_{\pi_r} = w_r` (label ``pi[r]`` gets
        ``w[r]``); None for :meth:`default_weights`.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import SpearmanLoss
    >>> SpearmanLoss().loss(np.array([0, 1, 2]), np.array([2, 1, 0]))  # ranks 0,1,2 vs 2,1,0
    np.float64(4.0)
    """

    name: ClassVar[str] = "spearman"

    def default_weights(self, k: int) -> NDArray[np.float64]:
        r"""The default weights :math:`w = (k, \dots, 1)`.

        Parameters
        ----------
        k : int
            Number of labels.

        Returns
        -------
        w : ndarray of shape (k,)
            ``k, k - 1, ..., 1`` as float64.
        """
        return np.arange(k, 0, -1, dtype=np.float64)

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = \|w\|^2`.

        Parameters
        ----------
        phi_y : ndarray of shape (..., k)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.sum(phi_y * phi_y, axis=-1)

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: :math:`\tfrac12\|\psi(\hat\pi) - \psi(\pi)\|^2`.

        Parameters
        ----------
        yhat : array-like of shape (..., k)
            Output structures.
        y : array-like of shape (..., k)
            Ground-truth structures, broadcastable against ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.

        Raises
        ------
        ValueError
            If ``yhat`` or ``y`` does not hold permutations of ``0..k-1``, or ``w`` does not
            have shape ``(k,)``.
        """
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

    Parameters
    ----------
    w : array-like of shape (k,) or None, default=None
        The discounts of the encoding :math:`\psi(\pi)_{\pi_r} = w_r` (label ``pi[r]`` gets
        ``w[r]``); None for :meth:`default_weights`.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import NDCGLoss
    >>> L = NDCGLoss()
    >>> relevance = np.array([[0.0, 1.0, 0.0], [0.0, 1.0, 0.0]])
    >>> L.loss(np.array([[1, 0, 2], [0, 2, 1]]), relevance)  # document 1 first, then last
    array([0. , 0.5])
    """

    name: ClassVar[str] = "ndcg"

    def default_weights(self, k: int) -> NDArray[np.float64]:
        r"""The default discounts :math:`w_r = 1/\log_2(1 + r)`, ranks from 1.

        Parameters
        ----------
        k : int
            Number of documents.

        Returns
        -------
        w : ndarray of shape (k,)
            The discounts, float64.
        """
        return 1.0 / np.log2(np.arange(2, k + 2, dtype=np.float64))

    def _norm(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        w = self.weights(y.shape[-1])
        return np.sum(-np.sort(-y, axis=-1) * w, axis=-1)

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        r"""The ground-truth encoding :math:`\varphi(y) = y / N(y)` (normalized by the ideal DCG).

        It is 0 when no document is relevant (:math:`y = 0`).

        Parameters
        ----------
        y : array-like of shape (..., m)
            Relevance scores of the ``m`` documents, batched over leading axes.

        Returns
        -------
        phi : ndarray of shape (..., m)
            The encoded ground truths, float64.

        Raises
        ------
        ValueError
            If a relevance score is negative, or ``w`` does not have shape ``(m,)``.
        """
        y = np.asarray(y, dtype=np.float64)
        if np.any(y < 0):
            raise ValueError("relevance scores must be non-negative")
        n = self._norm(y)[..., None]
        return np.divide(y, n, out=np.zeros_like(y), where=n > 0)

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = 1`.

        Parameters
        ----------
        phi_y : ndarray of shape (..., m)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.ones(phi_y.shape[:-1])

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: :math:`1 - \mathrm{DCG}(\pi, y) / N(y)`.

        It is 1 when no document is relevant.

        Parameters
        ----------
        yhat : array-like of shape (..., m)
            Rankings ``pi[rank] = document`` of the ``m`` documents.
        y : array-like of shape (..., m)
            Ground-truth relevance scores, with the same shape as ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.

        Raises
        ------
        ValueError
            If ``yhat`` does not hold permutations of ``0..m-1``, or ``w`` does not have
            shape ``(m,)``.
        """
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

    Parameters
    ----------
    top : int, default=1
        The cut-off ``k``: the number of top-ranked documents that count.

    Raises
    ------
    ValueError
        If ``top < 1``.

    Examples
    --------
    >>> import numpy as np
    >>> from projloss.target_losses import PrecisionAtKLoss
    >>> L = PrecisionAtKLoss(top=2)
    >>> L.loss(np.array([0, 1, 2]), np.array([1.0, 0.0, 1.0]))  # one of the 2 relevant in the top 2
    np.float64(0.5)
    """

    name: ClassVar[str] = "precision_at_k"

    def __init__(self, top: int = 1) -> None:
        if int(top) < 1:
            raise ValueError(f"precision at k needs k >= 1, got {top}")
        self.top = int(top)
        super().__init__(None)

    def default_weights(self, k: int) -> NDArray[np.float64]:
        r"""The weights :math:`w = (1, \dots, 1, 0, \dots, 0)` with ``top`` ones.

        Parameters
        ----------
        k : int
            Number of documents.

        Returns
        -------
        w : ndarray of shape (k,)
            The weights, float64.

        Raises
        ------
        ValueError
            If ``top > k``.
        """
        if self.top > k:
            raise ValueError(f"precision at {self.top} needs at least {self.top} documents")
        return (np.arange(k) < self.top).astype(np.float64)

    def _kprime(self, y: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.maximum(np.minimum(self.top, np.sum(y, axis=-1)), 1.0)

    def phi(self, y: ArrayLike) -> NDArray[np.float64]:
        r"""The ground-truth encoding :math:`\varphi(y)` = y / k'`, with :math:`k' = \min(k, |y|)`.

        :math:`k'` is at least 1 (:math:`\varphi(y) = 0` when no document is relevant).

        Parameters
        ----------
        y : array-like of shape (..., m)
            0/1 relevance labels of the ``m`` documents, batched over leading axes.

        Returns
        -------
        phi : ndarray of shape (..., m)
            The encoded ground truths, float64.

        Raises
        ------
        ValueError
            If the relevance labels are not 0/1.
        """
        y = np.asarray(y, dtype=np.float64)
        if not np.all((y == 0) | (y == 1)):
            raise ValueError("precision at k needs 0/1 relevance labels")
        return y / self._kprime(y)[..., None]

    def c(self, phi_y: NDArray[np.float64]) -> NDArray[np.float64]:
        r"""The constant :math:`c(y) = 1`.

        Parameters
        ----------
        phi_y : ndarray of shape (..., m)
            Encoded ground truths :math:`\varphi(y)`.

        Returns
        -------
        c : ndarray of shape (...)
            :math:`c(y)` for each leading index.
        """
        return np.ones(phi_y.shape[:-1])

    def loss(self, yhat: ArrayLike, y: ArrayLike) -> NDArray[np.float64]:
        r"""The direct definition: :math:`1 - |\text{top-}k(\pi) \cap y| / k'`.

        Parameters
        ----------
        yhat : array-like of shape (..., m)
            Rankings ``pi[rank] = document`` of the ``m`` documents.
        y : array-like of shape (..., m)
            Ground-truth relevance scores, with the same shape as ``yhat``.

        Returns
        -------
        loss : ndarray of shape (...)
            :math:`L(\hat y, y)` for each leading index, float64.

        Raises
        ------
        ValueError
            If ``yhat`` does not hold permutations of ``0..m-1``.
        """
        pi = check_permutations(yhat, "yhat")
        y = np.asarray(y, dtype=np.float64)
        hits = np.sum(np.take_along_axis(y, pi[..., : self.top], axis=-1), axis=-1)
        return 1.0 - hits / self._kprime(y)

    def get_params(self) -> dict[str, Any]:
        """Constructor parameters (for reprs, configs and logging).

        Returns
        -------
        params : dict
            ``{'top': top}``.
        """
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
    """Instantiate the target loss registered as ``name`` (instances pass through).

    Parameters
    ----------
    name : str or TargetLoss
        A key of :data:`TARGET_LOSSES`, or a target loss, returned as is.
    **params : dict
        Constructor parameters of the registered class (ignored for an instance).

    Returns
    -------
    target_loss : TargetLoss
        The target loss.

    Raises
    ------
    ValueError
        If ``name`` is not a registered target loss.

    Examples
    --------
    >>> from projloss.target_losses import get_target_loss
    >>> get_target_loss("absolute", n_classes=5)
    AbsoluteLoss(n_classes=5)
    """
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
