"""The solver section: L-BFGS vs the estimators' solvers on a real lambda grid."""

from __future__ import annotations

from benchmarks import solver
from benchmarks.registry import SECTIONS, Context


def test_solver_section_counts_the_fits_l_bfgs_leaves_unconverged():
    assert SECTIONS["solver"].run is solver.run
    res = solver.run(Context(quick=True, log=lambda msg: None))
    (check,) = res.checks
    assert check.status == "PASS" and check.value == 0.0  # the estimators' solvers converge
    d = res.data
    assert d["solver/default/fits"] == d["solver/lbfgs/fits"] == 10  # iris poly3's grid
    assert d["solver/lbfgs/not_converged"] > 0  # what issue 14 was about
    assert d["solver/default/refit_converged"]
    # L-BFGS's "converged" refit is far above the optimum the Newton method reaches.
    assert d["solver/lbfgs/refit_objective"] > 2 * d["solver/default/refit_objective"]
    assert "t3-poly3 | vehicle" in res.markdown and "t3-poly3 | iris" in res.markdown
