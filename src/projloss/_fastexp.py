r"""A vectorizable exponential for the compiled kernels.

Without Intel's SVML, numba compiles ``np.exp`` in a loop to one call of the C library's
scalar ``exp`` per entry (~4 ns), which the loop vectorizer cannot batch: the softmax
kernel spent most of its time there, and XLA's vectorized exponential made
``jax.nn.softmax`` up to 4x faster. :func:`exp_fast` is branch-free straight-line
arithmetic that LLVM vectorizes (AVX2 / AVX-512) in the kernels' loops.

The KL projections take it of numbers :math:`d \le 0` (an entry minus its row or column
maximum, or :math:`\min(\theta - 1, 0)`), or of entries already known to lie in
:math:`[-300, 300]` (the softmax then skips the shift by the row maximum). Algorithm
(Cody & Waite 1980; Tang 1989): :math:`d = n\ln 2 + r` with
:math:`n = \operatorname{round}(d/\ln 2)`, so :math:`|r| \le \ln 2 / 2`; :math:`\ln 2`
split in a 32-bit head (``n * ln2_hi`` exact for :math:`|n| < 2^{21}`) and a tail, so
:math:`r` is exact to ~1e-20; :math:`e^r` by its degree-13 Taylor polynomial in Horner
form with fused multiply-adds (truncation :math:`(\ln 2/2)^{14}/14! < 5\cdot10^{-18}`,
below half an ulp); then :math:`e^d = e^r\, 2^{n_1} 2^{n_2}` with :math:`n_1 + n_2 = n`,
halves built directly as IEEE-754 bit patterns, so that results in the subnormal range
(:math:`d < -708.4`) are right too and :math:`d < -745.2` gives 0. Measured against the
C library over :math:`[-745, 300]`: within 1 ulp (``tests/projloss/test_fastexp.py``);
:math:`e^0 = 1` exactly. No ``fastmath``: the result does not depend on the CPU (the fused
multiply-adds are LLVM's ``llvm.fma``, exactly rounded in hardware or software, nothing is
reassociated), unlike the C library's or numpy's SIMD exponentials.
"""

from __future__ import annotations

import numba
import numpy as np
from llvmlite import ir
from numba import types
from numba.core import cgutils
from numba.extending import intrinsic

_LOG2E = 1.4426950408889634
#: ln 2 = _LN2_HI + _LN2_LO, _LN2_HI with 32 significant bits (fdlibm's split).
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
#: Below this e^d rounds to 0 (half the smallest subnormal is e^-745.13).
_FLOOR = -746.0
# 1/j!, j = 2..13
_C2 = 1.0 / 2.0
_C3 = 1.0 / 6.0
_C4 = 1.0 / 24.0
_C5 = 1.0 / 120.0
_C6 = 1.0 / 720.0
_C7 = 1.0 / 5040.0
_C8 = 1.0 / 40320.0
_C9 = 1.0 / 362880.0
_C10 = 1.0 / 3628800.0
_C11 = 1.0 / 39916800.0
_C12 = 1.0 / 479001600.0
_C13 = 1.0 / 6227020800.0


