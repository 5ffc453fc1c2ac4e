"""Section "jax": projloss' oracles against JAX peers, ``jax.jit(jax.vmap(...))``, float64.

Optional: needs ``jax``, ``jaxopt`` and ``optax`` (the ``bench`` extra,
``pip install -e '.[bench]'``; ``ott-jax`` adds one more Birkhoff peer when installed).
Without them the section prints one line saying so and is skipped.

Setting: float64 (``jax_enable_x64``), the CPU backend on **one core** -- XLA's thread
pools limited to one thread (``XLA_FLAGS=--xla_cpu_multi_thread_eigen=false
intra_op_parallelism_threads=1`` and ``PJRT_NPROC=1``, set before JAX is first imported)
and every thread of the process pinned to one CPU for the section
(``os.sched_setaffinity``), so that projloss and JAX run on the same core; the section
reports the process' CPU time over its wall time (at most 1 on one core). Each peer is
``jax.jit(jax.vmap(f))`` of the per-sample function a JAX user would call, compiled once
per shape before timing, the input already on the device, the output waited for
(``block_until_ready``). projloss is the public
``ConvexSet.project`` call (input validation included). The two are timed **interleaved**
(:mod:`benchmarks.timing`): *ratio* = time(fastest peer) / time(projloss), > 1 when
projloss is faster.

Peers: simplex -- ``optax.projections.projection_simplex`` and
``jaxopt.projection.projection_simplex`` (Euclidean), ``jax.nn.softmax`` (KL); unit
cube -- ``jnp.clip`` and ``optax.projections.projection_hypercube`` (Euclidean),
``jnp.exp(jnp.minimum(x - 1, 0))`` (the same KL projection) and ``jax.nn.sigmoid`` (the
cube's projection for the Fermi-Dirac entropy, what a JAX user reaches for) (KL);
knapsack with l = u = m (the capped simplex) -- ``jaxopt.projection.projection_box_section``
(bisection; its default tolerance 1e-5, and 1e-12 for equal accuracy); Birkhoff --
``jaxopt.projection.projection_birkhoff`` / ``kl_projection_birkhoff`` (semi-dual L-BFGS;
the loosest ``tol`` whose marginals hold to 1e-6, i.e. equal accuracy) and, for KL, a
jitted log-domain Sinkhorn (stopping at marginals 1e-6) and ott-jax's ``Sinkhorn``;
isotonic regression -- ``jaxopt.isotonic.isotonic_l2_pav``. *max diff* = largest
|projloss - peer| entry (for the Birkhoff polytope: the peers' marginal violation).
"""

from __future__ import annotations

import inspect
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from projloss.isotonic import isotonic_regression
from projloss.sets import Birkhoff, ConvexSet, Knapsack, Simplex, UnitCube

from . import baselines as bl
from .registry import Check, Context, SectionResult, section
from .report import rate, table
from .timing import Timing, compare

#: XLA on one thread (appended to XLA_FLAGS before JAX is first imported).
XLA_ONE_CORE = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
CHEAP_K = (10, 30, 100)
CHEAP_N = (1000, 10000, 100000)
#: Timed rounds per cheap-oracle figure, each ~2 ms (or one call), the best reported: on
#: a loaded shared machine a long round is almost surely preempted, some short ones not.
CHEAP_ROUNDS = 60
CHEAP_ROUND_SECONDS = 0.002
#: Acceptance: every cheap oracle >= 1x the fastest peer at n >= 1000; KL Birkhoff >= 5x.
CHEAP_GOAL = 1.0
BIRKHOFF_GOAL = {"kl": 5.0, "euclidean": 1.0}
#: Marginal accuracy of the Birkhoff comparison (projloss' tol; the peers' stopping rule).
MARGINAL_TOL = 1e-6
#: L-BFGS tolerances tried for jaxopt's Birkhoff projections (loosest first).
LBFGS_TOLS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
SKIP_LINE = (
    "JAX is not installed: section skipped (install the optional peers with "
    "`pip install -e '.[bench]'`: jax, jaxopt, optax)."
)


