"""The Newton method's products with large CSR features: scipy against the compiled loops.

``python -m benchmarks.sparse_products [n_train] [density]`` builds the tmc2007-shape
features of the ``scaling`` section's sparse case (d = 30,438, rows of unit norm;
default: case (b) at n = 28,596, i.e. 17,158 training rows at the subset's density 0.0452)
and times, with one thread, the two products of an objective evaluation with ``p = 22``
outputs: ``G @ W`` (scipy's CSR product against :func:`projloss.estimators.
_sparse_products.csr_matmul`) and ``G.T @ T`` (scipy's product on the CSC view, no
transposed copy, against :func:`~projloss.estimators._sparse_products.csr_t_matmul`).
Prints the CPU seconds (best of five) and the largest relative difference.
"""

from __future__ import annotations

import sys
import time

import numpy as np

from .timing import best_of


def main(argv: list[str] | None = None) -> int:
    from threadpoolctl import threadpool_limits

    from projloss.estimators._sparse_products import csr_matmul, csr_t_matmul

    from .scaling_cases import sparse_features

    argv = sys.argv[1:] if argv is None else argv
    n = int(argv[0]) if argv else 17_158
    density = float(argv[1]) if len(argv) > 1 else 0.0452
    d, p = 30_438, 22
    G = sparse_features(n, d, density, seed=0)
    rng = np.random.default_rng(0)
    W, T = rng.standard_normal((d, p)), rng.standard_normal((n, p))
    with threadpool_limits(limits=1):
        csr_matmul(G[:2], W), csr_t_matmul(G[:2], T[:2])  # compiled (or loaded)
        rows = [
            ("G @ W", lambda: G @ W, lambda: csr_matmul(G, W)),
            ("G.T @ T", lambda: G.T @ T, lambda: csr_t_matmul(G, T)),
        ]
        print(f"CSR {n} x {d}, {G.nnz / n:.0f} entries a row, p = {p}, one thread")
        print("| product | scipy (s) | compiled (s) | speed-up | max rel. difference |")
        print("| --- | ---: | ---: | ---: | ---: |")
        for name, scipy_fn, kernel_fn in rows:
            a, ref = best_of(scipy_fn, 5, clock=time.process_time)
            b, out = best_of(kernel_fn, 5, clock=time.process_time)
            diff = float(np.abs(out - ref).max() / max(float(np.abs(ref).max()), 1e-300))
            print(f"| {name} | {a:.3f} | {b:.3f} | {a / b:.2f}x | {diff:.1e} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
