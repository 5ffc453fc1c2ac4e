"""R^p and R^p_+: closed forms, and the KL error on R^p."""

import numpy as np
import pytest

from projloss.sets import NonNegative, Reals, get_set


def test_reals_is_identity_and_rejects_kl():
    theta = np.random.default_rng(0).standard_normal((5, 3, 3))
    np.testing.assert_array_equal(Reals().project(theta), theta)
    with pytest.raises(ValueError, match="KL geometry is undefined on R\\^p.*nonneg"):
        Reals().project(theta, "kl")
    with pytest.raises(ValueError, match="no vertices"):
        Reals().argmax(theta)


def test_nonneg_closed_forms():
    theta = np.array([-2.0, 0.0, 1.0, 3.0])
    np.testing.assert_array_equal(NonNegative().project(theta), [0, 0, 1, 3])
    np.testing.assert_allclose(NonNegative().project(theta, "kl"), np.exp(theta - 1))


def test_registry_unknown_name():
    with pytest.raises(ValueError, match="unknown set 'spam'.*valid sets"):
        get_set("spam")
