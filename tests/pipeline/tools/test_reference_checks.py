"""The reference implementation's conventions (diagnostics only): the approximate
Birkhoff projection and the permutahedron relabelling."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from pipeline.tools.reference_checks import (
    ReferenceBirkhoff,
    reference_relabel,
    reference_unlabel,
    semi_dual_plan,
)
from projloss.sets import Birkhoff
from projloss.target_losses import permuted_weights


@pytest.mark.parametrize("kl", [False, True])
def test_semi_dual_plan_is_the_projection_up_to_its_tolerance(kl: bool) -> None:
    rng = np.random.default_rng(0)
    theta = 2.0 * rng.standard_normal((5, 5))
    plan = semi_dual_plan(theta, kl=kl)
    exact = Birkhoff(tol=1e-12).project(theta, "kl" if kl else "euclidean")
    np.testing.assert_allclose(plan.sum(axis=0), 1.0, atol=1e-12)  # columns: exact
    assert np.abs(plan.sum(axis=1) - 1.0).max() < 0.05  # rows: to the solver's tolerance
    assert np.abs(plan - exact).max() < 0.05
    tight = semi_dual_plan(theta, kl=kl, tol=1e-12)
    np.testing.assert_allclose(tight, exact, atol=1e-5)  # the same problem, solved tightly
    batch = ReferenceBirkhoff().project(np.stack([theta, -theta]), "kl" if kl else "euclidean")
    np.testing.assert_allclose(batch[0], plan)


def test_relabelling_gives_the_reference_target() -> None:
    """projloss's permutahedron encoding of the relabelled ranking, with w = (k-1..0),
    is the reference's target y itself, and unlabel inverts relabel."""
    y = np.array(list(itertools.permutations(range(4))))
    w = np.arange(4)[::-1].astype(float)
    np.testing.assert_array_equal(permuted_weights(reference_relabel(y), w), y)
    np.testing.assert_array_equal(reference_unlabel(reference_relabel(y)), y)