def one_core_env() -> None:
    """Put XLA on one thread and on the CPU (``XLA_FLAGS``, ``JAX_PLATFORMS``) unless set:
    to be called before anything imports JAX (POT's backends import it when installed),
    so :mod:`benchmarks.run` calls it before its first imports."""
    flags = os.environ.get("XLA_FLAGS", "")
    if "intra_op_parallelism_threads" not in flags:
        os.environ["XLA_FLAGS"] = f"{flags} {XLA_ONE_CORE}".strip()
    os.environ.setdefault("JAX_PLATFORMS", "cpu")
    # XLA's CPU client sizes its thread pools from PJRT_NPROC, else from the CPUs the
    # process may use when the backend starts: a backend started before the section pins
    # the process (by another section, or POT) would split each call over two threads
    os.environ.setdefault("PJRT_NPROC", "1")


def load_jax() -> dict[str, Any] | None:
    """Import JAX on one thread in float64; ``None`` if jax, jaxopt or optax is missing."""
    if "jax" not in sys.modules:
        one_core_env()
    try:
        import jax
        import jax.numpy as jnp
        import jaxopt
        import optax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    mods: dict[str, Any] = {"jax": jax, "jnp": jnp, "jaxopt": jaxopt, "optax": optax}
    try:
        import ott  # noqa: F401

        mods["ott"] = True
    except ImportError:
        mods["ott"] = False
    return mods


@dataclass(frozen=True)
class Peer:
    label: str
    make: Callable[[Any, int], Callable]  #: (jax modules, k) -> per-sample function
    same: bool = True  #: computes the same projection (max diff reported)


def _peers(J: dict[str, Any]) -> dict[str, list[Peer]]:
    jax, jnp, jaxopt, optax = J["jax"], J["jnp"], J["jaxopt"], J["optax"]
    proj = jaxopt.projection

    def box_section(tol: float | None) -> Callable[[Any, int], Callable]:
        def make(_: Any, k: int) -> Callable:
            m = float(knapsack_budget(k))
            lo, hi, w = jnp.zeros(k), jnp.ones(k), jnp.ones(k)
            if tol is None:
                return lambda x: proj.projection_box_section(x, (lo, hi, w, m))

            def f(x):  # jaxopt's projection_box_section, its Bisection at a tighter tol
                def fun(tau, x):
                    return jnp.sum(jnp.clip(tau + x, 0.0, 1.0)) - m

                tau = (
                    jaxopt.Bisection(
                        optimality_fun=fun,
                        lower=jnp.min(-x),
                        upper=jnp.max(1.0 - x),
                        tol=tol,
                        maxiter=200,
                        check_bracket=False,
                    )
                    .run(x=x)
                    .params
                )
                return jnp.clip(tau + x, 0.0, 1.0)

            return f

        return make

    return {
        "simplex/euclidean": [
            Peer("optax projection_simplex", lambda J, k: optax.projections.projection_simplex),
            Peer("jaxopt projection_simplex", lambda J, k: proj.projection_simplex),
        ],
        "simplex/kl": [Peer("jax.nn.softmax", lambda J, k: jax.nn.softmax)],
        "unit_cube/euclidean": [
            Peer("jnp.clip", lambda J, k: lambda x: jnp.clip(x, 0.0, 1.0)),
            Peer("optax projection_hypercube", lambda J, k: optax.projections.projection_hypercube),
        ],
        "unit_cube/kl": [
            Peer(
                "jnp.exp(jnp.minimum(x-1, 0))",
                lambda J, k: lambda x: jnp.exp(jnp.minimum(x - 1, 0)),
            ),
            Peer("jax.nn.sigmoid", lambda J, k: jax.nn.sigmoid, same=False),
        ],
        "knapsack/euclidean": [
            Peer("jaxopt projection_box_section (tol 1e-5)", box_section(None)),
            Peer("jaxopt box_section, Bisection tol=1e-12", box_section(1e-12)),
        ],
    }


