"""The reference implementations projloss is measured against, side by side.

Two kinds:

- **numpy primitives** (``kind="primitive"``): the single numpy operation a cheap
  projection is built from, so the ratio ``time(projloss) / time(primitive)`` says how
  much the projection costs on top of its unavoidable core (issue 7 asks for <= 3x):
  ``np.copy`` (identity), ``np.maximum`` (clip at 0), ``np.clip`` (cube), ``np.exp``
  (every KL projection of an orthant or cube is one exponential), ``np.sort`` along the
  last axis (sparsemax and the capped simplex are sort-based), and a max-subtracted
  ``exp / sum`` softmax (the KL projection onto the simplex *is* a softmax).
- **library solvers** (``kind="solver"``): the same projection computed by a well-known
  library, called once per sample as a user would without projloss: scikit-learn's
  ``isotonic_regression`` for the permutahedron and the order simplex, POT's
  ``ot.sinkhorn(..., method="sinkhorn_log")`` and ``ot.smooth.smooth_ot_semi_dual(...,
  reg_type="l2")`` for the Birkhoff polytope. Reported as a speed-up
  ``time(library) / time(projloss)``, with the largest difference of the results.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

Array = np.ndarray


@dataclass(frozen=True)
class Baseline:
    label: str  #: column header, e.g. "np.sort"
    fn: Callable[[Array], Array]  #: computes on a whole batch theta
    kind: str = "primitive"  #: "primitive" (cost ratio) or "solver" (speed-up)
    #: a Python loop over samples: timed on a subsample, rate extrapolated
    per_sample: bool = False


# ------------------------------------------------------------------ numpy primitives
def np_copy(theta: Array) -> Array:
    return theta.copy()


def np_maximum0(theta: Array) -> Array:
    return np.maximum(theta, 0.0)


def np_clip01(theta: Array) -> Array:
    return np.clip(theta, 0.0, 1.0)


def np_exp(theta: Array) -> Array:
    return np.exp(theta)


def np_sort(theta: Array) -> Array:
    return np.sort(theta, axis=-1)


def np_softmax(theta: Array) -> Array:
    """The textbook numpy softmax along the last axis (max-subtracted, exp, sum, divide)."""
    e = np.exp(theta - theta.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


COPY = Baseline("np.copy", np_copy)
MAXIMUM = Baseline("np.maximum", np_maximum0)
CLIP = Baseline("np.clip", np_clip01)
EXP = Baseline("np.exp", np_exp)
SORT = Baseline("np.sort", np_sort)
SOFTMAX = Baseline("softmax", np_softmax)


# ------------------------------------------------------------------ scikit-learn loops
def _iso_decreasing(y: Array) -> Array:
    from sklearn.isotonic import isotonic_regression

    return isotonic_regression(y, increasing=False)


def sklearn_permutahedron(theta: Array, w: Array | None = None) -> Array:
    """Euclidean projection onto P(w), one sample at a time, PAV by scikit-learn."""
    k = theta.shape[-1]
    w = np.arange(k, 0, -1, dtype=float) if w is None else w
    out = np.empty_like(theta)
    for i, t in enumerate(theta.reshape(-1, k)):
        order = np.argsort(-t, kind="stable")
        s = t[order]
        out.reshape(-1, k)[i, order] = s - _iso_decreasing(s - w)
    return out


def sklearn_order_simplex(theta: Array, geometry: str = "euclidean") -> Array:
    """Projection onto the order simplex, one sample at a time, PAV by scikit-learn."""
    k = theta.shape[-1]
    out = np.empty_like(theta)
    for i, t in enumerate(theta.reshape(-1, k)):
        v = _iso_decreasing(t)
        out.reshape(-1, k)[i] = (
            np.clip(v, 0.0, 1.0) if geometry == "euclidean" else np.exp(np.minimum(v - 1.0, 0))
        )
    return out


SKLEARN_PERM = Baseline(
    "sklearn isotonic loop", sklearn_permutahedron, kind="solver", per_sample=True
)


def sklearn_order(geometry: str) -> Baseline:
    return Baseline(
        "sklearn isotonic loop",
        lambda t: sklearn_order_simplex(t, geometry),
        kind="solver",
        per_sample=True,
    )


# ------------------------------------------------------------------ POT loops
def pot_birkhoff(theta: Array, geometry: str, stop: float) -> Array:
    """POT once per sample, cost M = -theta, reg = 1: smooth OT semi-dual with l2
    regularization (Euclidean) or log-domain Sinkhorn (KL)."""
    import ot

    k = theta.shape[-1]
    ones = np.ones(k)
    flat = theta.reshape(-1, k, k)
    out = np.empty_like(flat)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for i, t in enumerate(flat):
            if geometry == "euclidean":
                out[i] = ot.smooth.smooth_ot_semi_dual(
                    ones, ones, -t, reg=1.0, reg_type="l2", stopThr=stop, numItermax=100000
                )
            else:
                out[i] = ot.sinkhorn(
                    ones, ones, -t, reg=1.0, method="sinkhorn_log", stopThr=stop, numItermax=100000
                )
    return out.reshape(theta.shape)


def pot(geometry: str, stop: float) -> Baseline:
    name = "POT smooth_ot_semi_dual l2" if geometry == "euclidean" else "POT sinkhorn_log"
    return Baseline(
        f"{name} loop (stopThr={stop:g})",
        lambda t: pot_birkhoff(t, geometry, stop),
        kind="solver",
        per_sample=True,
    )


def marginal_violation(P: Array) -> float:
    """Max-norm violation of the row and column sums (batched k x k matrices)."""
    return float(max(np.abs(P.sum(-1) - 1).max(), np.abs(P.sum(-2) - 1).max()))
