"""The cases of the ``scaling`` section: synthetic data at a paper dataset's shape, fitted
through the pipeline's own stage cores, each measured in a fresh process.

``python -m benchmarks.scaling_cases '{"case": "knapsack", "n": 1000}'`` runs one case and
prints one line ``SCALING_RESULT {json}`` (seconds, peak memory, iterations...). A fresh
process per case makes the peak memory that case's own: the peak resident set size
(``VmHWM`` of ``/proc/self/status``) is reset once the libraries are imported, the data
generated and the compiled kernels warmed up (a tiny fit of the same composition), so it
is the high-water mark of the measured work plus what the process already held (the
libraries, the data); ``rss_before`` is what it held.

The cases (see :mod:`benchmarks.scaling` for the sizes):

- ``knapsack``: multilabel (knapsack, knapsack) at mediamill's shape (d = 120, k = 101)
  with labels from a planted linear model and mediamill's label cardinality; the tune
  stage's whole lambda grid (warm-started as configured) + the refit stage.
- ``sparse``: the same at tmc2007's shape (d = 30,438 sparse CSR, k = 22): X is never
  densified (every product with X in the solver is counted, see :func:`_sparse_spy`).
- ``birkhoff``: label ranking (Birkhoff, Birkhoff), k labels, one cold fit at the middle
  of the lambda grid.
- ``ordinal``: the paper's Table 4 protocol over the thirty orreview splits of one
  dataset (tune + refit + evaluate per split, serially), on the real data; cumulative
  seconds and peak memory after each split.
"""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

#: the prefix of the result line a case prints
RESULT = "SCALING_RESULT "
#: the pipeline's protocol for a dataset without its own test split (conf/data):
#: test 20 %, then validation 25 % of the rest -> train 60 %, validation 20 %, test 20 %
TEST_SIZE, VAL_SIZE = 0.2, 0.25
#: the warm-up fit's extra overrides: it only loads the compiled kernels
WARMUP = ("lambdas.num=2", "model.max_iter=10")
#: the Hydra overrides of each case (the composition; the data are synthetic)
OVERRIDES = {
    "knapsack": ("task=multilabel", "dataset=mediamill", "set=knapsack", "decoder=knapsack"),
    "sparse": ("task=multilabel", "dataset=tmc2007", "set=knapsack", "decoder=knapsack"),
    "birkhoff": ("task=label_ranking", "dataset=vehicle", "set=birkhoff", "decoder=birkhoff"),
    "ordinal": (
        "task=ordinal",
        "dataset=ERA",
        "set=order_simplex",
        "decoder=order_simplex",
    ),
}


# ---------------------------------------------------------------------------- data
@dataclass
class SyntheticData:
    """The part of :class:`pipeline.data.PreparedData` the tune and refit cores use."""

    train: tuple[Any, np.ndarray]
    val: tuple[Any, np.ndarray]
    test: tuple[Any, np.ndarray]

    @property
    def train_val(self) -> tuple[Any, np.ndarray]:
        import scipy.sparse as sp

        (Xa, ya), (Xb, yb) = self.train, self.val
        X = sp.vstack([Xa, Xb], format="csr") if sp.issparse(Xa) else np.vstack([Xa, Xb])
        return X, np.concatenate([ya, yb])


def split(X: Any, y: np.ndarray, seed: int = 0) -> SyntheticData:
    """Train / validation / test rows in the pipeline's proportions (60/20/20), shuffled."""
    n = X.shape[0]
    perm = np.random.default_rng(seed).permutation(n)
    n_test = round(TEST_SIZE * n)
    n_val = round(VAL_SIZE * (n - n_test))
    te, va, tr = perm[:n_test], perm[n_test : n_test + n_val], perm[n_test + n_val :]
    return SyntheticData((X[tr], y[tr]), (X[va], y[va]), (X[te], y[te]))


def label_frequencies(k: int, cardinality: float, exponent: float = 1.0) -> np.ndarray:
    r"""Zipf-like label frequencies :math:`p_j \propto (j+1)^{-s}`, scaled to sum to the
    label cardinality (the mean number of labels per sample), capped at 0.95."""
    p = (np.arange(1, k + 1, dtype=np.float64)) ** -exponent
    p *= cardinality / p.sum()
    return np.minimum(p, 0.95)