def knapsack_budget(k: int) -> int:
    return max(1, round(k / 5))


SETS: dict[str, tuple[Callable[[int], ConvexSet], str]] = {
    "simplex/euclidean": (lambda k: Simplex(), "euclidean"),
    "simplex/kl": (lambda k: Simplex(), "kl"),
    "unit_cube/euclidean": (lambda k: UnitCube(), "euclidean"),
    "unit_cube/kl": (lambda k: UnitCube(), "kl"),
    "knapsack/euclidean": (
        lambda k: Knapsack(knapsack_budget(k), knapsack_budget(k)),
        "euclidean",
    ),
}


def _threads() -> list[int]:
    """The ids of the process' threads (Linux), or ``[0]`` (this thread) elsewhere."""
    try:
        return [int(t) for t in os.listdir("/proc/self/task")]
    except OSError:
        return [0]


class _Pinned:
    """Pin every thread of the process to one CPU (the lowest it may run on) for the
    ``with`` block; threads started in the block inherit it. ``os.sched_setaffinity(0,
    ...)`` alone pins the calling thread only: XLA's worker threads, if started before,
    would go on using both cores."""

    def __enter__(self) -> _Pinned:
        self.saved = None
        if hasattr(os, "sched_setaffinity"):
            self.saved = os.sched_getaffinity(0)
            self._set({min(self.saved)})
        return self

    def __exit__(self, *exc: object) -> None:
        if self.saved is not None:
            self._set(self.saved)

    @staticmethod
    def _set(cpus: set[int]) -> None:
        for tid in _threads():
            try:
                os.sched_setaffinity(tid, cpus)
            except OSError:  # the thread ended meanwhile
                pass


def _jitted(J: dict[str, Any], fn: Callable) -> Callable:
    return J["jax"].jit(J["jax"].vmap(fn))


def _ready(f: Callable, x: Any) -> Callable[[], Any]:
    return lambda: f(x).block_until_ready()


def _compare_cheap(ctx: Context, fns: dict[str, Callable[[], Any]]) -> dict[str, Timing]:
    """:func:`~benchmarks.timing.compare` with the cheap oracles' rounds (CHEAP_ROUNDS
    rounds of CHEAP_ROUND_SECONDS, interleaved)."""
    return compare(
        fns,
        repeat=2 if ctx.quick else max(ctx.repeat, CHEAP_ROUNDS),
        min_time=min(ctx.min_time, CHEAP_ROUND_SECONDS),
        budget=4.0 if ctx.quick else 15.0,
    )


def _pairs(
    ctx: Context, ours: Callable[[], Any], peers: dict[str, Callable[[], Any]]
) -> dict[str, tuple[float, float]]:
    """(time of ``ours``, time of the peer), best rounds, each peer timed interleaved with
    ``ours`` alone.

    In pairs, not all together: numpy's outputs and XLA's come from two allocators, and
    a memory-bound call whose output the caches still hold from the call before runs
    faster. Callables of one allocator reuse each other's freed buffers; one alone among
    callables of the other pays for it. Measured at k = 100, n = 10^4 (the unit cube,
    arrays of 8 MB, best of 60 rounds, three runs): interleaved with ``jnp.clip`` and
    optax's ``projection_hypercube``, ``project`` took 225-233 us and the faster peer
    217-232 us; interleaved with ``np.clip`` and ``jnp.clip``, ``project`` 211-220 us
    and ``jnp.clip`` 319-347 us; in pairs, the two within 2% of each other. A pair meets
    each allocator once.
    """
    out = {}
    for label, peer in peers.items():
        t = _compare_cheap(ctx, {"ours": ours, "peer": peer})
        out[label] = (t["ours"].best, t["peer"].best)
    return out