@intrinsic
def _as_float64(typingctx, bits):  # type: ignore[no-untyped-def]
    """Reinterpret the bits of an int64 as a float64 (an LLVM ``bitcast``)."""
    sig = types.float64(types.int64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        return builder.bitcast(args[0], ir.DoubleType())

    return sig, codegen


@intrinsic
def _fma(typingctx, a, b, c):  # type: ignore[no-untyped-def]
    """``a * b + c`` rounded once (LLVM's ``llvm.fma``: the same result on every CPU, in
    hardware where there is an FMA unit)."""
    sig = types.float64(types.float64, types.float64, types.float64)

    def codegen(context, builder, signature, args):  # type: ignore[no-untyped-def]
        d = ir.DoubleType()
        fn = cgutils.get_or_insert_function(
            builder.module, ir.FunctionType(d, [d] * 3), "llvm.fma.f64"
        )
        return builder.call(fn, args)

    return sig, codegen


@numba.njit(cache=True, inline="always", error_model="numpy")
def exp_fast(d: float) -> float:
    """:math:`e^d` (see the module docstring), vectorizable; exact to 2 ulp for
    :math:`d \\le 700` (above, :math:`2^n` would need more than two normal halves)."""
    d = max(d, _FLOOR)
    nf = np.floor(d * _LOG2E + 0.5)
    r = (d - nf * _LN2_HI) - nf * _LN2_LO
    p = _fma(r, _C13, _C12)
    p = _fma(r, p, _C11)
    p = _fma(r, p, _C10)
    p = _fma(r, p, _C9)
    p = _fma(r, p, _C8)
    p = _fma(r, p, _C7)
    p = _fma(r, p, _C6)
    p = _fma(r, p, _C5)
    p = _fma(r, p, _C4)
    p = _fma(r, p, _C3)
    p = _fma(r, p, _C2)
    p = _fma(r, p, 1.0)
    p = _fma(r, p, 1.0)
    n = np.int64(nf)  # in [-1077, 1010] for d <= 700
    n1 = n >> 1  # floor(n / 2): both halves in [-539, 505], normal powers of two
    n2 = n - n1
    return p * _as_float64((n1 + 1023) << 52) * _as_float64((n2 + 1023) << 52)


@numba.njit(cache=True, inline="always", error_model="numpy")
def row_max(v) -> float:  # type: ignore[no-untyped-def]
    """Largest entry of a 1-D array (size >= 1), eight running maxima (vectorizable)."""
    k = v.size
    m0 = m1 = m2 = m3 = m4 = m5 = m6 = m7 = v[0]
    i = 0
    while i + 8 <= k:
        m0 = max(m0, v[i])
        m1 = max(m1, v[i + 1])
        m2 = max(m2, v[i + 2])
        m3 = max(m3, v[i + 3])
        m4 = max(m4, v[i + 4])
        m5 = max(m5, v[i + 5])
        m6 = max(m6, v[i + 6])
        m7 = max(m7, v[i + 7])
        i += 8
    while i < k:
        m0 = max(m0, v[i])
        i += 1
    return max(max(max(m0, m1), max(m2, m3)), max(max(m4, m5), max(m6, m7)))


@numba.njit(cache=True, inline="always", error_model="numpy")
def row_sum(v) -> float:  # type: ignore[no-untyped-def]
    """Sum of a 1-D array in a fixed order (eight running sums, then pairwise): the
    same rounding on every CPU, and vectorizable without ``fastmath``."""
    k = v.size
    s0 = s1 = s2 = s3 = s4 = s5 = s6 = s7 = 0.0
    i = 0
    while i + 8 <= k:
        s0 += v[i]
        s1 += v[i + 1]
        s2 += v[i + 2]
        s3 += v[i + 3]
        s4 += v[i + 4]
        s5 += v[i + 5]
        s6 += v[i + 6]
        s7 += v[i + 7]
        i += 8
    while i < k:
        s0 += v[i]
        i += 1
    return ((s0 + s1) + (s2 + s3)) + ((s4 + s5) + (s6 + s7))


@numba.njit(cache=True, inline="always", error_model="numpy")
def div_by(a: float, s: float, y: float) -> float:
    r""":math:`a / s` correctly rounded (the same bits as ``a / s``), given
    ``y = 1.0 / s``: two multiplications and two fused multiply-adds instead of a
    division, which is several times slower than a multiplication in vector registers
    (a row's entries divided by its sum: the normalization of a softmax).

    :math:`q = \mathrm{RN}(a y)` is within one ulp of :math:`a/s`; the residual
    :math:`e = \mathrm{RN}(a - q s)` (one FMA) is then exact, and
    :math:`\mathrm{RN}(q + e y)` (one FMA) is :math:`\mathrm{RN}(a/s)` (Markstein 1990;
    Muller et al., *Handbook of Floating-Point Arithmetic*, 2nd ed. 2018, §4.7.2),
    provided nothing underflows: the caller ensures :math:`a = 0` or
    :math:`a \ge 2^{-900}`, and that :math:`s` and :math:`a/s` lie in
    :math:`[2^{-900}, 2^{900}]` (so ``y`` and ``q`` are normal numbers and the residual's
    last bit, about :math:`a \cdot 2^{-104}`, is not below the smallest subnormal).
    The softmax's unshifted rows do: entries in :math:`[e^{-300}, e^{300}]`, quotients
    in :math:`[e^{-600}/k, 1]`. Checked against ``a / s`` bit for bit in
    ``tests/projloss/test_fastexp.py``.

    Examples
    --------
    >>> 3.0 * (1.0 / 5.0), div_by(3.0, 5.0, 1.0 / 5.0), 3.0 / 5.0
    (0.6000000000000001, 0.6, 0.6)
    """
    q = a * y
    return _fma(_fma(-q, s, a), y, q)


# The loops below are functions of their own: inlined into a larger loop nest, LLVM does
# not vectorize them.
@numba.njit(cache=True, error_model="numpy")
def exp_inplace(a) -> None:  # type: ignore[no-untyped-def]
    """``a[:] = exp(a)`` for a 1-D contiguous array of numbers <= 700, vectorized."""
    for j in range(a.size):
        a[j] = exp_fast(a[j])


@numba.njit(cache=True, error_model="numpy")
def exp_into(a, out) -> None:  # type: ignore[no-untyped-def]
    """``out[:] = exp(a)`` for 1-D contiguous arrays (not overlapping), entries <= 700."""
    for j in range(a.size):
        out[j] = exp_fast(a[j])


@numba.njit(cache=True, error_model="numpy")
def exp_into_counted(a, out, bound: float) -> int:  # type: ignore[no-untyped-def]
    """:func:`exp_into` and :func:`count_outside` in one pass: ``out[:] = exp(a)``
    (meaningless where ``|a| > bound``: over 700 or not finite) and the number of
    entries of ``a`` outside ``[-bound, bound]``."""
    c = 0
    for j in range(a.size):
        v = a[j]
        c += 0 if abs(v) <= bound else 1
        out[j] = exp_fast(v)
    return c


@numba.njit(cache=True, error_model="numpy")
def count_outside(a, bound: float) -> int:  # type: ignore[no-untyped-def]
    """Number of entries of ``a`` that are not in ``[-bound, bound]`` (NaN included), in
    one vectorized pass (an integer count: no floating-point reduction to reorder)."""
    c = 0
    for j in range(a.size):
        c += 0 if abs(a[j]) <= bound else 1
    return c
