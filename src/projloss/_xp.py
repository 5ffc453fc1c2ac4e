r"""The array-library side of the sets' oracles: one algorithm for every array library.

Each set's tensor algorithm lives in the set's own module (``projloss/sets/<set>.py``),
written once against the `array API standard <https://data-apis.org/array-api/>`_
through :mod:`array_api_compat`: the same function runs on PyTorch tensors (CPU or
CUDA, float32 or float64, any leading batch axes) and on NumPy arrays, and another
library that array-api-compat wraps (CuPy, JAX) can be added without copying the
algorithms again. The NumPy/numba kernels of the sets stay the CPU fast path of
:meth:`~projloss.sets.base.ConvexSet.project`; the array-API versions are bound to them
by tests on the same inputs.

The standard leaves out a few primitives that the algorithms need (a numerically stable
``logsumexp``, a cumulative maximum, a batched linear solve); each is
here, with one branch per library and no other library-specific code in the sets.

Examples
--------
>>> import numpy as np
>>> from projloss._xp import namespace, logsumexp
>>> x = np.array([[0.0, np.log(3.0)], [1000.0, 1000.0]])
>>> xp = namespace(x)
>>> print(np.round(np.asarray(logsumexp(xp, x, axis=-1)), 6))
[   1.386294 1000.693147]
"""

from __future__ import annotations

from typing import Any

import numpy as np


def namespace(*arrays: Any) -> Any:
    """The array-API namespace of ``arrays`` (:func:`array_api_compat.array_namespace`);
    mixing libraries raises ``TypeError``."""
    import array_api_compat

    return array_api_compat.array_namespace(*arrays)


def is_torch(x: Any) -> bool:
    """True when ``x`` is a :class:`torch.Tensor` (without importing torch)."""
    import array_api_compat

    return array_api_compat.is_torch_array(x)


def device(x: Any) -> Any:
    """The device of ``x`` (``"cpu"`` for NumPy)."""
    import array_api_compat

    return array_api_compat.device(x)


def to_numpy(x: Any) -> np.ndarray:
    """``x`` as a NumPy array, copied to the host when it lives on a device."""
    if is_torch(x):
        return x.detach().cpu().numpy()
    return np.asarray(x)


def logsumexp(xp: Any, x: Any, axis: int = -1, keepdims: bool = False) -> Any:
    r""":math:`\log\sum_i e^{x_i}` along ``axis``, shifted by the maximum (never
    overflows; ``-inf`` for a row of ``-inf``)."""
    m = xp.max(x, axis=axis, keepdims=True)
    m = xp.where(xp.isfinite(m), m, xp.zeros_like(m))
    out = xp.log(xp.sum(xp.exp(x - m), axis=axis, keepdims=True)) + m
    return out if keepdims else xp.squeeze(out, axis=axis)


def softmax(xp: Any, x: Any, axis: int = -1) -> Any:
    r""":math:`e^{x_i}/\sum_j e^{x_j}` along ``axis``, after subtracting the maximum."""
    e = xp.exp(x - xp.max(x, axis=axis, keepdims=True))
    return e / xp.sum(e, axis=axis, keepdims=True)


def cummax(xp: Any, x: Any, axis: int = -1) -> Any:
    """Cumulative maximum along ``axis`` (not in the array API standard)."""
    if is_torch(x):
        return x.cummax(dim=axis).values
    return np.maximum.accumulate(np.asarray(x), axis=axis)


def solve(xp: Any, a: Any, b: Any) -> Any:
    """The batched linear solve ``a x = b`` (``b``: (..., n) or (..., n, m))."""
    vector = b.ndim == a.ndim - 1
    if is_torch(a):
        import torch

        x = torch.linalg.solve(a, b[..., None] if vector else b)
    else:
        x = np.linalg.solve(np.asarray(a), np.asarray(b)[..., None] if vector else b)
    return x[..., 0] if vector else x