def _cheap(ctx: Context, J: dict[str, Any]) -> tuple[list[list[str]], list[Check], dict]:
    rows, data = [], {}
    worst: dict[str, tuple[float, int, int]] = {}
    peers = _peers(J)
    ks = CHEAP_K[:2] if ctx.quick else CHEAP_K
    ns = CHEAP_N[:1] if ctx.quick else CHEAP_N
    for key, (make, geometry) in SETS.items():
        if ctx.only_sets and key.split("/")[0] not in ctx.only_sets:
            continue
        for k in ks:
            S = make(k)
            fs = {p.label: _jitted(J, p.make(J, k)) for p in peers[key]}
            for n in ns:
                rng = np.random.default_rng([ctx.seed, k, n])
                xj = J["jnp"].asarray(rng.standard_normal((n, k)))
                # projloss reads the peers' input buffer (a zero-copy view of the JAX array
                # on the CPU): the same memory for every callable of the round
                theta = np.asarray(xj)
                ours = S.project(theta, geometry)
                diff = {}
                for p in peers[key]:
                    out = np.asarray(fs[p.label](xj))  # compiles for this shape
                    diff[p.label] = float(np.abs(out - ours).max()) if p.same else None
                ours = lambda S=S, theta=theta, g=geometry: S.project(theta, g)  # noqa: E731
                t = _pairs(ctx, ours, {p.label: _ready(fs[p.label], xj) for p in peers[key]})
                best_label = min(t, key=lambda label: t[label][1] / t[label][0])
                tp, r = t[best_label][0], t[best_label][1] / t[best_label][0]
                load = ctx.load()[0]
                if key not in worst or r < worst[key][0]:
                    worst[key] = (r, k, n)
                data[f"jax/{key}/k={k}/n={n}"] = tp
                for p in peers[key]:
                    data[f"jax/{key}/k={k}/n={n}/{p.label}"] = t[p.label][1]
                peers_txt = "; ".join(
                    f"{p.label}: {rate(t[p.label][1], n)}"
                    + ("" if diff[p.label] is None else f" (diff {diff[p.label]:.0e})")
                    for p in peers[key]
                )
                rows.append(
                    [key, str(k), str(n), rate(tp, n), peers_txt, f"{r:.2f}x", f"{load:.1f}"]
                )
                ctx.log(
                    f"  jax {key:<20} k={k:<3} n={n:<6} {r:5.2f}x {best_label}  (load {load:.1f})"
                )
    checks = [
        Check(
            f"JAX: {key} at n >= 1000, k in {{{', '.join(map(str, ks))}}}: "
            "time(fastest JAX peer) / time(projloss)",
            r,
            CHEAP_GOAL,
            detail=f"worst at k={k}, n={n}",
        )
        for key, (r, k, n) in worst.items()
    ]
    return rows, checks, data


def _copy_floor(ctx: Context, J: dict[str, Any]) -> list[list[str]]:
    """The Euclidean unit cube at k = 100 beside a plain copy of its input.

    ``theta.copy()`` reads ``theta`` and writes a new array of its size, the memory
    traffic of every out-of-place entry-wise operation, with no arithmetic: once the
    arrays outgrow the private caches (n k 8 bytes: 8 MB at n = 10^4), its time is what
    the memory allows, and the table shows how close each clip comes to it (where both
    clips are as fast as the copy, the table above compares two copies: its ratio is a
    margin of memory traffic, not of arithmetic). Each clip is timed interleaved with its
    own copy (in pairs, as the table above: the copy shares numpy's allocator with
    ``project``, not with ``jnp.clip``; its two times agree to a few percent).
    """
    rows = []
    S, k = UnitCube(), 100
    clip = _jitted(J, lambda x: J["jnp"].clip(x, 0.0, 1.0))
    for n in CHEAP_N[:1] if ctx.quick else CHEAP_N:
        rng = np.random.default_rng([ctx.seed, k, n])
        xj = J["jnp"].asarray(rng.standard_normal((n, k)))
        theta = np.asarray(xj)
        clip(xj).block_until_ready()
        t = _pairs(
            ctx,
            theta.copy,
            {"projloss": lambda S=S, theta=theta: S.project(theta), "jnp.clip": _ready(clip, xj)},
        )
        (floor, ours), (floor_jax, theirs) = t["projloss"], t["jnp.clip"]
        rows.append(
            [
                str(n),
                f"{n * k * 8 / 2**20:.3g}",
                rate(floor, n),
                rate(ours, n),
                f"{ours / floor:.2f}",
                rate(theirs, n),
                f"{theirs / floor_jax:.2f}",
                f"{ctx.load()[0]:.1f}",
            ]
        )
    return rows


