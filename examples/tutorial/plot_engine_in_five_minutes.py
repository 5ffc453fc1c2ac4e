"""
The engine in five minutes
==========================

A projection, a loss and an estimator: the three things the engine of ``projloss`` is
made of (Blondel, *Structured prediction with projection oracles*, NeurIPS 2019).

A structured output (a class, a set of labels, a ranking) is encoded as a vertex
:math:`\\varphi(y)` of a convex polytope; a model outputs scores :math:`\\theta`; the
*projection* :math:`P_C^\\Psi(\\theta)` of the scores onto a convex set :math:`C`
(containing the polytope) turns them into a point of the set, the *projection loss*
:math:`S_C^\\Psi(\\theta, y)` trains the model, and *calibrated decoding* turns the
projection back into an output.
"""

# %%
# A projection
# ------------
# The sets are registered by name (:data:`projloss.SETS`); :func:`projloss.get_set`
# builds one. The Euclidean projection onto the probability simplex is *sparsemax*:
# it can put exact zeros where the softmax (the KL projection) never does.
import matplotlib.pyplot as plt
import numpy as np

import projloss
from projloss.estimators import ProjectionClassifier
from projloss.losses import ProjectionLoss

print(sorted(projloss.SETS))

simplex = projloss.get_set("simplex")
theta = np.array([1.5, 1.0, -0.5, 0.2])
sparsemax = simplex.project(theta, "euclidean")
softmax = simplex.project(theta, "kl")
print("sparsemax:", np.round(sparsemax, 4))
print("softmax:  ", np.round(softmax, 4))

# %%
# Projections are batched over the leading axes and every set has both geometries
# where the paper defines them. The Birkhoff polytope (doubly stochastic matrices)
# projects a score matrix onto a "soft permutation":
birkhoff = projloss.get_set("birkhoff")
scores = np.array([[2.0, 0.0, 0.0], [0.0, 1.0, 1.5], [0.0, 1.5, 1.0]])
soft = birkhoff.project(scores)
print(np.round(soft, 3))
print("row sums", soft.sum(axis=1), "column sums", soft.sum(axis=0))

# %%
# A loss
# ------
# The projection loss :math:`S_C^\Psi(\theta, y)` is a Fenchel-Young loss: it is
# convex in :math:`\theta`, non-negative, zero when the projection of :math:`\theta` is
# the encoded label :math:`\varphi(y)`, and its gradient is
# :math:`P_C^\Psi(\theta) - \varphi(y)`. With the simplex and the KL geometry it is the
# logistic loss; with the Euclidean one, the sparsemax loss.
y = np.array([1.0, 0.0, 0.0, 0.0])  # the first class, one-hot
for geometry in ("euclidean", "kl"):
    loss = ProjectionLoss("simplex", geometry)
    print(f"{geometry:9s} loss {float(loss(theta, y)):.4f}")

# %%
# A sweep of the first score shows the shapes: the sparsemax loss is exactly zero once
# the first class wins by a margin of 1, the logistic loss only tends to zero.
t = np.linspace(-3, 3, 121)
thetas = np.stack([t, np.zeros_like(t), np.zeros_like(t), np.zeros_like(t)], axis=1)
labels = np.broadcast_to(y, thetas.shape)
fig, ax = plt.subplots(figsize=(6, 3.5))
for geometry, name in (("euclidean", "sparsemax loss"), ("kl", "logistic loss")):
    ax.plot(t, ProjectionLoss("simplex", geometry)(thetas, labels), label=name)
ax.set_xlabel(r"$\theta_1$ (the other scores at 0)")
ax.set_ylabel(r"$S_C^\Psi(\theta, y)$, $y$ = first class")
ax.legend()
fig.tight_layout()

# %%
# An estimator
# ------------
# The estimators of :mod:`projloss.estimators` fit a linear (or kernel) model with a
# projection loss and decode calibrated predictions; they are scikit-learn estimators
# (``fit``/``predict``/``score``, ``get_params``, pipelines, grid search).
from sklearn.datasets import load_iris  # noqa: E402
from sklearn.model_selection import train_test_split  # noqa: E402

X, labels = load_iris(return_X_y=True)
X_train, X_test, y_train, y_test = train_test_split(X, labels, random_state=0, stratify=labels)
for geometry in ("euclidean", "kl"):
    clf = ProjectionClassifier(projection_set="simplex", geometry=geometry, alpha=0.01)
    clf.fit(X_train, y_train)
    print(f"{geometry:9s} test accuracy {clf.score(X_test, y_test):.3f}")

# %%
# The projections of the model's scores (``decision_function``) onto the simplex: the sparsemax
# classifier gives exact zeros to the classes it rules out.
clf = ProjectionClassifier(projection_set="simplex", geometry="euclidean", alpha=0.01)
clf.fit(X_train, y_train)
print(np.round(simplex.project(clf.decision_function(X_test[:5])), 3))
