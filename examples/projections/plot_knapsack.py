"""
Projections onto the knapsack polytope
======================================

The knapsack polytope :math:`\\{u \\in [0, 1]^k : l \\le \\sum_i u_i \\le u\\}`
(:class:`projloss.sets.Knapsack`) is the convex hull of the label sets with between
:math:`l` and :math:`u` labels: the paper's multilabel set with a bound on the number of
labels (its upper bound is the mean plus one standard deviation of the training label
counts). Here :math:`k = 3` and at most :math:`u = 2` labels: the cube with its corner
:math:`(1, 1, 1)` cut off.

We project a grid of scores and color each projection by the number of labels it
"switches on" (coordinates at exactly 1): the Euclidean projection lands on vertices,
edges and faces (coordinates at exactly 0 or 1), the KL projection caps coordinates at 1
but never reaches 0 (it is made of exponentials), so it is never at a vertex.
"""

import matplotlib.pyplot as plt
import numpy as np

import projloss

knapsack = projloss.get_set("knapsack", upper=2)
rng = np.random.default_rng(0)
theta = rng.normal(scale=1.5, size=(1500, 3)) + 0.6

fig = plt.figure(figsize=(10, 4.8))
for i, geometry in enumerate(("euclidean", "kl")):
    u = knapsack.project(theta, geometry)
    assert np.all(u.sum(axis=1) <= 2 + 1e-9) and np.all((u >= 0) & (u <= 1 + 1e-9))
    ax = fig.add_subplot(1, 2, i + 1, projection="3d")
    ones = np.isclose(u, 1.0).sum(axis=1)
    points = ax.scatter(*u.T, c=ones, cmap="viridis", vmin=0, vmax=2, s=6)
    ax.set_title(f"{geometry}: sum of u at most 2")
    ax.set_xlim(0, 1)
    ax.set_ylim(0, 1)
    ax.set_zlim(0, 1)
    ax.view_init(elev=22, azim=35)
    for label, axis in zip("xyz", (ax.set_xlabel, ax.set_ylabel, ax.set_zlabel), strict=True):
        axis(f"$u_{'123'['xyz'.index(label)]}$")
fig.colorbar(points, ax=fig.axes, shrink=0.6, label="coordinates at exactly 1")

# %%
# How the projections distribute over the polytope's faces:
for geometry in ("euclidean", "kl"):
    u = knapsack.project(theta, geometry)
    at_bound = np.isclose(u.sum(axis=1), 2.0)
    print(
        f"{geometry:9s}: on the cut face sum(u) = 2: {at_bound.mean():.0%};"
        f" a vertex: {np.all(np.isclose(u, 0) | np.isclose(u, 1), axis=1).mean():.0%}"
    )
