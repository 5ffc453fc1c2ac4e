"""Section "gpu": projloss.torch on a CUDA GPU against the fastest peer on the same device.

Run only where a CUDA device is present (``python -m benchmarks --sections gpu``);
elsewhere the section records *not measured: no CUDA device* and its checks stay NOT
MEASURED. ``python -m benchmarks.gpu --device cpu`` is a dry run of the same code
on the CPU at tiny sizes (the tensor algorithms, ``set_cpu_backend("array_api")``, stand
in for the GPU path); the tests run it.

Setting: float64 (``--dtype float32`` in the command ``python -m benchmarks.gpu``),
theta ~ N(0, 1) of n in {10^3, 10^4, 10^5, 10^6} samples of k in {10, 100} entries (the
matrix sets ``cube`` and ``row_simplex``: k x k = 10 x 10; the Birkhoff polytope: k in
{5, 11, 20}, n up to 10^5, ``Birkhoff(tol=1e-6)``), the knapsack with l = u =
round(k / 5). A case that does not fit in the device's memory is marked so. Every
figure is the best of a few rounds, each batched to last ``--min-time``, the input
already on the device, timed by CUDA events around the calls (the host's share, e.g.
one synchronization per projection, included).

Peers, on the same device and at equal accuracy (*diff* = largest |projloss - peer|
entry on the first 1000 samples; the Birkhoff polytope: the peer's marginal violation,
each iterative peer at the loosest tolerance whose marginals hold to 1e-6):

- torch: ``entmax.sparsemax`` (simplex, rows of ``row_simplex``), ``torch.softmax``
  (KL simplex / rows), ``torch.clamp`` / ``torch.relu`` (unit cube, cube, orthant),
  ``torch.exp`` (their KL projections), ``torch.clone`` (R^p),
  ``torchsort.soft_rank`` (the permutahedron, ``l2`` and ``kl``: needs torchsort built
  with its CUDA kernel), POT's batched ``ot.batch.bregman_log_projection_batch`` (the
  KL Birkhoff polytope, torch backend);
- JAX (``optax``, ``jaxopt``, ``ott-jax``; the ``bench`` extra), in a child process
  (``python -m benchmarks.gpu_jax``: JAX on the GPU beside torch, no memory
  preallocation), each ``jax.jit(jax.vmap(f))``, compiled before timing:
  ``optax.projections.projection_simplex`` / ``projection_box`` /
  ``projection_non_negative``, ``jaxopt.projection.projection_simplex`` /
  ``projection_box_section`` (the capped simplex: default tolerance and 1e-12) /
  ``projection_birkhoff`` / ``kl_projection_birkhoff``, ``jax.nn.softmax``, a jitted
  log-domain Sinkhorn and ott-jax's ``Sinkhorn`` (KL Birkhoff);
- the projloss CPU engine (``ConvexSet.project`` on the host array; n <= 10^5).

Goals (issue 32): every oracle at least as fast as its fastest peer at n >= 10^4
(*ratio* = time(fastest peer) / time(projloss.torch) >= 1), the KL Birkhoff polytope at
least 5x jaxopt, and the projection loss + backward of a batch of 10^5 within 2x of the
bare projection.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from . import baselines as bl
from .registry import Check, Context, SectionResult, section
from .report import rate, table
from .torch_backend import (
    MARGINAL_TOL,
    Case,
    cases,
    loss_backward,
    make_set,
    peers_available,
    sample,
    torch_threads,
)

GPU_N = (1_000, 10_000, 100_000, 1_000_000)
GPU_K = (10, 100)
MATRIX_K = (10,)
BIRKHOFF_K = (5, 11, 20)
BIRKHOFF_N = (1_000, 10_000, 100_000)
#: The CPU engine is timed up to this n (beyond, it is linear in n and far behind).
ENGINE_MAX_N = 100_000
#: The loss + backward goal's batch size.
LOSS_N = 100_000
#: Diffs against projloss are taken on the first DIFF_N samples.
DIFF_N = 1000
PEER_GOAL, BIRKHOFF_KL_GOAL, LOSS_GOAL = 1.0, 5.0, 2.0
#: POT's batched Sinkhorn tolerances tried (loosest first) for marginals to MARGINAL_TOL.
POT_TOLS = (1e-5, 1e-6, 1e-7, 1e-8, 1e-9, 1e-10)
NOT_MEASURED = "not measured: no CUDA device"
SIZES_FULL = {
    "n": GPU_N,
    "vector_k": GPU_K,
    "matrix_k": MATRIX_K,
    "birkhoff_k": BIRKHOFF_K,
    "birkhoff_n": BIRKHOFF_N,
    "loss_n": LOSS_N,
    "engine_max_n": ENGINE_MAX_N,
}
SIZES_QUICK = {
    "n": (1_000, 10_000),
    "vector_k": (10,),
    "matrix_k": (5,),
    "birkhoff_k": (5, 11),
    "birkhoff_n": (1_000, 10_000),
    "loss_n": 10_000,
    "engine_max_n": 10_000,
}
#: The dry run on the CPU (tests): tiny sizes, every code path.
SIZES_DRY = {
    "n": (32,),
    "vector_k": (4,),
    "matrix_k": (3,),
    "birkhoff_k": (3,),
    "birkhoff_n": (32,),
    "loss_n": 32,
    "engine_max_n": 32,
}


def checks_of(ratios: dict[str, tuple[float, str]] | None = None, device: str = "") -> list[Check]:
    """The section's three checks, from ``{"peer": (worst ratio, where), "birkhoff_kl":
    ..., "loss": ...}``; without figures, NOT MEASURED."""
    r = ratios or {}

    def value(key: str) -> float | None:
        return r[key][0] if key in r else None

    def where(key: str) -> str:
        return (r[key][1] + (f"; {device}" if device else "")) if key in r else NOT_MEASURED

    return [
        Check(
            "gpu: every oracle at n >= 10^4: time(fastest peer on the device) / "
            "time(projloss.torch)",
            value("peer"),
            PEER_GOAL,
            detail=f"worst: {where('peer')}",
        ),
        Check(
            "gpu: Birkhoff (KL), marginals to 1e-6: time(jaxopt kl_projection_birkhoff) / "
            "time(projloss.torch)",
            value("birkhoff_kl"),
            BIRKHOFF_KL_GOAL,
            detail=f"worst: {where('birkhoff_kl')}",
        ),
        Check(
            "gpu: projection_loss + backward of a batch of 10^5: time / time(project)",
            value("loss"),
            LOSS_GOAL,
            higher_is_better=False,
            detail=f"worst: {where('loss')}",
        ),
    ]


# ------------------------------------------------------------------ timing on a device
def device_timer(device: Any, rounds: int, min_time: float) -> Callable[[Callable[[], Any]], float]:
    """Seconds per call of ``fn`` on ``device``: a warm-up call, then the best of
    ``rounds`` rounds batched to last ``min_time``, timed by CUDA events on a GPU
    (``time.perf_counter`` on the CPU) with the device synchronized around each round."""
    import torch

    cuda = device.type == "cuda"

    def sync() -> None:
        if cuda:
            torch.cuda.synchronize(device)

    def timer(fn: Callable[[], Any]) -> float:
        fn()
        sync()
        t0 = time.perf_counter()
        fn()
        sync()
        est = time.perf_counter() - t0
        number = max(1, int(min_time / max(est, 1e-9)))
        best = math.inf
        for _ in range(rounds):
            if cuda:
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _ in range(number):
                    fn()
                end.record()
                end.synchronize()
                dt = start.elapsed_time(end) / 1e3 / number
            else:
                t0 = time.perf_counter()
                for _ in range(number):
                    fn()
                dt = (time.perf_counter() - t0) / number
            best = min(best, dt)
        return min(best, est) if number == 1 else best

    return timer


# ------------------------------------------------------------------ torch peers
def torch_peers(
    P: dict[str, Any], case: Case, t: Any
) -> dict[str, tuple[Callable[[], Any], Callable[[Any], float]]]:
    """The torch peers of ``case`` on the tensor ``t`` (already on the device):
    ``{label: (call, accuracy)}``, accuracy(out) the figure of the *diff* column."""
    import torch

    name, g = case.name, case.geometry
    out: dict[str, Any] = {}
    if name == "reals":
        out["torch.clone"] = lambda: t.clone()
    elif name == "nonneg":
        out["torch.relu" if g == "euclidean" else "torch.exp(x - 1)"] = (
            (lambda: torch.relu(t)) if g == "euclidean" else (lambda: torch.exp(t - 1.0))
        )
    elif name in ("unit_cube", "cube"):
        if g == "euclidean":
            out["torch.clamp"] = lambda: torch.clamp(t, 0.0, 1.0)
        else:
            out["torch.exp(min(x - 1, 0))"] = lambda: torch.exp(torch.clamp(t - 1.0, max=0.0))
    elif name in ("simplex", "row_simplex"):
        if g == "euclidean":
            if P.get("entmax") is not None:
                out["entmax.sparsemax"] = lambda: P["entmax"].sparsemax(t, dim=-1)
        else:
            out["torch.softmax"] = lambda: torch.softmax(t, dim=-1)
    elif name == "permutahedron" and P.get("torchsort") is not None:
        reg = "l2" if g == "euclidean" else "kl"
        out[f"torchsort.soft_rank ({reg})"] = lambda: P["torchsort"].soft_rank(
            t, regularization=reg, regularization_strength=1.0
        )
    return {label: (fn, None) for label, fn in out.items()}


def pot_birkhoff_kl(t: Any, tol: float) -> Callable[[], Any]:
    """POT's batched log-domain Bregman projection onto the doubly stochastic matrices
    (KL(T, e^theta) under T 1 = T^T 1 = 1: the KL Birkhoff projection), torch backend."""
    import ot
    import torch

    nx = ot.backend.TorchBackend()
    ones = torch.ones(t.shape[:-1], dtype=t.dtype, device=t.device)

    def f() -> Any:
        return ot.batch.bregman_log_projection_batch(t, a=ones, b=ones, nx=nx, tol=tol)["T"]

    return f


def to_host(x: Any) -> np.ndarray:
    return x.detach().cpu().double().numpy()


# ------------------------------------------------------------------ the JAX child
def jax_peers(
    todo: list[Case], device: str, dtype: str, seed: int, rounds: int, min_time: float, log
) -> dict[str, Any]:
    """Time the JAX peers of ``todo`` in a child process (``python -m
    benchmarks.gpu_jax``): ``{"cases": {case id: {label: [seconds, diff]}}, ...}`` or
    ``{"skipped": reason}``."""
    if not todo:
        return {"cases": {}}
    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory() as tmp:
        spec, out = Path(tmp) / "spec.json", Path(tmp) / "out.json"
        spec.write_text(
            json.dumps(
                {
                    "device": device,
                    "dtype": dtype,
                    "seed": seed,
                    "rounds": rounds,
                    "min_time": min_time,
                    "diff_n": DIFF_N,
                    "cases": [[c.name, c.geometry, c.k, c.n] for c in todo],
                }
            )
        )
        env = dict(os.environ)
        env["JAX_PLATFORMS"] = "cuda" if device == "cuda" else "cpu"
        env["XLA_PYTHON_CLIENT_PREALLOCATE"] = "false"  # leave the GPU's memory to torch
        env["PYTHONPATH"] = os.pathsep.join(
            [str(root), str(root / "src"), env.get("PYTHONPATH", "")]
        ).rstrip(os.pathsep)
        proc = subprocess.run(
            [sys.executable, "-m", "benchmarks.gpu_jax", str(spec), str(out)],
            cwd=root,
            env=env,
            capture_output=True,
            text=True,
        )
        for line in proc.stdout.splitlines():
            log("  " + line)
        if proc.returncode != 0 or not out.exists():
            tail = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return {"skipped": f"the JAX child failed (exit {proc.returncode}): {tail}"}
        return json.loads(out.read_text())


def case_id(c: Case) -> str:
    return f"{c.name}/{c.geometry}/k={c.k}/n={c.n}"


#: The (set, geometry) pairs with JAX peers.
JAX_KEYS = (
    "simplex/euclidean",
    "simplex/kl",
    "row_simplex/euclidean",
    "row_simplex/kl",
    "unit_cube/euclidean",
    "unit_cube/kl",
    "cube/euclidean",
    "nonneg/euclidean",
    "knapsack/euclidean",
    "birkhoff/euclidean",
    "birkhoff/kl",
)


# ------------------------------------------------------------------ the measurement
def measure(
    ctx: Context,
    device: str = "cuda",
    sizes: dict[str, Any] | None = None,
    dtype: str = "float64",
    rounds: int | None = None,
) -> SectionResult:
    """Every oracle against its peers on ``device`` (``"cuda"``; ``"cpu"`` is the dry run,
    on the tensor algorithms)."""
    import torch

    import projloss.torch as pt

    sizes = sizes or (SIZES_QUICK if ctx.quick else SIZES_FULL)
    dev = torch.device(device)
    tdtype = getattr(torch, dtype)
    rounds = rounds or (2 if ctx.quick else max(3, min(ctx.repeat, 5)))
    timer = device_timer(dev, rounds, ctx.min_time)
    P = peers_available()
    rows: list[list[str]] = []
    data: dict[str, float] = {}
    results: dict[str, dict[str, Any]] = {}  # case id -> ours, loss, peers {label: (s, diff)}
    todo_jax: list[Case] = []
    grid = [
        c
        for n in sizes["n"]
        for c in cases(n, sizes["vector_k"], sizes["matrix_k"], (), None, ctx.only_sets)
        if c.name != "birkhoff"
    ]
    if not ctx.only_sets or "birkhoff" in ctx.only_sets:
        grid += [
            Case("birkhoff", g, k, n)
            for g in ("euclidean", "kl")
            for k in sizes["birkhoff_k"]
            for n in sizes["birkhoff_n"]
        ]
    # The dry run: the tensor algorithms (what runs on a GPU) on one CPU thread (torch's
    # thread pool on a loaded machine took milliseconds per call on tiny tensors).
    cpu = dev.type == "cpu"
    backend = "array_api" if cpu else pt.get_cpu_backend()
    with pt.cpu_backend(backend), torch_threads(1 if cpu else torch.get_num_threads()):
        for case in grid:
            res = _one_case(ctx, case, dev, tdtype, timer, P, sizes)
            results[case_id(case)] = res
            if case.key in JAX_KEYS and "error" not in res:
                todo_jax.append(case)
    J = jax_peers(todo_jax, dev.type, dtype, ctx.seed, rounds, ctx.min_time, ctx.log)
    jax_note = J.get("skipped", "")
    for cid, peers in J.get("cases", {}).items():
        results[cid]["peers"].update({label: tuple(v) for label, v in peers.items()})
    worst: dict[str, tuple[float, str]] = {}
    for case in grid:
        cid = case_id(case)
        res = results[cid]
        if "error" in res:
            rows.append([case.key, str(case.k), str(case.n), res["error"], "", "", "", "", ""])
            continue
        ours, peers = res["ours"], res["peers"]
        data[f"gpu/{cid}"] = ours
        for label, (s, _) in peers.items():
            if s is not None:
                data[f"gpu/{cid}/{label}"] = s
        timed = {label: v for label, v in peers.items() if v[0] is not None}
        fastest = min(timed, key=lambda label: timed[label][0]) if timed else None
        ratio = timed[fastest][0] / ours if fastest else None
        if ratio is not None and case.n >= 10_000:
            where = f"{case.key} k={case.k} n={case.n} vs {fastest}"
            if "peer" not in worst or ratio < worst["peer"][0]:
                worst["peer"] = (ratio, where)
        if case.key == "birkhoff/kl" and case.n >= 10_000:
            jx = [label for label in timed if label.startswith("jaxopt")]
            if jx:
                r = timed[jx[0]][0] / ours
                where = f"k={case.k} n={case.n}"
                if "birkhoff_kl" not in worst or r < worst["birkhoff_kl"][0]:
                    worst["birkhoff_kl"] = (r, where)
        if res.get("loss") is not None:
            data[f"gpu/{cid}/loss+backward"] = res["loss"]
            r = res["loss"] / ours
            if "loss" not in worst or r > worst["loss"][0]:
                worst["loss"] = (r, f"{case.key} k={case.k}")
        peers_txt = "; ".join(
            f"{label}: "
            + (rate(s, case.n) if s is not None else str(d))
            + (f" ({d})" if s is not None and d is not None else "")
            for label, (s, d) in peers.items()
        )
        rows.append(
            [
                case.key,
                str(case.k),
                str(case.n),
                rate(ours, case.n),
                peers_txt or "-",
                fastest or "-",
                "-" if ratio is None else f"{ratio:.2f}",
                "-" if res.get("loss") is None else f"{res['loss'] / ours:.2f}",
                res["diff_note"],
            ]
        )
        ctx.log(
            f"  gpu {case.key:<24} k={case.k:<3} n={case.n:<8} "
            + ("no peer" if ratio is None else f"{ratio:6.2f}x {fastest}")
        )
    name = torch.cuda.get_device_name(dev) if dev.type == "cuda" else "the CPU (dry run)"
    head = (__doc__ or "").split("\n\n", 1)[1].strip()
    info = (
        f"Device: {name}; torch {torch.__version__}; dtype {dtype}; "
        f"{'CUDA ' + str(torch.version.cuda) if dev.type == 'cuda' else 'no CUDA'}."
        + ("" if not jax_note else f" JAX peers: {jax_note}.")
        + "".join(f" {m} {v}." for m, v in J.get("versions", {}).items())
        + "".join(
            f" `{m}` not measured ({P[m + '_why']})."
            for m in ("entmax", "torchsort")
            if P[m] is None
        )
    )
    md = "\n\n".join(
        [
            head,
            info,
            "Rates in projections per second; *ratio* = time(fastest peer) / "
            "time(projloss.torch); *loss* = time(projection_loss + backward) / "
            "time(project); *projloss diff* = largest |projloss.torch - engine| on the "
            "first samples (the Birkhoff polytope: its marginal violation).\n\n"
            + table(
                [
                    "oracle",
                    "k",
                    "n",
                    "projloss.torch",
                    "peers (proj/s, diff)",
                    "fastest",
                    "ratio",
                    "loss",
                    "projloss diff",
                ],
                rows,
                "lrrrllrrr",
            ),
        ]
    )
    # the checks are the GPU's: a dry run on the CPU leaves them NOT MEASURED
    return SectionResult(md, checks_of(worst, name) if dev.type == "cuda" else checks_of(), data)


def _one_case(
    ctx: Context,
    case: Case,
    dev: Any,
    tdtype: Any,
    timer: Callable[[Callable[[], Any]], float],
    P: dict[str, Any],
    sizes: dict[str, Any],
) -> dict[str, Any]:
    """projloss.torch, its loss + backward, the torch peers and the engine for one case."""
    import torch

    import projloss.torch as pt

    cset, g = make_set(case.name, case.k), case.geometry
    theta, phi = sample(case, ctx.seed)
    sub = theta[:DIFF_N]
    ref = cset.project(sub, g)  # the engine, for the diffs
    peers: dict[str, tuple[float | None, str | None]] = {}
    out: dict[str, Any] = {"peers": peers, "loss": None}
    try:
        t = torch.as_tensor(theta, dtype=tdtype, device=dev)
        f = torch.as_tensor(phi, dtype=tdtype, device=dev)
        u = pt.project(t, cset, g)
        if case.name == "birkhoff":
            out["diff_note"] = f"{bl.marginal_violation(to_host(u[:DIFF_N])):.0e}"
        else:
            out["diff_note"] = f"{np.abs(to_host(u[:DIFF_N]) - ref).max():.0e}"
        del u
        out["ours"] = timer(lambda: pt.project(t, cset, g))
        if case.n == sizes["loss_n"]:
            out["loss"] = timer(loss_backward(t.clone().requires_grad_(), f, cset, g))
        for label, (fn, _) in torch_peers(P, case, t).items():
            peers[label] = _peer(fn, timer, case, ref)
        if case.key == "birkhoff/kl":
            _pot(t, timer, peers)
    except torch.cuda.OutOfMemoryError:
        out["error"] = "out of the device's memory"
    finally:
        if dev.type == "cuda":
            torch.cuda.empty_cache()
    if "error" not in out and case.n <= sizes["engine_max_n"]:
        peers["projloss CPU engine"] = (timer(lambda: cset.project(theta, g)), None)
    return out


def _peer(
    fn: Callable[[], Any], timer: Callable[[Callable[[], Any]], float], case: Case, ref: np.ndarray
) -> tuple[float | None, str | None]:
    try:
        got = to_host(fn()[:DIFF_N])
        diff = f"diff {np.abs(got - ref).max():.0e}"
        return timer(fn), diff
    except Exception as exc:  # e.g. torchsort without its CUDA kernel
        return None, f"failed: {type(exc).__name__}: {str(exc).splitlines()[0][:80]}"


def _pot(t: Any, timer: Callable[[Callable[[], Any]], float], peers: dict) -> None:
    """POT's batched KL projection at the loosest tolerance reaching marginals 1e-6."""
    try:
        import ot  # noqa: F401
    except ImportError:
        peers["POT batch Sinkhorn"] = (None, "not installed")
        return
    for tol in POT_TOLS:
        fn = pot_birkhoff_kl(t, tol)
        try:
            v = bl.marginal_violation(to_host(fn()))
        except Exception as exc:
            peers["POT batch Sinkhorn"] = (None, f"failed: {type(exc).__name__}")
            return
        if v <= MARGINAL_TOL or tol == POT_TOLS[-1]:
            peers[f"POT bregman_log_projection_batch (tol={tol:g})"] = (
                timer(fn),
                f"marginals {v:.0e}",
            )
            return