def planted_labels(scores: np.ndarray, freq: np.ndarray) -> np.ndarray:
    """0/1 labels: label j is on for the ``freq[j]`` fraction of samples with the highest
    score j (a planted linear model thresholded at its quantiles)."""
    thresholds = np.quantile(scores, 1.0 - freq, axis=0, method="higher").diagonal()
    return (scores >= thresholds).astype(np.int64)


def multilabel_dense(n: int, d: int, k: int, cardinality: float, seed: int = 0):
    """Dense standardized features, labels of a planted linear model with noise."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, k)) / np.sqrt(d)
    scores = X @ W + 0.5 * rng.standard_normal((n, k))
    return X, planted_labels(scores, label_frequencies(k, cardinality))


def sparse_features(n: int, d: int, density: float, seed: int = 0):
    """A CSR matrix ``(n, d)`` with about ``density * d`` stored entries per row (uniform
    columns, without repeats), positive values, rows scaled to unit norm (tf-idf like).
    Built row block by row block: no dense ``(n, d)`` array, no ``n * d`` index space."""
    import scipy.sparse as sp

    rng = np.random.default_rng(seed)
    per_row = max(1, round(density * d))
    blocks = []
    step = max(1, 2_000_000 // per_row)
    for start in range(0, n, step):
        m = min(step, n - start)
        cols = rng.integers(0, d, size=(m, per_row), dtype=np.int32)
        cols.sort(axis=1)
        keep = np.ones_like(cols, dtype=bool)
        keep[:, 1:] = cols[:, 1:] != cols[:, :-1]  # drop repeated columns of a row
        counts = keep.sum(axis=1)
        indptr = np.concatenate([[0], np.cumsum(counts)])
        data = rng.exponential(1.0, size=int(counts.sum())) + 0.1
        blocks.append(sp.csr_matrix((data, cols[keep], indptr), shape=(m, d)))
    X = sp.vstack(blocks, format="csr")
    norms = np.sqrt(np.asarray(X.multiply(X).sum(axis=1)).ravel())
    X = sp.diags(1.0 / np.maximum(norms, 1e-12)) @ X
    return X.tocsr()


def multilabel_sparse(n: int, d: int, k: int, cardinality: float, density: float, seed: int = 0):
    """Sparse features and labels of a planted sparse linear model (tmc2007-like label
    frequencies, a Zipf exponent of 1.3: 0.6 for the most frequent label)."""
    rng = np.random.default_rng(seed + 1)
    X = sparse_features(n, d, density, seed)
    W = rng.standard_normal((d, k))  # rows of X have unit norm: scores ~ N(0, 1)
    scores = np.asarray(X @ W)
    scores += 0.2 * scores.std() * rng.standard_normal(scores.shape)
    return X, planted_labels(scores, label_frequencies(k, cardinality, exponent=1.3))


def rankings(n: int, d: int, k: int, seed: int = 0):
    """Features and full rankings ``y[i, rank] = label`` of a planted linear model."""
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    W = rng.standard_normal((d, k)) / np.sqrt(d)
    scores = X @ W + 0.5 * rng.standard_normal((n, k))
    return X, np.argsort(-scores, axis=1, kind="stable").astype(np.int64)


# ---------------------------------------------------------------------------- memory
def _status_kib(field: str) -> int | None:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith(field + ":"):
                return int(line.split()[1])
    except OSError:
        pass
    return None


def reset_peak() -> bool:
    """Reset the peak resident set size of this process (Linux: ``/proc/self/clear_refs``);
    False if unsupported (then the peak is ``ru_maxrss``, since the process started)."""
    try:
        Path("/proc/self/clear_refs").write_text("5")
        return True
    except OSError:
        return False


def rss_mib() -> float:
    """The current resident set size, MiB."""
    kib = _status_kib("VmRSS")
    return float("nan") if kib is None else kib / 1024


def cpu_seconds() -> float:
    """User + system CPU seconds of this process so far (every fit is single-threaded: on
    a loaded machine, the work's CPU time is what its wall time would be on a quiet one)."""
    import resource

    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def peak_mib() -> float:
    """The peak resident set size since the last :func:`reset_peak`, MiB."""
    kib = _status_kib("VmHWM")
    if kib is None:
        import resource

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return kib / 1024


# ---------------------------------------------------------------------------- cases
def _cfg(case: str, *extra: str) -> tuple[dict[str, Any], Any]:
    """The composed config of ``case`` and its typed run config."""
    from pipeline.config.run import RunConfig

    from .compose import compose

    cfg = compose((*OVERRIDES[case], *extra))
    return cfg, RunConfig.from_config(cfg)


def paper_cardinality(dataset: str) -> float:
    """The label cardinality of the paper's ``dataset`` (``paper.avg_labels`` of its
    registry YAML, conf/dataset/)."""
    import yaml

    from pipeline.paths import conf_dir

    spec = yaml.safe_load((conf_dir() / "dataset" / f"{dataset}.yaml").read_text())
    return float(spec["paper"]["avg_labels"])


@contextlib.contextmanager
def _sparse_spy() -> Iterator[list[bool]]:
    from .fits import _sparse_spy as spy

    with spy() as calls:
        yield calls


def grid_and_refit(cfg: dict[str, Any], run: Any, data: Any) -> dict[str, Any]:
    """The tune stage's core on the whole lambda grid, then the refit stage's core
    (``run``: the typed run config of ``cfg``)."""
    from pipeline.runs import refit, tune

    c0, t0 = cpu_seconds(), time.perf_counter()
    tuned = tune.run(run, data)
    t1 = time.perf_counter()
    refitted = refit.run(run, data, tuned)
    t2, c2 = time.perf_counter(), cpu_seconds()
    its = [i for i in tuned["n_iter"] if i is not None]
    fits = list(refitted.fits.values())
    return {
        "grid_seconds": t1 - t0,
        "refit_seconds": t2 - t1,
        "seconds": t2 - t0,
        "cpu_seconds": c2 - c0,
        "grid_fits": len(tuned["lambdas"]),
        "grid_iter": int(sum(its)),
        "refits": len(fits),
        "refit_iter": int(sum(f["n_iter"] or 0 for f in fits)),
        "not_converged": int(sum(not c for c in tuned["converged"]))
        + int(sum(not f["converged"] for f in fits)),
    }


def _multilabel(params: dict[str, Any], sparse: bool) -> dict[str, Any]:
    n, d, k = int(params["n"]), int(params["d"]), int(params["k"])
    card = float(params["cardinality"])
    case = "sparse" if sparse else "knapsack"
    cfg, run = _cfg(case, *params.get("overrides", ()))

    def make(m: int, seed: int):
        if sparse:
            return multilabel_sparse(m, d, k, card, float(params["density"]), seed)
        return multilabel_dense(m, d, k, card, seed)

    # warm-up (compiled kernels): a short grid, few iterations (d x k variables can be many)
    grid_and_refit(*_cfg(case, *params.get("overrides", ()), *WARMUP), split(*make(60, 1)))
    data = split(*make(n, 0))
    X_train = data.train[0]
    out: dict[str, Any] = {"n_train": int(X_train.shape[0]), "n_val": int(data.val[0].shape[0])}
    if sparse:
        out["nnz_per_row"] = float(X_train.nnz / X_train.shape[0])
        out["density"] = float(X_train.nnz / (X_train.shape[0] * d))
        out["x_mib"] = (X_train.data.nbytes + X_train.indices.nbytes) / 2**20
    out["dense_x_mib"] = X_train.shape[0] * d * 8 / 2**20  # a dense copy of the train X
    out["label_cardinality"] = float(np.asarray(data.train[1]).sum(axis=1).mean())
    out["rss_before_mib"] = rss_mib()
    out["peak_reset"] = reset_peak()
    with _sparse_spy() as calls:
        out.update(grid_and_refit(cfg, run, data))
    out["peak_mib"] = peak_mib()
    out["products"] = len(calls)
    out["sparse_products"] = int(sum(calls))
    out["sparse_input"] = bool(sparse)
    return out


def case_knapsack(params: dict[str, Any]) -> dict[str, Any]:
    """Multilabel knapsack at mediamill's shape, dense X: lambda grid + refit."""
    return _multilabel(params, sparse=False)


def case_sparse(params: dict[str, Any]) -> dict[str, Any]:
    """Multilabel knapsack at tmc2007's shape, CSR X: lambda grid + refit."""
    return _multilabel(params, sparse=True)


def case_birkhoff(params: dict[str, Any]) -> dict[str, Any]:
    """Label ranking (Birkhoff, Birkhoff): one cold fit at the middle of the lambda grid."""
    from pipeline.config.composition import lambda_grid, make_estimator
    from pipeline.runs.tune import fit_quietly

    n, d, k = int(params["n"]), int(params["d"]), int(params["k"])
    cfg, run = _cfg("birkhoff", *params.get("overrides", ()))
    comp = run.composition
    grid = lambda_grid(cfg)
    lam = float(np.sqrt(grid[0] * grid[-1]))
    fit_quietly(make_estimator(comp, alpha=lam), *rankings(60, d, k, seed=1))  # warm-up
    X, y = rankings(n, d, k, seed=0)
    out: dict[str, Any] = {"lambda": lam, "rss_before_mib": rss_mib(), "peak_reset": reset_peak()}
    est = make_estimator(comp, alpha=lam)
    c0 = cpu_seconds()
    seconds, converged = fit_quietly(est, X, y)
    out.update(
        seconds=seconds,
        cpu_seconds=cpu_seconds() - c0,
        peak_mib=peak_mib(),
        n_iter=int(est.n_iter_),
        not_converged=int(not converged),
        train_accuracy=float(np.mean(est.predict(X[:1000]) == y[:1000])),
    )
    return out


def case_ordinal(params: dict[str, Any]) -> dict[str, Any]:
    """Table 4's protocol on one dataset's splits: per split the tune, refit and evaluate
    cores (each split's models saved and reloaded), serially; the prepared splits are
    loaded before the clock starts."""
    from pipeline.data import load_prepared
    from pipeline.runs import parallel as sweep

    dataset, n_splits = str(params["dataset"]), int(params["splits"])
    _, run = _cfg("ordinal", f"dataset={dataset}", *params.get("overrides", ()))
    cfgs = [run.for_split(s) for s in range(n_splits)]
    for c in cfgs:  # prepare missing splits from the mirror (outside the clock)
        load_prepared(dataset, c.data, prepare_missing=True)
        sweep.load(c)
    n_train = int(sweep.load(cfgs[0]).train[0].shape[0])
    with tempfile.TemporaryDirectory() as tmp:  # warm-up on split 0 (compiled kernels)
        tuned = sweep.tune_task(cfgs[0])
        sweep.refit_task(cfgs[0], tuned, Path(tmp))
        sweep.evaluate_task(cfgs[0], tuned, Path(tmp))
    out: dict[str, Any] = {"n_train": n_train, "rss_before_mib": rss_mib()}
    out["peak_reset"] = reset_peak()
    cumulative, cpu, peaks, not_converged = [], [], [], 0
    c0, t0 = cpu_seconds(), time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        for s, c in enumerate(cfgs):
            directory = Path(tmp) / f"split{s}"
            tuned = sweep.tune_task(c)
            sweep.refit_task(c, tuned, directory)
            sweep.evaluate_task(c, tuned, directory)
            not_converged += sum(not x for x in tuned["converged"])
            cumulative.append(time.perf_counter() - t0)
            cpu.append(cpu_seconds() - c0)
            peaks.append(peak_mib())
    out.update(
        seconds=cumulative[-1],
        cpu_seconds=cpu[-1],
        cumulative=cumulative,
        cumulative_cpu=cpu,
        peaks=peaks,
        not_converged=not_converged,
    )
    out["peak_mib"] = peaks[-1]
    return out


CASES = {
    "knapsack": case_knapsack,
    "sparse": case_sparse,
    "birkhoff": case_birkhoff,
    "ordinal": case_ordinal,
}


def run_case(params: dict[str, Any]) -> dict[str, Any]:
    """Run ``params["case"]`` in this process (one BLAS thread, as every fit)."""
    from threadpoolctl import threadpool_limits

    with threadpool_limits(limits=1):
        return CASES[params["case"]](params)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m benchmarks.scaling_cases '<json params>'", file=sys.stderr)
        return 2
    params = json.loads(argv[0])
    print(RESULT + json.dumps(run_case(params)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
