r"""The Birkhoff polytope of doubly stochastic matrices (paper §4, "Birkhoff polytope").

.. math::
    \mathcal B_k = \{P \in \mathbb R^{k\times k} : P\mathbf 1 = \mathbf 1,\;
    P^\top\mathbf 1 = \mathbf 1,\; P \ge 0\},

the marginal polytope of permutations (label ranking, paper §6): a ranking ``y`` with
``y[rank] = label`` is encoded as the permutation matrix ``Y[rank, label] = 1``, and the
vertices of :math:`\mathcal B_k` are exactly the :math:`k!` permutation matrices.

- Euclidean projection :math:`\operatorname{argmin}_{P \in \mathcal B_k}
  \tfrac12\|P - \theta\|^2`: the quadratically regularized optimal transport problem with
  cost :math:`-\theta` (Blondel, Seguy & Rolet 2018), solved in its semi-dual.
- KL projection :math:`\operatorname{argmin}_{P\in\mathcal B_k} \mathrm{KL}(P,
  e^{\theta-1})`: entropic optimal transport, i.e. the Sinkhorn scaling
  :math:`P = \operatorname{diag}(e^\alpha) e^{\theta} \operatorname{diag}(e^\beta)`, also
  solved in its semi-dual.

Both are solved for all samples at once by a batched Newton method with
:math:`\varepsilon`-scaling (see :mod:`projloss.sets._birkhoff_solvers`), to a
max-norm marginal violation ``tol``; a :class:`~sklearn.exceptions.ConvergenceWarning`
is emitted when some sample does not reach it within ``max_iter`` iterations. Cost per
Newton iteration: :math:`O(k^2\log k)` (Euclidean) or :math:`O(k^2)` (KL) plus a
:math:`k\times k` solve, per sample; about 5-15 iterations for
:math:`\theta \sim \mathcal N(0, 2^2)` at :math:`k = 11`, a few tens for
:math:`|\theta| \sim 10^3`.

- MAP: the linear assignment problem
  :math:`\max_\sigma \sum_i \theta_{i\sigma(i)}`, by the Hungarian algorithm
  (:func:`scipy.optimize.linear_sum_assignment`); assignments within
  ``1e-7 * max|theta|`` of the best are tied and the lexicographically smallest is
  returned (:mod:`._assignment`), so that the decoded ranking does not depend on the last
  bits of the scores.

The array-API oracles (``xp_project``, ``xp_project_jvp``, ``xp_argmax``: PyTorch
tensors on the CPU or a GPU, NumPy arrays) run the same Newton method batched on the
device, with a per-sample convergence mask (:mod:`._birkhoff_xp`); their Jacobian is
obtained by implicit differentiation of the optimality conditions (a batched
:math:`k\times k` solve), and their MAP oracle solves the assignments on the host.
"""

from __future__ import annotations

import itertools
import math
import warnings
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning

from .._validation import check_array
from . import _birkhoff_solvers, _birkhoff_xp
from ._assignment import canonical_assignment
from .base import ConvexSet


