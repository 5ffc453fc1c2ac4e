"""How projloss compiles its per-row kernels (numba).

The projections whose exact algorithms are sequential *within* a row -- the threshold
scans of sparsemax and of the capped simplex, pool adjacent violators -- run as compiled
loops over the rows of a ``(n, k)`` array: one pass per row over data that stays in
cache, no temporaries, no Python loop over samples. Whole-batch primitives that numpy
already does best (``np.sort``, ``np.argsort``) stay in numpy and are passed in.

Every kernel is compiled with ``cache=True`` (the machine code is written next to the
module, in ``__pycache__``, or under ``NUMBA_CACHE_DIR``): the first call in a fresh
environment compiles it (about 0.3-1 s per kernel), later processes load it from the
cache (milliseconds). ``error_model="numpy"``: a division by zero gives inf/nan instead
of raising, which keeps the inner loops free of checks (the kernels never rely on it).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TypeVar

import numba

F = TypeVar("F", bound=Callable)


def kernel(fn: F | None = None, *, reassoc: bool = False) -> F | Callable[[F], F]:
    """Compile ``fn`` in nopython mode, cached on disk, releasing the GIL.

    ``@kernel(reassoc=True)`` lets LLVM reorder floating-point sums (``fastmath`` flags
    ``reassoc`` and ``nsz`` only, no assumption about NaN or inf), which vectorizes
    reductions such as a sum of positive terms: only the rounding of such sums changes.
    """
    options = {"cache": True, "nogil": True, "error_model": "numpy"}
    if reassoc:
        options["fastmath"] = {"reassoc", "nsz"}
    if fn is None:
        return numba.njit(**options)  # type: ignore[return-value]
    return numba.njit(**options)(fn)  # type: ignore[return-value]
