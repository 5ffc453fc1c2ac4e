r"""The Bayesian hierarchical correlated t-test, by deterministic quadrature.

The model of Corani, Benavoli, Demšar, Mangili & Zaffalon (Machine Learning 2017) and
Benavoli, Corani, Demšar & Zaffalon (JMLR 2017, §5), exactly as :mod:`baycomp` states it
in Stan (``hierarchical-t-test.stan``, baycomp 1.0.3), for the differences
:math:`x_{ij}` (dataset :math:`i = 1..q`, split :math:`j = 1..R`) of two learners:

.. math::
    x_{i\cdot} \sim \mathcal N(\delta_i \mathbf 1, \sigma_i^2 M), \quad
    M = (1-\rho) I + \rho \mathbf 1\mathbf 1^\top, \qquad
    \delta_i \sim t_\nu(\delta_0, \sigma_0), \qquad
    \sigma_i \sim U(0, \bar\sigma), \quad \delta_0 \sim U(-\Delta, \Delta), \quad
    \sigma_0 \sim U(0, \bar\sigma_0), \quad \nu - 1 \sim \Gamma(a, b),\;
    a \sim U(1, 2),\; b \sim U(0.01, 0.1),

with baycomp's data-dependent bounds (after dividing the data and the ROPE by the mean
within-dataset standard deviation): :math:`\Delta = \max|x|`,
:math:`\bar\sigma = 1000 \cdot` the mean within-dataset std,
:math:`\bar\sigma_0 = 1000 \cdot` the std of the dataset means. The result is baycomp's:
the posterior probability that the left region, the ROPE or the right region is the most
probable one for the difference :math:`\delta \sim t_\nu(\delta_0, \sigma_0)` on a new
dataset (``Posterior.probs``: the share of posterior draws whose largest probability it
is).

**Why not baycomp itself.** baycomp samples the model with Stan (pystan 3 / httpstan):
on these 2-core machines compiling the model takes more than five minutes and 2.8 GB, and
pystan's client times out; a report that needs it could not be rebuilt by ``make test``.

**How.** Two integrals are done in closed form, which leaves a three-dimensional
quadrature over :math:`(\delta_0, \sigma_0, \nu)`, deterministic and the same on every
machine to rounding:

1. :math:`\sigma_i` (uniform prior): with :math:`Q(\delta) = (x_i - \delta\mathbf 1)^\top
   M^{-1} (x_i - \delta\mathbf 1) = \frac{S_i}{1-\rho} + \frac{R (\bar x_i -
   \delta)^2}{1 + (R-1)\rho}` (:math:`S_i` the sum of squared deviations from the mean
   :math:`\bar x_i`), :math:`\int_0^{\infty} \sigma^{-R} e^{-Q/2\sigma^2}\,d\sigma
   \propto Q^{-(R-1)/2}`: as a function of :math:`\delta_i` the likelihood is a Student
   t density :math:`f_i` with :math:`R-2` degrees of freedom, location :math:`\bar x_i` and
   scale :math:`\tau_i^2 = S_i (1+(R-1)\rho) / ((1-\rho) R (R-2))` (the bound
   :math:`\bar\sigma`, a thousand standard deviations, is dropped: it changes the
   integral by a factor :math:`1 - \Gamma((R-1)/2, Q/2\bar\sigma^2)/\Gamma((R-1)/2)`, under
   :math:`10^{-20}` for :math:`R = 10`).
2. :math:`\nu`'s prior :math:`p(\nu) = \iint \Gamma(\nu - 1; a, b)\,da\,db / 0.09` by
   Gauss-Legendre quadrature on the rectangle.

Then :math:`\int f_i(\delta) t_\nu(\delta; \delta_0, \sigma_0) d\delta` is computed with
24 equal-probability nodes of the narrower of the two densities (the wider one is smooth
on its scale), and the posterior on a grid of :math:`\delta_0` (the prior's support,
refined where the datasets' likelihoods are), :math:`\sigma_0` (log-spaced) and
:math:`\nu` (log-spaced in :math:`\nu - 1`), with the priors' densities and the grids'
Jacobians as weights.

Examples
--------
Six datasets where the second learner is better by about 1 point (rope 0.5), ten
correlated splits each:

>>> import numpy as np
>>> rng = np.random.default_rng(0)
>>> d = 1.0 + 0.3 * rng.standard_normal((6, 1)) + 0.8 * rng.standard_normal((6, 10))
>>> left, rope, right = hierarchical_probs(d, rho=0.2, rope=0.5)
>>> bool(right > 0.9), round(left + rope + right, 12)
(True, 1.0)
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: baycomp's default hyper-priors (its HierarchicalTest.sample)
LOWER_ALPHA, UPPER_ALPHA = 1.0, 2.0
LOWER_BETA, UPPER_BETA = 0.01, 0.1
UPPER_SIGMA = 1000.0

_NODES = 24  # equal-probability nodes of the inner integral
_N_DELTA0 = 121
_N_SIGMA0 = 56
_N_NU = 24


def _nu_prior(nu: np.ndarray) -> np.ndarray:
    """p(nu) for nu >= 1: the Gamma(a, b) density of nu - 1 averaged over the uniform
    hyper-priors of a (shape) and b (rate), by 24 x 24 Gauss-Legendre nodes."""
    from scipy import stats

    g, w = np.polynomial.legendre.leggauss(24)
    a = LOWER_ALPHA + (g + 1) / 2 * (UPPER_ALPHA - LOWER_ALPHA)
    b = LOWER_BETA + (g + 1) / 2 * (UPPER_BETA - LOWER_BETA)
    wa, wb = w / 2, w / 2  # averages over the rectangles
    dens = stats.gamma.pdf(
        (nu - 1.0)[:, None, None], a[None, :, None], scale=1.0 / b[None, None, :]
    )
    return np.einsum("nab,a,b->n", dens, wa, wb)


def _t_nodes(df: np.ndarray | float) -> np.ndarray:
    """Equal-probability nodes of Student's t with ``df`` (..., _NODES): the quantiles
    at the midpoints of _NODES equal bins."""
    from scipy import stats

    u = (np.arange(_NODES) + 0.5) / _NODES
    return stats.t.ppf(u, np.asarray(df, dtype=np.float64)[..., None])


def _t_const(df: np.ndarray | float) -> np.ndarray:
    """log of Student t's normalizing constant for ``df`` (scale 1)."""
    from scipy.special import gammaln

    df = np.asarray(df, dtype=np.float64)
    return gammaln((df + 1) / 2) - gammaln(df / 2) - 0.5 * np.log(df * np.pi)


