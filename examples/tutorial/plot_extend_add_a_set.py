"""
Add a convex set
================

A new set is one module: a :class:`~projloss.sets.ConvexSet` subclass that says what the
rest of projloss asks of a set, registered with :func:`projloss.sets.register_set`. The
solver, the estimators, the task checks, the pipeline's MLflow view and the PyTorch
backend all read what they need from the set itself; nothing else is edited.

This example adds the :math:`\\ell_\\infty` ball :math:`[-1, 1]^p` (a box: its Euclidean
projection clips each score), uses it as the projection set of a multilabel classifier
(it contains the 0/1 label vectors) and compares it with the unit cube :math:`[0, 1]^p`,
the paper's smallest box around the labels (Proposition 1: a smaller set gives a smaller
loss). The same module, with a ``conf/set/linf_ball.yaml`` naming its class, runs in the
pipeline (``python -m pipeline.train hydra.searchpath=[file:///my/conf] set=linf_ball``;
see :doc:`/guide/layout`).
"""

# %%
# The set
# -------
# ``encodings`` names the label encodings the set contains (here the 0/1 indicator
# vectors of multilabel classification, and the one-hot and cumulative ones); the
# Euclidean projection and the MAP oracle (``_argmax``) are the two oracles; ``encode``,
# ``decode`` and ``vertices`` describe the set's own structures; the Jacobian
# of the projection (diagonal: 1 where the score is inside the box) lets the Newton
# solver fit with second-order steps instead of finite differences.
import itertools
from typing import ClassVar

import matplotlib.pyplot as plt
import numpy as np
from sklearn.datasets import make_multilabel_classification
from sklearn.model_selection import train_test_split

from projloss.estimators import ProjectionMultilabelClassifier
from projloss.losses import ProjectionLoss
from projloss.sets import SETS, ConvexSet, get_set, register_set


class LinfBall(ConvexSet):
    """The l-infinity ball [-1, 1]^p (Euclidean geometry only)."""

    name: ClassVar[str] = "linf_ball"
    geometries: ClassVar[tuple[str, ...]] = ("euclidean",)
    separable: ClassVar[bool] = True
    encodings: ClassVar[tuple[str, ...]] = ("indicator", "one_hot", "cumulative")

    def _project_euclidean(self, theta):
        return np.clip(theta, -1.0, 1.0)

    def _argmax(self, theta):
        return np.where(theta > 0, 1.0, -1.0)

    def projection_jacobians(self, theta, u, geometry, event_shape):
        return (np.abs(theta) <= 1.0).astype(np.float64)

    def _contains(self, u, atol):
        return np.all(np.abs(u) <= 1.0 + atol, axis=-1)

    # its own structures, the vertices {-1, 1}^p (no task decodes onto them)
    def encode(self, y, k=None):
        return np.asarray(y, dtype=np.float64)

    def decode(self, v):
        return np.asarray(v).astype(np.int64)

    def vertices(self, k):
        return np.array(list(itertools.product([-1.0, 1.0], repeat=k)))


if "linf_ball" not in SETS:
    register_set(LinfBall)
ball = get_set("linf_ball")
print(ball, "->", ball.project(np.array([2.5, -0.3, -4.0])))

# %%
# Proposition 1: the smaller set, the smaller loss
# ------------------------------------------------
# The unit cube is inside the ball, so its projection loss is never larger, for any
# scores and labels: checked here on random scores.
rng = np.random.default_rng(0)
theta = rng.normal(scale=2.0, size=(1000, 5))
labels = (rng.random((1000, 5)) < 0.4).astype(np.float64)
loss_ball = ProjectionLoss("linf_ball")(theta, labels)
loss_cube = ProjectionLoss("unit_cube")(theta, labels)
print("loss(cube) <= loss(ball) everywhere:", bool(np.all(loss_cube <= loss_ball + 1e-12)))

fig, ax = plt.subplots(figsize=(5, 3.5))
ax.scatter(loss_ball, loss_cube, s=4, alpha=0.5)
top = float(loss_ball.max())
ax.plot([0, top], [0, top], color="k", lw=0.8, label="equal losses")
ax.set_xlabel("projection loss onto the ball $[-1, 1]^5$")
ax.set_ylabel("onto the unit cube $[0, 1]^5$")
ax.legend()
fig.tight_layout()

# %%
# An estimator with the new set
# -----------------------------
# The estimator takes the set by its registered name; the labels are decoded on the unit
# cube (rounding at 1/2), the ball itself decodes nothing.
X, Y = make_multilabel_classification(n_samples=400, n_features=10, n_classes=5, random_state=0)
X_train, X_test, Y_train, Y_test = train_test_split(X, Y, random_state=0)
for name in ("linf_ball", "unit_cube"):
    clf = ProjectionMultilabelClassifier(projection_set=name, decoding_set="unit_cube", alpha=0.1)
    clf.fit(X_train, Y_train)
    print(f"{name:9s} converged={clf.converged_} test accuracy (1 - Hamming) "
          f"{clf.score(X_test, Y_test):.3f}")  # fmt: skip