def _sinkhorn_log(J: dict[str, Any], tol: float) -> Callable:
    """A jitted-friendly log-domain Sinkhorn for one k x k theta (cost -theta, reg 1),
    stopping when the row marginals hold to ``tol`` (columns are exact after each
    column update)."""
    jax, jnp = J["jax"], J["jnp"]
    lse = jax.scipy.special.logsumexp

    def f(theta):
        k = theta.shape[0]

        def cond(s):
            return (s[2] > tol) & (s[3] < 10000)

        def body(s):
            a, b, _, it = s
            a = -lse(theta + b[None, :], axis=1)
            b = -lse(theta + a[:, None], axis=0)
            P = jnp.exp(theta + a[:, None] + b[None, :])
            return a, b, jnp.max(jnp.abs(P.sum(axis=1) - 1.0)), it + 1

        a0 = jnp.zeros(k)
        a, b, _, _ = jax.lax.while_loop(cond, body, (a0, a0, jnp.inf, 0))
        return jnp.exp(theta + a[:, None] + b[None, :])

    return f


def _ott_sinkhorn(tol: float) -> Callable:
    from ott.geometry import geometry
    from ott.problems.linear import linear_problem
    from ott.solvers.linear import sinkhorn

    solver = sinkhorn.Sinkhorn(threshold=tol, max_iterations=10000, norm_error=1)

    def f(theta):
        geom = geometry.Geometry(cost_matrix=-theta, epsilon=1.0)
        return solver(linear_problem.LinearProblem(geom)).matrix * theta.shape[0]

    return f


