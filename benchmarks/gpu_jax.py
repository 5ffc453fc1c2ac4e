"""The JAX peers of the ``gpu`` section, timed in a child process of their own.

``python -m benchmarks.gpu_jax SPEC.json OUT.json``: for each case of the spec (set,
geometry, k, n), the JAX peers of the ``gpu`` section (see :mod:`benchmarks.gpu`), each
``jax.jit(jax.vmap(f))`` on the device named by ``JAX_PLATFORMS`` (set by the parent),
compiled before timing, the input on the device, the output waited for
(``block_until_ready``); best of the spec's rounds. Writes ``{"cases": {case id:
{label: [seconds or null, note]}}, "versions": {...}}``, or ``{"skipped": reason}``
without jax / jaxopt / optax.

A process of its own: the parent's JAX (if POT imported it) is set up for one CPU
thread, and JAX beside torch on one GPU must not preallocate the device's memory
(``XLA_PYTHON_CLIENT_PREALLOCATE=false``, set by the parent).
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import baselines as bl
from .torch_backend import MARGINAL_TOL, Case, knapsack_budget, make_set, sample

LBFGS_TOLS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)


def load(dtype: str) -> dict[str, Any] | None:
    try:
        import jax
        import jax.numpy as jnp
        import jaxopt
        import optax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", dtype == "float64")
    mods: dict[str, Any] = {"jax": jax, "jnp": jnp, "jaxopt": jaxopt, "optax": optax}
    try:
        import ott  # noqa: F401

        mods["ott"] = True
    except ImportError:
        mods["ott"] = False
    return mods


def peers(J: dict[str, Any], key: str, k: int) -> dict[str, Callable]:
    """Per-sample functions (one point: a vector, or a k x k matrix) for ``key``."""
    jax, jnp, jaxopt, optax = J["jax"], J["jnp"], J["jaxopt"], J["optax"]
    proj, oproj = jaxopt.projection, optax.projections
    rows = jax.vmap  # a matrix point: the vector function on each row
    out: dict[str, Callable] = {}
    if key == "simplex/euclidean":
        out["optax projection_simplex"] = oproj.projection_simplex
        out["jaxopt projection_simplex"] = proj.projection_simplex
    elif key == "row_simplex/euclidean":
        out["optax projection_simplex (rows)"] = rows(oproj.projection_simplex)
    elif key in ("simplex/kl", "row_simplex/kl"):
        out["jax.nn.softmax"] = jax.nn.softmax
    elif key in ("unit_cube/euclidean", "cube/euclidean"):
        out["optax projection_box"] = lambda x: oproj.projection_box(x, 0.0, 1.0)
        out["jnp.clip"] = lambda x: jnp.clip(x, 0.0, 1.0)
    elif key == "unit_cube/kl":
        out["jnp.exp(min(x - 1, 0))"] = lambda x: jnp.exp(jnp.minimum(x - 1.0, 0.0))
    elif key == "nonneg/euclidean":
        out["optax projection_non_negative"] = oproj.projection_non_negative
    elif key == "knapsack/euclidean":
        m = float(knapsack_budget(k))
        lo, hi, w = jnp.zeros(k), jnp.ones(k), jnp.ones(k)
        out["jaxopt projection_box_section"] = lambda x: proj.projection_box_section(
            x, (lo, hi, w, m)
        )

        def tight(x):  # the same bisection at tol 1e-12: equal accuracy
            tau = (
                jaxopt.Bisection(
                    optimality_fun=lambda tau, x: jnp.sum(jnp.clip(tau + x, 0.0, 1.0)) - m,
                    lower=jnp.min(-x),
                    upper=jnp.max(1.0 - x),
                    tol=1e-12,
                    maxiter=200,
                    check_bracket=False,
                )
                .run(x=x)
                .params
            )
            return jnp.clip(tau + x, 0.0, 1.0)

        out["jaxopt box_section, Bisection tol=1e-12"] = tight
    return out


def birkhoff_peers(J: dict[str, Any], geometry: str, xj: Any) -> dict[str, tuple[Callable, str]]:
    """jaxopt at the loosest L-BFGS tol reaching marginals 1e-6, and (KL) Sinkhorns."""
    from .jax_baselines import _ott_sinkhorn, _sinkhorn_log

    jax, jaxopt = J["jax"], J["jaxopt"]
    project = (
        jaxopt.projection.projection_birkhoff
        if geometry == "euclidean"
        else jaxopt.projection.kl_projection_birkhoff
    )
    out: dict[str, tuple[Callable, str]] = {}
    for tol in LBFGS_TOLS:

        def one(x, tol=tol):
            return project(x, make_solver=lambda fun: jaxopt.LBFGS(fun=fun, tol=tol, maxiter=2000))

        f = jax.jit(jax.vmap(one))
        v = bl.marginal_violation(np.asarray(f(xj)))
        if v <= MARGINAL_TOL or tol == LBFGS_TOLS[-1]:
            out[f"jaxopt {project.__name__} (L-BFGS tol={tol:g})"] = (f, f"marginals {v:.0e}")
            break
    if geometry == "kl":
        f = jax.jit(jax.vmap(_sinkhorn_log(J, MARGINAL_TOL)))
        v = bl.marginal_violation(np.asarray(f(xj)))
        out[f"jitted log-domain Sinkhorn (to {MARGINAL_TOL:g})"] = (f, f"marginals {v:.0e}")
        if J["ott"]:
            try:
                f = jax.jit(jax.vmap(_ott_sinkhorn(MARGINAL_TOL)))
                v = bl.marginal_violation(np.asarray(f(xj)))
                out["ott-jax Sinkhorn"] = (f, f"marginals {v:.0e}")
            except Exception as exc:  # an ott-jax / jax version mismatch
                print(f"ott-jax Sinkhorn skipped: {exc!r}")
    return out


def best_time(fn: Callable[[], Any], rounds: int, min_time: float) -> float:
    fn().block_until_ready()
    t0 = time.perf_counter()
    fn().block_until_ready()
    est = time.perf_counter() - t0
    number = max(1, int(min_time / max(est, 1e-9)))
    best = math.inf
    for _ in range(rounds):
        t0 = time.perf_counter()
        for _ in range(number):
            out = fn()
        out.block_until_ready()
        best = min(best, (time.perf_counter() - t0) / number)
    return min(best, est) if number == 1 else best


def run(spec: dict[str, Any]) -> dict[str, Any]:
    J = load(spec["dtype"])
    if J is None:
        return {"skipped": "jax, jaxopt or optax not installed (the bench extra)"}
    jax, jnp = J["jax"], J["jnp"]
    dtype = getattr(jnp, spec["dtype"])
    result: dict[str, Any] = {"cases": {}, "devices": [str(d) for d in jax.devices()]}
    for name, geometry, k, n in spec["cases"]:
        case = Case(name, geometry, k, n)
        cid = f"{name}/{geometry}/k={k}/n={n}"
        theta, _ = sample(case, spec["seed"])
        ref = make_set(name, k).project(theta[: spec["diff_n"]], geometry)
        xj = jnp.asarray(theta, dtype=dtype)
        res: dict[str, list] = {}
        try:
            if name == "birkhoff":
                fns = birkhoff_peers(J, geometry, xj)
            else:
                fns = {}
                for label, f in peers(J, case.key, k).items():
                    g = jax.jit(jax.vmap(f))
                    got = np.asarray(g(xj)[: spec["diff_n"]], dtype=np.float64)
                    fns[label] = (g, f"diff {np.abs(got - ref).max():.0e}")
            for label, (g, note) in fns.items():
                s = best_time(lambda g=g, xj=xj: g(xj), spec["rounds"], spec["min_time"])
                res[label] = [s, note]
                print(f"jax {cid:<36} {label}: {s * 1e3:.3f} ms ({note})", flush=True)
        except Exception as exc:  # out of memory, a version mismatch: that case only
            res["JAX peers"] = [None, f"failed: {type(exc).__name__}: {str(exc)[:80]}"]
        result["cases"][cid] = res
    from importlib.metadata import PackageNotFoundError, version

    versions = {}
    for m in ("jax", "jaxlib", "jaxopt", "optax", "ott-jax"):
        try:
            versions[m] = version(m)
        except PackageNotFoundError:
            pass
    result["versions"] = versions
    return result


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    spec_path, out_path = Path(argv[0]), Path(argv[1])
    out = run(json.loads(spec_path.read_text()))
    out_path.write_text(json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