class Birkhoff(ConvexSet):
    r"""The Birkhoff polytope :math:`\mathcal B_k` of doubly stochastic ``k x k`` matrices.

    Parameters
    ----------
    tol : float, default=1e-9
        Target accuracy of the projections: the largest violation of a row or column sum
        (max-norm). Column sums hold to rounding by construction; ``tol`` bounds the rows.
        Values below about ``1e-13`` cannot be reached in float64.
    max_iter : int, default=200
        Maximum number of Newton iterations (per :math:`\varepsilon`-scaling stage). A
        :class:`~sklearn.exceptions.ConvergenceWarning` reports samples left above ``tol``.
    warm_start : bool, default=False
        Start each projection from the dual variables of the previous one (same geometry
        and batch shape). Helps when the same batch is projected again at a nearby
        ``theta`` (successive iterations of a training loop): about 2-3x fewer Newton
        iterations. Samples that do not converge quickly from the warm start are restarted
        cold, so results still meet ``tol`` and agree with a cold start up to solver
        accuracy, but they depend (below ``tol``) on the call history, and one instance
        should not be shared between threads.

    Raises
    ------
    ValueError
        If ``tol`` is not a positive finite number or ``max_iter`` not a positive integer.

    Warns
    -----
    ConvergenceWarning
        From :meth:`project` and :meth:`xp_project` (either geometry), when some
        sample's marginal violation is still above ``tol`` after ``max_iter`` Newton
        iterations.

    Examples
    --------
    >>> import numpy as np
    >>> s = Birkhoff()
    >>> theta = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 1.5], [0.0, 1.5, 1.0]])
    >>> P = s.project(theta)
    >>> print(np.round(P, 4))
    [[1.   0.   0.  ]
     [0.   0.25 0.75]
     [0.   0.75 0.25]]
    >>> print(np.round(P.sum(axis=0), 6), np.round(P.sum(axis=1), 6))
    [1. 1. 1.] [1. 1. 1.]
    >>> print(s.decode(s.argmax(theta)))  # the best assignment: rank -> label
    [0 2 1]
    """

    name: ClassVar[str] = "birkhoff"
    matrix: ClassVar[bool] = True
    exact_projection: ClassVar[bool] = False  # Sinkhorn / Newton iterations to ``tol``
    encodings: ClassVar[tuple[str, ...]] = ("permutation_matrix",)
    decodes: ClassVar[tuple[str, ...]] = ("permutation_matrix",)
    permutation_outputs: ClassVar[bool] = True

    def __init__(self, tol: float = 1e-9, max_iter: int = 200, warm_start: bool = False):
        if not (isinstance(tol, int | float) and math.isfinite(tol) and tol > 0):
            raise ValueError(f"tol must be a positive finite number, got {tol!r}")
        if not (isinstance(max_iter, int | np.integer) and max_iter >= 1):
            raise ValueError(f"max_iter must be a positive integer, got {max_iter!r}")
        self.tol = float(tol)
        self.max_iter = int(max_iter)
        self.warm_start = bool(warm_start)
        self._last: dict[str, tuple[tuple[int, ...], NDArray[np.float64]]] = {}

    def get_params(self) -> dict[str, Any]:
        """The constructor parameters (for the repr, ``==``, configs and logging).

        Returns
        -------
        dict of str to Any
            ``{"tol": tol, "max_iter": max_iter, "warm_start": warm_start}``.
        """
        return {"tol": self.tol, "max_iter": self.max_iter, "warm_start": self.warm_start}

    # ------------------------------------------------------------------ projections
    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._project(theta, "euclidean")

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        return self._project(theta, "kl")

    def _project(self, theta: NDArray[np.float64], geometry: str) -> NDArray[np.float64]:
        shape = theta.shape
        k = shape[-1]
        flat = theta.reshape(-1, k, k)
        init = None
        if self.warm_start and geometry in self._last and self._last[geometry][0] == shape:
            init = self._last[geometry][1]
        P, alpha, info = _birkhoff_solvers.solve(flat, geometry, self.tol, self.max_iter, init)
        if self.warm_start:
            self._last[geometry] = (shape, alpha)
        if not info.converged.all():
            bad = int(np.sum(~info.converged))
            warnings.warn(
                f"Birkhoff {geometry} projection did not converge: marginal violation "
                f"{info.violation.max():.3e} > tol={self.tol:.1e} on {bad} of {len(flat)} "
                f"samples after max_iter={self.max_iter} Newton iterations; increase "
                "max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )
        return P.reshape(shape)

    # ------------------------------------------------------------------ MAP
    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        shape = theta.shape
        k = shape[-1]
        flat = theta.reshape(-1, k, k)
        out = np.zeros_like(flat)
        # One Hungarian solve per sample (a Python loop, acceptable here because MAP is used
        # at prediction/decoding time, not inside the training loop), near-ties broken
        # canonically
        cols = canonical_assignment(flat)
        out[np.arange(len(flat))[:, None], np.arange(k), cols] = 1.0
        return out.reshape(shape)

    # ------------------------------------------------------------------ array-API oracles
    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        r"""The projection for any array-API library: the engine's semi-dual Newton
        method with :math:`\varepsilon`-scaling, batched over all samples with a
        per-sample convergence mask, on ``theta``'s device and in its dtype
        (:func:`._birkhoff_xp.xp_birkhoff_solve`). Stops at ``tol`` in float64 and at
        ``max(tol, 8 k eps)`` in a lower precision (about 1e-5 at ``k = 11`` in float32,
        :func:`._birkhoff_xp.effective_tol`); a
        :class:`~sklearn.exceptions.ConvergenceWarning` reports samples left above it
        after ``max_iter`` Newton iterations (one host read of the violations at the
        end). ``warm_start`` is not used here (every call starts cold)."""
        shape = tuple(theta.shape)
        k = shape[-1]
        n = math.prod(shape[:-2])
        P, info = _birkhoff_xp.xp_birkhoff_solve(
            xp, xp.reshape(theta, (n, k, k)), geometry, self.tol, self.max_iter
        )
        bad = int(xp.sum(xp.astype(~info.converged, xp.int64))) if n else 0
        if bad:
            worst = float(xp.max(info.violation))
            warnings.warn(
                f"Birkhoff {geometry} projection did not converge: marginal violation "
                f"{worst:.3e} > tol={info.tol:.1e} on {bad} of {n} samples after "
                f"max_iter={self.max_iter} Newton iterations; increase max_iter or tol",
                ConvergenceWarning,
                stacklevel=3,
            )
        return xp.reshape(P, shape)

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        r"""Implicit differentiation of the optimality conditions at ``u``:
        :math:`J t = W \odot (t + a\mathbf 1^\top + \mathbf 1 b^\top)` with
        :math:`W = u` (KL) or the support indicator of ``u`` (Euclidean) and
        :math:`(a, b)` from a batched :math:`k\times k` solve that restores the zero
        marginals (:func:`._birkhoff_xp.xp_birkhoff_jvp`); symmetric. ``theta`` is not
        used."""
        shape = tuple(u.shape)
        k = shape[-1]
        n = math.prod(shape[:-2])
        out = _birkhoff_xp.xp_birkhoff_jvp(
            xp, xp.reshape(u, (n, k, k)), xp.reshape(tangent, (n, k, k)), geometry
        )
        return xp.reshape(out, shape)

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        """The engine's :meth:`argmax`, run on the host: the batch is copied to the CPU
        once (float64), the assignments are solved there by the Hungarian algorithm with
        the canonical tie-breaking (:func:`._assignment.canonical_assignment`, a loop
        over samples), and the permutation matrices are copied back to ``theta``'s
        device and dtype. Equal to :meth:`argmax` on the same values."""
        from .._xp import device, to_numpy

        out = self.argmax(to_numpy(theta).astype(np.float64))
        return xp.asarray(out, dtype=theta.dtype, device=device(theta))

    # ------------------------------------------------------------------ encoding
    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        """Permutation matrices ``Y[..., rank, label] = 1`` of rankings ``y[..., rank] = label``.

        ``y`` has shape ``(..., k)`` and each ``y[...]`` must be a permutation of
        ``0, ..., k-1``.

        Parameters
        ----------
        y : array-like of int, shape (..., k)
            Rankings: each row a permutation of ``0..k-1``, ``y[..., rank]`` the label at
            that rank (integer-valued floats and booleans accepted).
        k : int or None, default=None
            The size; ``None``: ``y.shape[-1]``, which it must equal otherwise.

        Returns
        -------
        ndarray of shape (..., k, k), dtype float64
            The permutation matrices, ``Y[..., rank, y[..., rank]] = 1``.

        Raises
        ------
        ValueError
            If ``y`` is a scalar or has an empty last axis, its size differs from ``k``,
            it holds non-integer values, or a row is not a permutation of ``0..k-1``.
        """
        arr = np.asarray(y)
        if arr.ndim < 1:
            raise ValueError("y must have shape (..., k) (a permutation per row), got a scalar")
        if arr.shape[-1] < 1:
            raise ValueError(f"y must have shape (..., k) with k >= 1, got {arr.shape}")
        if k is not None and arr.shape[-1] != k:
            raise ValueError(f"y must have shape (..., {k}), got {arr.shape}")
        k = arr.shape[-1]
        if arr.dtype.kind not in "iub":
            if arr.dtype.kind != "f" or not np.all(np.isfinite(arr) & (arr == np.round(arr))):
                raise ValueError("y must contain integer labels (a permutation per row)")
        labels = arr.astype(np.int64)
        if not np.array_equal(np.sort(labels, axis=-1), np.broadcast_to(np.arange(k), arr.shape)):
            raise ValueError(f"each row of y must be a permutation of 0..{k - 1}")
        return (labels[..., None] == np.arange(k)).astype(np.float64)

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        """Permutation matrix ``[rank, label]`` -> ranking ``y[rank] = label`` (int64)."""
        return xp.argmax(v, axis=-1)

    def decode(self, v: ArrayLike) -> NDArray[np.int64]:
        """Ranking ``y[..., rank] = argmax_label v[..., rank, label]`` (row argmax).

        Parameters
        ----------
        v : array-like of shape (..., k, k)
            Permutation matrices (e.g. from :meth:`argmax`). Not checked to be vertices:
            any matrix gets the argmax of each row (ties: the first label), which is a
            permutation only for a vertex.

        Returns
        -------
        ndarray of shape (..., k), dtype int64
            The rankings ``y[..., rank] = label``.

        Raises
        ------
        ValueError
            If ``v`` is not a finite numeric array of shape ``(..., k, k)``.
        """
        arr = check_array(v, name="v", matrix=True)
        return np.argmax(arr, axis=-1).astype(np.int64)

    def vertices(self, k: int) -> NDArray[np.float64]:
        """All ``k!`` permutation matrices, shape ``(k!, k, k)``.

        Parameters
        ----------
        k : int
            The side of the matrices (small: ``k!`` vertices).

        Returns
        -------
        ndarray of shape (k!, k, k), dtype float64
            The permutation matrices, in lexicographic order of their permutations.
        """
        perms = np.array(list(itertools.permutations(range(k))), dtype=np.int64)
        return np.eye(k)[perms]

    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]:
        rows = np.abs(u.sum(axis=-1) - 1.0).max(axis=-1) <= atol
        cols = np.abs(u.sum(axis=-2) - 1.0).max(axis=-1) <= atol
        return rows & cols & np.all(u >= -atol, axis=(-2, -1))
