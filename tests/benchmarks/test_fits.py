"""The fits and table1 sections' compositions: composed from conf/ and valid (no data)."""

from __future__ import annotations

import pytest

from benchmarks import fits, table1
from benchmarks.compose import compose
from benchmarks.registry import Context
from pipeline.config.composition import validate


def _value(overrides: tuple[str, ...], group: str) -> str:
    return next(o.split("=", 1)[1] for o in overrides if o.startswith(f"{group}="))


@pytest.mark.parametrize("overrides", [o for _, o in fits.FAMILIES], ids=lambda o: " ".join(o))
def test_families_compose_and_validate(overrides: tuple[str, ...]) -> None:
    cfg = compose(overrides)
    comp = validate(cfg)
    assert comp.dataset == _value(overrides, "dataset")
    assert comp.set == _value(overrides, "set")
    assert comp.task == _value(overrides, "task")
    assert cfg["tracking"]["enabled"] is False and cfg["progress"] is False
    assert "experiments" not in cfg


def test_table1_compositions_are_the_birkhoff_column() -> None:
    for ds in table1.DATASETS:
        comp = validate(compose((*table1.OVERRIDES, f"dataset={ds}")))
        assert (comp.task, comp.set, comp.decoder, comp.geometry, comp.model) == (
            "label_ranking",
            "birkhoff",
            "birkhoff",
            "euclidean",
            "linear",
        )


def test_table1_total_is_the_best_complete_round(monkeypatch: pytest.MonkeyPatch) -> None:
    calls = iter(range(1000))

    def fake(dataset: str) -> dict:
        i = next(calls)
        t = 1.0 + (i % 5) * 0.5  # varies across datasets and rounds
        return dict(
            dataset=dataset, n=10, k=3, tune=t, refit=0.1, evaluate=0.01, total=t + 0.11,
            hamming=1.0, **{"lambda": 1.0}, grid_iter=5, not_converged=0,
        )  # fmt: skip

    recorded: list[list[float]] = []
    real = fake

    def spy(dataset: str) -> dict:
        out = real(dataset)
        recorded.append(out["total"])
        return out

    monkeypatch.setattr(table1, "load", lambda overrides: None)
    monkeypatch.setattr(table1, "run_dataset", spy)
    res = table1.run(Context(repeat=3, log=lambda m: None))
    n = len(table1.DATASETS)
    rounds = [sum(recorded[r * n : (r + 1) * n]) for r in range(len(recorded) // n)]
    assert len(rounds) == 3
    (check,) = res.checks
    assert check.value == pytest.approx(min(rounds))
    assert res.data["table1/total"] == pytest.approx(min(rounds))


def test_sparse_spy_restores_the_solver() -> None:
    import numpy as np
    import scipy.sparse as sp

    import projloss.estimators._solver as solver

    original = solver.safe_sparse_dot
    with fits._sparse_spy() as calls:
        solver.safe_sparse_dot(sp.eye(3, format="csr"), np.ones((3, 2)))
        solver.safe_sparse_dot(np.eye(3), np.ones((3, 2)))
    assert calls == [True, False]
    assert solver.safe_sparse_dot is original


def test_sparse_spy_counts_the_newton_products() -> None:
    """A sparse fit of narrow features runs the Newton method alone (no L-BFGS objective):
    its products with X are counted, all on the CSR matrix; the methods are restored."""
    import numpy as np
    import scipy.sparse as sp

    from projloss.estimators._newton import _BasisProblem
    from projloss.estimators._solver import fit_projection_model
    from projloss.sets import get_set

    methods = (_BasisProblem.features, _BasisProblem.features_t)
    X = sp.random(200, 30, density=0.2, format="csr", random_state=0)
    Y = (np.asarray(X @ np.random.default_rng(0).standard_normal((30, 3))) > 0).astype(float)
    with fits._sparse_spy() as calls:
        fit = fit_projection_model(
            X, Y, get_set("unit_cube"), "euclidean", alpha=1e-2, fit_intercept=True,
            penalize_intercept=True, max_iter=100, tol=1e-9,
        )  # fmt: skip
    assert fit.converged and fit.n_iter == fit.n_iter_newton > 0
    assert calls and all(calls)
    assert (_BasisProblem.features, _BasisProblem.features_t) == methods
