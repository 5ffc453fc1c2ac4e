"""
Euclidean and KL projections onto the simplex and the unit cube
===============================================================

A path of scores :math:`\\theta(t)` and its Bregman projections
:math:`P_C^\\Psi(\\theta(t))` onto two sets of the paper, in the Euclidean geometry
(:math:`\\Psi = \\tfrac12\\|\\cdot\\|^2`) and the KL geometry (:math:`\\Psi` = negative
entropy):

- the **probability simplex** :math:`\\triangle^3` (multiclass): the Euclidean projection is
  *sparsemax*, which reaches the faces and vertices of the triangle (exact zeros), the KL
  projection is the *softmax*, which stays in its interior;
- the **unit cube** :math:`[0, 1]^2` (multilabel): the Euclidean projection clips each
  coordinate, the KL one is the sigmoid-like map :math:`\\min(e^{\\theta - 1}, 1)`.

The projections are batched: one call projects the whole path.
"""

import matplotlib.pyplot as plt
import numpy as np

import projloss

t = np.linspace(-2.5, 2.5, 201)
colors = {"euclidean": "tab:blue", "kl": "tab:orange"}

# %%
# Left, the simplex drawn in barycentric coordinates (each vertex is one class); right,
# the unit cube.
simplex = projloss.get_set("simplex")
path = np.stack([1.2 * t, 0.8 * np.sin(1.3 * t), -0.6 * t + 0.4], axis=1)  # (201, 3)
corners = np.array([[0.0, 0.0], [1.0, 0.0], [0.5, np.sqrt(3) / 2]])

fig, (ax_simplex, ax_cube) = plt.subplots(1, 2, figsize=(10, 4.6))
ax_simplex.fill(*corners.T, color="0.93", zorder=0)
for geometry in ("euclidean", "kl"):
    u = simplex.project(path, geometry)  # (201, 3), each row sums to 1
    xy = u @ corners
    ax_simplex.plot(*xy.T, color=colors[geometry], lw=2, label=geometry)
    ax_simplex.plot(*xy[0], "o", color=colors[geometry])
ax_simplex.set_title("simplex: sparsemax (Euclidean) vs softmax (KL)")
for (x, y), name in zip(corners, ("class 1", "class 2", "class 3"), strict=True):
    ax_simplex.annotate(name, (x, y), ha="center", va="bottom" if y else "top")
ax_simplex.set_aspect("equal")
ax_simplex.axis("off")
ax_simplex.legend(loc="upper right")

# The unit cube in 2-D (right), with the path itself drawn dotted.
cube = projloss.get_set("unit_cube")
path2 = np.stack([1.1 * t + 0.3, 0.9 * np.cos(1.5 * t) + 0.2 * t], axis=1)
ax_cube.fill([0, 1, 1, 0], [0, 0, 1, 1], color="0.93", zorder=0)
ax_cube.plot(*path2.T, ":", color="0.4", label=r"$\theta(t)$")
for geometry in ("euclidean", "kl"):
    u = cube.project(path2, geometry)
    ax_cube.plot(*u.T, color=colors[geometry], lw=2, label=geometry)
ax_cube.set_xlim(-2.6, 3.2)
ax_cube.set_ylim(-1.6, 1.6)
ax_cube.set_aspect("equal")
ax_cube.set_title("unit cube: clipping (Euclidean) vs KL")
ax_cube.legend(loc="lower right")
fig.tight_layout()

# %%
# The Euclidean projection reaches the boundary: count the exact zeros along the path.
u_euc = simplex.project(path, "euclidean")
u_kl = simplex.project(path, "kl")
print("exact zeros, sparsemax:", int((u_euc == 0).sum()), " softmax:", int((u_kl == 0).sum()))