def _logsumexp_kernel(z: np.ndarray, df: np.ndarray | float) -> np.ndarray:
    r"""``scipy.special.logsumexp(_log_kernel(z, df), axis=-1)``, computed in ``z``'s own
    memory (``z`` is overwritten): the quadrature calls it 680 times per repeated-splits
    report on arrays of millions of entries, where scipy's array-API logsumexp (masks, an
    indexed update, a complex check) and the temporaries of each step took 3x the time of
    the arithmetic.

    :math:`\log(1 + z^2/\nu)` is taken as ``log(1 + x)``, not ``log1p(x)``: numpy's
    ``log`` is vectorized, its ``log1p`` is not (measured 66 vs 149 ms on 6 million
    entries; the kernel's time is mostly there). ``log1p`` keeps the *relative* accuracy
    of a tiny result, which is not needed here: the result is multiplied by
    :math:`-(\nu + 1)/2` and exponentiated, so what counts is its *absolute* error,
    at most a few units of 2^-53 either way, i.e. a relative error below
    :math:`(\nu + 1) \cdot 2^{-52}` in each kernel value (1e-12 at :math:`\nu = 10^4`,
    far below the quadrature's). A test compares both to that bound."""
    np.square(z, out=z)
    z /= df
    z += 1.0
    np.log(z, out=z)
    z *= -(np.asarray(df) + 1) / 2
    top = z.max(axis=-1, keepdims=True)
    z -= top
    np.exp(z, out=z)
    return np.log(z.sum(axis=-1)) + top[..., 0]


def _log_kernel(z: np.ndarray, df: np.ndarray | float) -> np.ndarray:
    """log of Student t's unnormalized density at the standardized ``z``."""
    return -(np.asarray(df) + 1) / 2 * np.log1p(z * z / df)


