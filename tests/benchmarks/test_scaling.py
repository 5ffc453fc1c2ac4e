"""The scaling section: its synthetic data, its cases (tiny sizes, in this process), one
case in a fresh process (the section's way), the slopes, the figures and the checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from benchmarks import scaling, scaling_cases
from benchmarks.registry import Context

TINY = scaling.Plan(
    knapsack_n=(60, 120),
    sparse_n=(60, 120),
    sparse_literal_n=(60,),
    birkhoff_n=(40, 80),
    birkhoff_k=(3, 4),
    ordinal_splits=2,
    density=0.05,
    acceptance=False,
    sparse_d=2000,
    overrides=("lambdas.num=2", "lambdas.low=1", "lambdas.high=10", "model.max_iter=15"),
)


def test_sparse_features_have_the_density_and_no_dense_copy() -> None:
    X = scaling_cases.sparse_features(500, 30_438, 0.002, seed=0)
    assert sp.issparse(X) and X.format == "csr"
    per_row = X.getnnz(axis=1)
    assert per_row.min() >= 55 and per_row.max() <= 61  # 61 columns drawn, few repeats
    np.testing.assert_allclose(sp.linalg.norm(X, axis=1), 1.0, rtol=1e-12)


def test_planted_labels_have_the_cardinality() -> None:
    _, Y = scaling_cases.multilabel_dense(2000, 10, 101, 4.54, seed=0)
    assert Y.shape == (2000, 101) and set(np.unique(Y)) <= {0, 1}
    assert Y.sum(axis=1).mean() == pytest.approx(4.54, rel=0.02)
    _X, y = scaling_cases.rankings(50, 4, 6)
    assert np.array_equal(np.sort(y, axis=1), np.tile(np.arange(6), (50, 1)))


def test_split_is_the_pipeline_protocol() -> None:
    X = np.arange(100.0)[:, None]
    data = scaling_cases.split(X, np.arange(100))
    assert [len(part[1]) for part in (data.train, data.val, data.test)] == [60, 20, 20]
    Xtv, ytv = data.train_val
    assert Xtv.shape == (80, 1) and np.array_equal(Xtv[:, 0], ytv)


def test_slope() -> None:
    assert scaling.slope([1, 10, 100], [2.0, 20.0, 200.0]) == pytest.approx(1.0)
    assert scaling.slope([1, 2, 4], [1.0, 4.0, 16.0]) == pytest.approx(2.0)
    assert scaling.slope([5], [1.0]) is None


def test_sections_cases_in_process(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every case at tiny sizes through the section's own code path (no subprocess)."""
    md, checks, data = scaling.run_plan(TINY, Context(log=lambda m: None), False, tmp_path)
    for case in ("knapsack", "sparse", "birkhoff", "ordinal"):
        png = tmp_path / f"scaling-{case}.png"
        assert png.read_bytes()[:4] == b"\x89PNG", case
        assert png.name in md
    assert "failed" not in md, md
    sparse = data["scaling/sparse"]
    assert all(r["products"] > 0 and r["sparse_products"] == r["products"] for r in sparse)
    assert all(r["peak_mib"] > 0 and r["grid_fits"] == 2 for r in data["scaling/knapsack"])
    assert len(data["scaling/ordinal"]["cumulative"]) == 2
    assert "(**holds**)" in md
    assert {c.status for c in checks} == {"NOT MEASURED"}  # tiny sizes: no acceptance figure


def test_a_case_in_a_fresh_process() -> None:
    out = scaling.measure(
        {"case": "birkhoff", "n": 40, "d": 3, "k": 3, "overrides": ["model.max_iter=5"]}
    )
    assert "error" not in out, out
    assert out["seconds"] > 0 and out["peak_mib"] >= out["rss_before_mib"] * 0.5
    # max_iter=5 bounds L-BFGS; a fit it leaves unconverged is finished by the Newton method
    assert out["peak_reset"] is True and 0 < out["n_iter"] <= 50
    bad = scaling.measure({"case": "no-such-case"})
    assert "KeyError" in bad["error"]


def test_replay_answers_from_a_saved_run() -> None:
    a = {"case": "sparse", "n": 100, "density": 0.1, "seconds": 1.0}
    b = {"case": "sparse", "n": 100, "density": 0.2, "seconds": 2.0}
    lookup = scaling.replayed({"scaling/sparse": [a], "scaling/other": [b], "x": None})
    assert lookup({"case": "sparse", "n": 100, "density": 0.2, "overrides": []}) is b
    assert "error" in lookup({"case": "sparse", "n": 7, "density": 0.2})
