"""
Soft permutations: projections onto the Birkhoff polytope
=========================================================

The Birkhoff polytope :math:`\\mathcal B_k` (:class:`projloss.sets.Birkhoff`) is the set of
doubly stochastic :math:`k \\times k` matrices, the convex hull of the permutation
matrices. The projection of a score matrix :math:`\\theta` onto it is a *soft
permutation*: its Euclidean projection is sparse (a few entries per row), its KL
projection is Sinkhorn's matrix scaling of :math:`e^{\\theta - 1}` (dense). Scaling the
scores up sharpens both towards the best permutation, the MAP oracle
(:meth:`~projloss.sets.Birkhoff.argmax`, the Hungarian algorithm).

The paper's Figure 3 shows such a soft permutation predicted for one test sample by a
fitted model: see :ref:`sphx_glr_auto_examples_results_plot_label_ranking_figure3.py`.
"""

import matplotlib.pyplot as plt
import numpy as np

import projloss

rng = np.random.default_rng(3)
k = 5
theta = rng.normal(size=(k, k))
birkhoff = projloss.get_set("birkhoff")
best = birkhoff.argmax(theta)  # the permutation matrix maximizing <theta, P>

scales = (0.5, 2.0, 8.0)
fig, axes = plt.subplots(2, len(scales), figsize=(10, 6.8))
for row, geometry in enumerate(("euclidean", "kl")):
    for col, scale in enumerate(scales):
        P = birkhoff.project(scale * theta, geometry)
        ax = axes[row, col]
        ax.imshow(P, vmin=0, vmax=1, cmap="viridis")
        rows, cols = np.nonzero(best)
        ax.scatter(cols, rows, s=260, facecolors="none", edgecolors="red", linewidths=1.5)
        for (r, c), v in np.ndenumerate(P):
            if v >= 0.005:
                ax.text(
                    c,
                    r,
                    f"{v:.2f}",
                    ha="center",
                    va="center",
                    fontsize=7,
                    color="black" if v > 0.5 else "white",
                )
        ax.set_xticks([])
        ax.set_yticks([])
        ax.set_title(f"{geometry}, {scale:g} x theta", fontsize=10)
fig.suptitle("Projections onto the Birkhoff polytope (red: the best permutation)")
fig.tight_layout()

# %%
# Rows and columns sum to one, and the sparsity of the Euclidean projection:
for geometry in ("euclidean", "kl"):
    P = birkhoff.project(2.0 * theta, geometry)
    print(
        f"{geometry:9s} row sums {np.round(P.sum(axis=1), 6)}, "
        f"non-zeros {int((P > 0).sum())} of {k * k}"
    )
print("decoded best permutation (rank -> label):", birkhoff.decode(best))