@dataclass(frozen=True)
class HierarchicalResult:
    r"""baycomp's three probabilities (left = the difference below ``-rope``), and the
    posterior mean and 95 % credible interval of the mean difference :math:`\delta_0`
    (in the data's units)."""

    left: float
    rope: float
    right: float
    delta0_mean: float
    delta0_low: float
    delta0_high: float


def hierarchical_probs(
    diffs: np.ndarray, rho: float | np.ndarray, rope: float
) -> tuple[float, float, float]:
    """``(p_left, p_rope, p_right)`` of :func:`hierarchical_test`."""
    r = hierarchical_test(diffs, rho, rope)
    return r.left, r.rope, r.right


def hierarchical_test(
    diffs: np.ndarray, rho: float | np.ndarray, rope: float
) -> HierarchicalResult:
    r"""The hierarchical model for ``diffs`` (datasets x splits, the difference y - x as
    in baycomp: right = the second learner higher), with correlation ``rho`` of two splits
    (one for all datasets, as baycomp, or one per dataset: each dataset's likelihood
    takes its own) and the ROPE ``[-rope, rope]`` (in the data's units).

    Needs 3 splits or more and some spread on at least one dataset. A dataset whose
    differences are the same on every split is given the spread of values uniform in the
    ROPE around that value (baycomp jitters such a row within the ROPE); ``rope = 0``
    gives ``p_rope = 0``."""
    from scipy import stats

    x = np.asarray(diffs, dtype=np.float64)
    q, r = x.shape
    if r < 3:
        raise ValueError(f"the hierarchical model needs 3 splits or more, got {r}")
    rho = np.broadcast_to(np.asarray(rho, dtype=np.float64), (q,))
    if np.any(rho < 0.0) or np.any(rho >= 1.0):
        raise ValueError(f"rho must be in [0, 1), got {rho}")
    within = x.std(axis=1)
    flat = within <= 1e-12 * np.maximum(1.0, np.abs(x).max(axis=1))
    if flat.all():
        raise ValueError("no dataset has any spread over its splits")
    scale = float(within[~flat].mean())  # baycomp: divide by the mean within-dataset std
    x = x / scale
    rope = float(rope) / scale
    means = x.mean(axis=1)
    among = float(means.std()) if q > 1 else 1.0
    among = among if among > 0 else 1.0
    delta_hi = float(np.abs(x).max())

    # f_i: the likelihood of delta_i, a t density (df r - 2, loc mean_i, scale tau_i)
    ss = ((x - means[:, None]) ** 2).sum(axis=1)
    # a dataset whose differences are the same on every split (two learners predicting
    # alike) gets the spread of values uniform in the ROPE, as baycomp jitters it (a point
    # mass would make the posterior collapse onto sigma0 = 0); without a ROPE, the mean
    # within-dataset spread
    ss = np.where(flat, r * (rope**2 / 3.0 if rope > 0 else 1.0), ss)
    tau = np.sqrt(ss * (1 + (r - 1) * rho) / ((1 - rho) * r * (r - 2)))
    df_f = float(r - 2)

    # delta0: the prior's support [-Delta, Delta] (coarse) and, finer, the core where the
    # datasets' likelihoods are (their means +- 6 scales): a posterior much narrower than
    # the support (small differences, one large one) is still resolved
    spread = tau + (among if q > 1 else 0.0)
    core = np.clip([float(np.min(means - 6 * spread)), float(np.max(means + 6 * spread))],
                   -delta_hi, delta_hi)  # fmt: skip
    coarse = np.unique(np.concatenate([
        np.linspace(-delta_hi, delta_hi, _N_DELTA0 // 2), np.linspace(*core, _N_DELTA0),
    ]))  # fmt: skip
    lo = max(1e-4 * min(among, float(tau.min())), 1e-9)
    sigma0 = np.geomspace(lo, UPPER_SIGMA * among, _N_SIGMA0)
    w_s0 = sigma0 * np.gradient(np.log(sigma0))  # uniform prior on sigma0: d sigma0
    nu = 1.0 + np.geomspace(1e-2, 1e4, _N_NU)
    w_nu = _nu_prior(nu) * (nu - 1.0) * np.gradient(np.log(nu - 1.0))
    z_nu = _t_nodes(nu)  # (nu, nodes)
    z_f = _t_nodes(df_f)  # (nodes,)
    c_f = float(_t_const(df_f))
    c_nu = _t_const(nu)  # (nu,)

    def posterior(delta0: np.ndarray) -> np.ndarray:
        """The normalized posterior weights on the grid delta0 x sigma0 x nu."""
        w_d0 = np.gradient(delta0)  # trapezoid weights on the non-uniform grid
        w_d0[[0, -1]] /= 2
        # log h_i(delta0, sigma0, nu) = log int f_i(d) t_nu(d; delta0, sigma0) dd, with the
        # nodes of the narrower density: the t prior's where sigma0 < tau_i (evaluate
        # f_i), f_i's elsewhere (evaluate the t prior)
        log_lik = np.zeros((delta0.size, _N_SIGMA0, _N_NU))
        for i in range(q):
            m = int(np.searchsorted(sigma0, tau[i]))  # sigma0[:m] < tau_i
            if m:  # z = (delta0 + sigma0 z_nu - mean_i) / tau_i, one array
                z = (delta0[:, None, None, None] - means[i]) + sigma0[None, :m, None, None] * z_nu
                z /= tau[i]
                k = _logsumexp_kernel(z, df_f)
                log_lik[:, :m] += k + (c_f - np.log(tau[i]) - np.log(_NODES))
            if m < _N_SIGMA0:
                s0 = sigma0[None, m:, None, None]
                z = (means[i] + tau[i] * z_f) - delta0[:, None, None, None]
                z = z / s0  # broadcast to (delta0, sigma0, 1, nodes)
                z = np.repeat(z, _N_NU, axis=2) if z.shape[2] == 1 else z
                k = _logsumexp_kernel(z, nu[None, None, :, None]) - np.log(_NODES)
                log_lik[:, m:] += k + c_nu[None, None, :] - np.log(s0[..., 0])
        log_post = (
            log_lik
            + np.log(w_d0)[:, None, None]
            + np.log(w_s0)[None, :, None]
            + np.log(np.maximum(w_nu, 1e-300))[None, None, :]
        )
        post = np.exp(log_post - log_post.max())
        return post / post.sum()

    delta0 = coarse
    post = posterior(delta0)
    # a posterior narrower than the grid (e.g. several datasets with no difference at all)
    # is refined: a second pass with a fine grid over where 99.9 % of delta0's mass is
    cdf = np.cumsum(post.sum(axis=(1, 2)))
    i0 = max(int(np.searchsorted(cdf, 5e-4)) - 1, 0)
    i1 = min(int(np.searchsorted(cdf, 1 - 5e-4)) + 1, delta0.size - 1)
    if i1 - i0 < 24:
        delta0 = np.unique(np.concatenate([coarse, np.linspace(delta0[i0], delta0[i1], 97)]))
        post = posterior(delta0)

    # the three probabilities of a new dataset's difference at every grid point
    p_left = stats.t.cdf((-rope - delta0[:, None, None]) / sigma0[None, :, None], nu)
    p_right = stats.t.sf((rope - delta0[:, None, None]) / sigma0[None, :, None], nu)
    p_rope = 1.0 - p_left - p_right
    winner = np.argmax(np.stack([p_left, p_rope, p_right]), axis=0)
    probs = [float(post[winner == k].sum()) for k in range(3)]
    if rope == 0.0:  # no ROPE: left or right (ties at 0 go left, as baycomp's argmax)
        probs[0] += probs[1]
        probs[1] = 0.0
    # delta0's marginal: mean and the 2.5 % / 97.5 % quantiles (linear in the CDF)
    marginal = post.sum(axis=(1, 2))
    cdf = np.cumsum(marginal)
    low, high = np.interp([0.025, 0.975], cdf, delta0)
    return HierarchicalResult(
        probs[0], probs[1], probs[2],
        float(marginal @ delta0) * scale, float(low) * scale, float(high) * scale,
    )  # fmt: skip
