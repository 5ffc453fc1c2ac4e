"""
Smaller set, smaller loss (Proposition 1)
=========================================

The projection loss :math:`S_C^\\Psi(\\theta, y)` of a convex set :math:`C` containing the
encoded label :math:`\\varphi(y)` is the Fenchel-Young loss of :math:`\\Psi` restricted to
:math:`C`. The paper's Proposition 1 says that it is non-negative, zero exactly when
:math:`P_C^\\Psi(\\theta) = \\varphi(y)`, and that **a smaller set gives a smaller loss**:
:math:`\\varphi(y) \\in C_1 \\subseteq C_2 \\Rightarrow S_{C_1}^\\Psi \\le S_{C_2}^\\Psi`.
The smaller the set, the more knowledge of the output space the loss uses, and the more
scores :math:`\\theta` it leaves alone.

In two dimensions with the label :math:`\\varphi(y) = (1, 0)` and the Euclidean geometry,
four nested sets: the probability simplex (a segment) :math:`\\subset` the unit square
:math:`\\subset` the non-negative orthant :math:`\\subset \\mathbb R^2` (where the loss is
the squared loss :math:`\\tfrac12\\|\\theta - \\varphi(y)\\|^2`).
"""

import itertools

import matplotlib.pyplot as plt
import numpy as np

from projloss.losses import ProjectionLoss

sets = ("simplex", "unit_cube", "nonneg", "reals")
titles = ("simplex", "unit square", "non-negative orthant", r"$\mathbb{R}^2$ (squared loss)")
grid = np.linspace(-2.0, 3.0, 121)
T1, T2 = np.meshgrid(grid, grid)
theta = np.stack([T1, T2], axis=-1)  # (121, 121, 2): the loss is batched over both axes
y = np.broadcast_to([1.0, 0.0], theta.shape)

values = {name: ProjectionLoss(name, "euclidean")(theta, y) for name in sets}

fig, axes = plt.subplots(1, 4, figsize=(13, 3.6), sharey=True)
levels = np.linspace(0, 6, 13)
for ax, name, title in zip(axes, sets, titles, strict=True):
    filled = ax.contourf(T1, T2, values[name], levels=levels, cmap="magma_r", extend="max")
    ax.contour(T1, T2, values[name], levels=[1e-9], colors="tab:cyan", linewidths=1.5)
    ax.plot(1, 0, "o", color="tab:cyan")
    ax.set_title(title, fontsize=10)
    ax.set_xlabel(r"$\theta_1$")
    ax.set_aspect("equal")
axes[0].set_ylabel(r"$\theta_2$")
fig.colorbar(filled, ax=axes, shrink=0.8, label=r"$S_C(\theta, y)$")
fig.suptitle("Projection losses of nested sets, label (1, 0) (dot); cyan: zero loss", y=0.98)

# %%
# Proposition 1 on the whole grid: each loss is below the next one, and the region of
# zero loss (where the projection is the label) grows as the set shrinks.
for small, large in itertools.pairwise(sets):
    assert np.all(values[small] <= values[large] + 1e-12), (small, large)
    print(
        f"S_{small} <= S_{large} on all {values[small].size} points;"
        f" zero loss on {np.mean(values[small] < 1e-12):.1%} of the grid"
    )
