"""
Projections onto the permutahedron
==================================

The permutahedron :math:`\\mathcal P(w)` is the convex hull of the permutations of a
vector :math:`w` (:class:`projloss.sets.Permutahedron`): for :math:`w = (3, 2, 1)` a
hexagon in the plane :math:`\\sum_i u_i = 6`, whose six vertices are the six rankings of
three labels. It is the paper's label-ranking set with :math:`k` coordinates instead of
the Birkhoff polytope's :math:`k^2`. The Euclidean projection reduces to isotonic
regression after sorting (:func:`projloss.isotonic_regression`), the KL projection to its
KL counterpart (:func:`projloss.isotonic_kl`).

We draw a circle of scores :math:`\\theta(t)` (around the center of the hexagon) and its
two projections, in coordinates of the hexagon's plane.
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np

import projloss

w = np.array([3.0, 2.0, 1.0])
permutahedron = projloss.get_set("permutahedron", w=w)

# an orthonormal basis of the plane sum(u) = 0, to draw 3-D points in 2-D
basis = np.array([[1.0, -1.0, 0.0], [1.0, 1.0, -2.0]])
basis /= np.linalg.norm(basis, axis=1, keepdims=True)
center = np.full(3, w.mean())


def plane(u: np.ndarray) -> np.ndarray:
    """Coordinates of points of R^3 in the plane orthogonal to (1, 1, 1)."""
    return (u - center) @ basis.T


vertices = np.array(sorted(itertools.permutations(w), key=lambda v: np.arctan2(*plane(v)[::-1])))
t = np.linspace(0, 2 * np.pi, 36, endpoint=False)
radius = 2.0
theta = center + radius * (np.cos(t)[:, None] * basis[0] + np.sin(t)[:, None] * basis[1])

fig, ax = plt.subplots(figsize=(6.5, 6.5))
ax.fill(*plane(vertices).T, color="0.93", zorder=0)
for v in vertices:
    ax.annotate(
        ">".join("abc"[i] for i in np.argsort(-v)),
        plane(v) * 1.18,
        ha="center",
        va="center",
        fontsize=9,
        bbox={"boxstyle": "round", "fc": "white", "ec": "0.7"},
    )
ax.plot(*plane(theta).T, "o", ms=3, color="0.4", label=r"$\theta(t)$ (on a circle)")
for geometry, color, marker in (("euclidean", "tab:blue", "o"), ("kl", "tab:orange", "s")):
    u = permutahedron.project(theta, geometry)
    for start, end in zip(plane(theta), plane(u), strict=True):
        ax.plot(*np.transpose([start, end]), color=color, lw=0.6, alpha=0.6)
    ax.plot(*plane(u).T, marker, ms=4, color=color, label=geometry)
ax.set_aspect("equal")
ax.axis("off")
ax.legend(loc="lower left")
ax.set_title("Projections onto the permutahedron of (3, 2, 1)")

# %%
# Both projections land on the boundary (the scores are outside the hexagon), but the
# Euclidean one snaps whole arcs of the circle to the vertices (full rankings) where the
# KL one moves smoothly along the edges.
u = permutahedron.project(theta, "euclidean")
at_vertex = np.isin(np.round(u, 9), w).all(axis=1)
print(f"Euclidean: {at_vertex.mean():.0%} of the path at a vertex (a full ranking)")
print("the MAP oracle (best ranking) of the first theta:", permutahedron.argmax(theta[:1]))