def _birkhoff(ctx: Context, J: dict[str, Any]) -> tuple[list[list[str]], list[Check], dict]:
    jaxopt = J["jaxopt"]
    n, k = (200 if ctx.quick else 1000), 11
    theta = 2.0 * np.random.default_rng([ctx.seed, 11]).standard_normal((n, k, k))
    xj = J["jnp"].asarray(theta)
    rows, checks, data = [], [], {}
    for geometry in ("euclidean", "kl"):
        project = (
            jaxopt.projection.projection_birkhoff
            if geometry == "euclidean"
            else jaxopt.projection.kl_projection_birkhoff
        )
        # jaxopt at the loosest L-BFGS tol whose marginals hold to MARGINAL_TOL.
        peers: dict[str, Callable] = {}
        viol: dict[str, float] = {}
        for tol in LBFGS_TOLS:

            def one(x, tol=tol, project=project):
                return project(
                    x,
                    make_solver=lambda fun: jaxopt.LBFGS(fun=fun, tol=tol, maxiter=2000),
                )

            f = _jitted(J, one)
            v = bl.marginal_violation(np.asarray(f(xj)))
            if v <= MARGINAL_TOL or tol == LBFGS_TOLS[-1]:
                label = f"jaxopt {project.__name__} (L-BFGS tol={tol:g})"
                peers[label], viol[label] = f, v
                break
        if geometry == "kl":
            f = _jitted(J, _sinkhorn_log(J, MARGINAL_TOL))
            label = f"jitted log-domain Sinkhorn (to {MARGINAL_TOL:g})"
            peers[label], viol[label] = f, bl.marginal_violation(np.asarray(f(xj)))
            if J["ott"]:
                try:
                    f = _jitted(J, _ott_sinkhorn(MARGINAL_TOL))
                    label = f"ott-jax Sinkhorn (threshold {MARGINAL_TOL:g})"
                    viol[label] = bl.marginal_violation(np.asarray(f(xj)))
                    peers[label] = f
                except Exception as exc:  # an ott-jax / jax version mismatch
                    ctx.log(f"  ott-jax Sinkhorn skipped: {exc!r}")
        S = Birkhoff(tol=MARGINAL_TOL)
        ours = S.project(theta, geometry)
        fns = {"projloss": lambda S=S, g=geometry: S.project(theta, g)}
        fns |= {label: _ready(f, xj) for label, f in peers.items()}
        t = compare(fns, repeat=2 if ctx.quick else 5, min_time=ctx.min_time, budget=90.0)
        tp = t["projloss"].best
        jaxopt_label = next(label for label in peers if label.startswith("jaxopt"))
        fastest = min(peers, key=lambda label: t[label].best)
        load = ctx.load()[0]
        rows.append(
            [
                geometry,
                f"projloss `Birkhoff(tol={MARGINAL_TOL:g}).project`",
                f"{tp:.4f}",
                f"{bl.marginal_violation(ours):.1e}",
                "1",
                f"{load:.1f}",
            ]
        )
        for label in peers:
            rows.append(
                [
                    geometry,
                    label,
                    f"{t[label].best:.4f}",
                    f"{viol[label]:.1e}",
                    f"{t[label].best / tp:.3g}x",
                    f"{load:.1f}",
                ]
            )
            data[f"jax/birkhoff/{geometry}/{label}"] = t[label].best
        data[f"jax/birkhoff/{geometry}/projloss"] = tp
        speed = t[jaxopt_label].best / tp
        ctx.log(
            f"  jax birkhoff {geometry}: {speed:.2f}x jaxopt, {t[fastest].best / tp:.2f}x "
            f"the fastest peer ({fastest})"
        )
        checks.append(
            Check(
                f"JAX: birkhoff ({geometry}), n={n}, k={k}, std 2, marginals to "
                f"{MARGINAL_TOL:g}: time(jaxopt) / time(projloss)",
                speed,
                BIRKHOFF_GOAL[geometry],
                detail=f"vs the fastest JAX peer ({fastest}): {t[fastest].best / tp:.3g}x",
            )
        )
    return rows, checks, data


def _isotonic(ctx: Context, J: dict[str, Any]) -> tuple[list[list[str]], list[Check], dict]:
    from jaxopt._src import isotonic as jaxopt_isotonic
    from jaxopt.isotonic import isotonic_l2_pav

    _writable_pav(jaxopt_isotonic)
    n, k = (1000 if ctx.quick else 10000), 10
    y = np.random.default_rng([ctx.seed, 7]).standard_normal((n, k))
    f = _jitted(J, lambda v: isotonic_l2_pav(v, increasing=False))
    yj = J["jnp"].asarray(y)
    diff = float(np.abs(np.asarray(f(yj)) - isotonic_regression(y)).max())
    t = compare(
        {"projloss": lambda: isotonic_regression(y), "jaxopt": _ready(f, yj)},
        repeat=2 if ctx.quick else 3,
        min_time=ctx.min_time,
        budget=30.0,
    )
    r = t["jaxopt"].best / t["projloss"].best
    load = ctx.load()[0]
    ctx.log(f"  jax isotonic: {r:.0f}x jaxopt isotonic_l2_pav")
    row = [
        "isotonic regression (decreasing)",
        str(k),
        str(n),
        rate(t["projloss"].best, n),
        f"jaxopt isotonic_l2_pav: {rate(t['jaxopt'].best, n)} (diff {diff:.0e})",
        f"{r:.3g}x",
        f"{load:.1f}",
    ]
    check = Check(
        f"JAX: isotonic regression, n={n}, k={k}: time(jaxopt isotonic_l2_pav) / time(projloss)",
        r,
        CHEAP_GOAL,
    )
    return (
        [row],
        [check],
        {"jax/isotonic": t["projloss"].best, "jax/isotonic/jaxopt": t["jaxopt"].best},
    )