@section("gpu", "PyTorch backend on a GPU", order=47)
def run(ctx: Context) -> SectionResult:
    """projloss.torch vs the fastest peer on a CUDA GPU (not measured without one)."""
    try:
        import torch
    except ImportError:
        return _not_measured(ctx, "PyTorch is not installed")
    if not torch.cuda.is_available():
        return _not_measured(ctx, "")
    return measure(ctx, "cuda")


def _not_measured(ctx: Context, why: str) -> SectionResult:
    line = NOT_MEASURED + (f" ({why})" if why else "") + "."
    ctx.log("  " + line)
    md = (
        f"**{line[0].upper() + line[1:]}** This section runs where a CUDA GPU is present "
        "(`python -m benchmarks --sections gpu --update benchmarks/RESULTS.json`); its "
        "code is exercised on the CPU by `python -m benchmarks.gpu --device cpu` "
        "(tests/benchmarks/test_gpu.py)."
    )
    return SectionResult(md, checks_of(), {})


def main(argv: list[str] | None = None) -> int:
    """``python -m benchmarks.gpu``: the section alone, on a chosen device."""
    p = argparse.ArgumentParser(prog="python -m benchmarks.gpu", description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (default) or cpu (a dry run)")
    p.add_argument("--dtype", default="float64", choices=["float64", "float32"])
    p.add_argument("--quick", action="store_true", help="smaller grid (n <= 10^4)")
    p.add_argument("--min-time", type=float, default=0.05, help="seconds per timed round")
    p.add_argument("--sets", help="comma-separated set names")
    p.add_argument("--output", type=Path, help="write the Markdown here (default: print it)")
    args = p.parse_args(argv)
    import torch

    if args.device.startswith("cuda") and not torch.cuda.is_available():
        print(NOT_MEASURED, file=sys.stderr)
        return 2
    ctx = Context(
        quick=args.quick,
        min_time=args.min_time if args.device.startswith("cuda") else min(args.min_time, 0.005),
        only_sets=tuple(x.strip() for x in (args.sets or "").split(",") if x.strip()),
        log=lambda msg: print(msg, flush=True),
    )
    sizes = SIZES_DRY if args.device == "cpu" else None
    res = measure(ctx, args.device, sizes, args.dtype, rounds=1 if args.device == "cpu" else None)
    md = res.markdown + "\n\n" + "\n".join("- " + c.line() for c in res.checks) + "\n"
    if args.output:
        args.output.write_text(md)
    else:
        print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
