"""Section "startup": what a fresh Python process pays before its first projection.

Every DVC stage and every test worker is a new process: it imports projloss and makes a
first call of each oracle, which, for the compiled kernels, loads them from numba's on-disk
cache (or compiles them when the cache is empty: once per machine and source version).
Measured in fresh subprocesses: the import time, the first and second call of every
(set, geometry) projection on a (100, 10) batch ((100, 5, 5) for k x k sets), with the
kernel cache as it is (warm) and with an empty cache directory (``NUMBA_CACHE_DIR``
pointing to a new temporary directory: cold compilation).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from .registry import Context, SectionResult, section
from .report import ROOT, table

SCRIPT = r"""
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from projloss.sets import get_set
t_import = time.perf_counter() - t0
rng = np.random.default_rng(0)
out = {"import": t_import, "first": {}, "second": {}}
for name, params in [("simplex", {}), ("knapsack", {"lower": 2, "upper": 2}),
                     ("permutahedron", {}), ("order_simplex", {}), ("row_simplex", {}),
                     ("birkhoff", {})]:
    S = get_set(name, **params)
    theta = rng.standard_normal((100, 5, 5) if S.matrix else (100, 10))
    for g in S.geometries:
        for key in ("first", "second"):
            t = time.perf_counter()
            S.project(theta, g)
            out[key][f"{name}/{g}"] = time.perf_counter() - t
out["numba_loaded"] = "numba" in sys.modules
print(json.dumps(out))
"""

NUMBA_IMPORT = r"""
import json, time
t0 = time.perf_counter()
import numba
print(json.dumps({"numba": time.perf_counter() - t0}))
"""


def _run(env_extra: dict[str, str], script: str = SCRIPT) -> dict:
    env = dict(os.environ)
    src = str(ROOT / "src")
    env["PYTHONPATH"] = src + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.update(env_extra)
    res = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
    )
    return json.loads(res.stdout.strip().splitlines()[-1])


@section("startup", "Start-up cost of a fresh process", order=10)
def run(ctx: Context) -> SectionResult:
    """Import time and first-call (kernel load / compile) time in fresh processes."""
    warm = [_run({}) for _ in range(1 if ctx.quick else 3)]
    t_numba = min(_run({}, NUMBA_IMPORT)["numba"] for _ in range(1 if ctx.quick else 3))
    with tempfile.TemporaryDirectory() as tmp:
        cold = _run({"NUMBA_CACHE_DIR": str(Path(tmp))})
    best = {
        "import": min(w["import"] for w in warm),
        "first": {k: min(w["first"][k] for w in warm) for k in warm[0]["first"]},
        "second": {k: min(w["second"][k] for w in warm) for k in warm[0]["second"]},
    }
    rows = []
    for key in best["first"]:
        rows.append(
            [
                key,
                f"{cold['first'][key] * 1e3:.1f}",
                f"{best['first'][key] * 1e3:.1f}",
                f"{best['second'][key] * 1e3:.2f}",
            ]
        )
    tot_cold = sum(cold["first"].values())
    tot_warm = sum(best["first"].values())
    tot_second = sum(best["second"].values())
    rows.append(
        ["**total**", f"{tot_cold * 1e3:.0f}", f"{tot_warm * 1e3:.0f}", f"{tot_second * 1e3:.1f}"]
    )
    ctx.log(
        f"  import {best['import']:.2f} s; first calls: {tot_cold:.2f} s (empty kernel cache), "
        f"{tot_warm:.2f} s (warm cache); second calls {tot_second * 1e3:.1f} ms"
    )
    md = (
        (__doc__ or "").split("\n\n", 1)[1].strip()
        + f"\n\n`import projloss.sets` (numpy, scipy, scikit-learn and numba included): "
        f"{best['import']:.2f} s (best of {len(warm)} processes), of which `import numba` "
        f"alone takes {t_numba:.2f} s (numba imported: "
        f"{'yes' if warm[0]['numba_loaded'] else 'no'}). The first compiled call of a "
        "process also initializes numba's code generator (the first row below).\n\n"
        + table(
            [
                "projection",
                "first call, empty cache (ms)",
                "first call, warm cache (ms)",
                "second call (ms)",
            ],
            rows,
        )
    )
    data = {
        "startup/import": best["import"],
        "startup/first_cold": tot_cold,
        "startup/first_warm": tot_warm,
        "startup/second": tot_second,
    }
    return SectionResult(md, [], data)