def _writable_pav(module: Any) -> None:
    """jaxopt 0.8.5's PAV kernel (numba) rejects the read-only buffers that JAX >= 0.5
    hands to ``pure_callback``: give it a writable copy (one copy of k numbers per sample,
    negligible beside the callback)."""
    kernel = module._isotonic_l2_pav_numba
    if getattr(kernel, "_projloss_writable", False):
        return

    def pav(y: np.ndarray) -> np.ndarray:
        return kernel(np.array(y))

    pav._projloss_writable = True  # type: ignore[attr-defined]
    module._isotonic_l2_pav_numba = pav


@section("jax", "JAX baselines", order=45)
def run(ctx: Context) -> SectionResult:
    """projloss vs jax.jit(jax.vmap(...)) peers (optional: skipped without JAX)."""
    J = load_jax()
    if J is None:
        ctx.log("  " + SKIP_LINE)
        return SectionResult(SKIP_LINE)
    head = (__doc__ or "").split("\n\n", 1)[1].strip()
    from importlib.metadata import version

    names = ("jax", "jaxlib", "jaxopt", "optax") + (("ott-jax",) if J["ott"] else ())
    versions = (
        "Versions: "
        + ", ".join(f"{m} {version(m)}" for m in names)
        + f"; XLA_FLAGS=`{os.environ.get('XLA_FLAGS', '')}`."
    )
    cpu, wall = time.process_time(), time.perf_counter()
    with _Pinned():
        cheap, c1, d1 = _cheap(ctx, J)
        want = not ctx.only_sets
        floor = _copy_floor(ctx, J) if want or "unit_cube" in ctx.only_sets else []
        birk, c2, d2 = _birkhoff(ctx, J) if want or "birkhoff" in ctx.only_sets else ([], [], {})
        iso, c3, d3 = _isotonic(ctx, J) if want or "isotonic" in ctx.only_sets else ([], [], {})
    cores = (time.process_time() - cpu) / (time.perf_counter() - wall)
    versions += (
        f" `PJRT_NPROC={os.environ.get('PJRT_NPROC', '')}`. The process' CPU time / wall "
        f"time over the section: {cores:.2f} (one core: at most 1)."
    )
    parts = [head, versions]
    if cheap or iso:
        parts.append(
            "### Cheap oracles and isotonic regression\n\n*ratio* = time(fastest peer) / "
            "time(projloss) (> 1: projloss faster); the rates are projections per second.\n\n"
            + table(
                ["oracle", "k", "n", "projloss (proj/s)", "JAX peers (proj/s)", "ratio", "load"],
                cheap + iso,
                "lrrrlrr",
            )
        )
    if floor:
        parts.append(
            "### The unit cube against a copy of its input, k = 100\n\n"
            + inspect.cleandoc(_copy_floor.__doc__ or "").split("\n\n", 1)[1]
            + " *x copy* = time / time(copy) (1: as fast as copying).\n\n"
            + table(
                [
                    "n",
                    "MB",
                    "copy (proj/s)",
                    "projloss",
                    "x copy",
                    "jnp.clip",
                    "x copy",
                    "load",
                ],
                floor,
                "rrrrrrrr",
            )
        )
    if birk:
        parts.append(
            f"### Birkhoff polytope, n = {1000 if not ctx.quick else 200}, k = 11, "
            "theta ~ N(0, 2^2)\n\nWhole-batch seconds; *speed-up* = time(peer) / "
            "time(projloss) at the marginal violation shown.\n\n"
            + table(
                ["geometry", "solver", "time (s)", "marginal violation", "speed-up", "load"],
                birk,
                "llrrrr",
            )
        )
    return SectionResult("\n\n".join(parts), c1 + c2 + c3, d1 | d2 | d3)
