"""
Calibrated decoding vs thresholding
===================================

A model trained with a projection loss outputs :math:`u = P_C^\\Psi(\\theta)`, an estimate
of :math:`\\mathbb E[\\varphi(Y)]`. *Calibrated decoding* (paper §5) turns it into the
output that minimizes the expected target loss,
:math:`\\hat y_L(u) = \\mathrm{MAP}_D(-Vu - b)`, on a decoding set :math:`D` whose
vertices are the valid outputs (:func:`projloss.decoding.calibrated_decode`).

Label ranking with permutation matrices and the Hamming loss: project the scores onto the
unit cube :math:`[0, 1]^{k \\times k}` (cheap: a clipping), then either *threshold* the
entries at 1/2 (decoding on the cube: the output is a 0/1 matrix, not necessarily a
permutation) or decode on the Birkhoff polytope (the output is always a permutation).
These are the paper's Table 1 columns cube/cube and cube/B.
"""

import matplotlib.pyplot as plt
import numpy as np

import projloss
from projloss.decoding import calibrated_decode
from projloss.metrics import ranking_hamming_loss
from projloss.target_losses import permutation_matrix

rng = np.random.default_rng(0)
k, n = 5, 2000
truth = np.array([rng.permutation(k) for _ in range(n)])  # y[i, rank] = label
Y = permutation_matrix(truth)  # (n, k, k) 0/1
theta = Y + rng.normal(scale=0.6, size=Y.shape)  # noisy scores of a "model"

u = projloss.get_set("cube").project(theta)
thresholded = calibrated_decode(u, "hamming", "cube")  # 0/1 matrices: u > 1/2
permutations = calibrated_decode(u, "hamming", "birkhoff")  # rankings (n, k)

# %%
# One sample: the projection, its thresholding, the calibrated permutation.
i = 1
fig, axes = plt.subplots(1, 4, figsize=(12, 3.4))
panels = (
    (Y[i], "true permutation"),
    (u[i], "u = projection onto the cube"),
    (thresholded[i], "thresholded at 1/2"),
    (permutation_matrix(permutations[i]), "calibrated decoding (Birkhoff)"),
)
for ax, (matrix, title) in zip(axes, panels, strict=True):
    ax.imshow(matrix, vmin=0, vmax=1, cmap="viridis")
    ax.set_title(title, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
fig.tight_layout()

# %%
# Over all samples: the thresholded matrices are often not permutations (a row with no
# label or two), and they lose more entries than the calibrated permutations.
valid = np.all(thresholded.sum(axis=1) == 1, axis=1) & np.all(thresholded.sum(axis=2) == 1, axis=1)
print(f"thresholded outputs that are permutations: {valid.mean():.1%}")
print(f"Hamming loss, thresholding:        {ranking_hamming_loss(Y, thresholded):.2f} %")
print(f"Hamming loss, calibrated decoding: {ranking_hamming_loss(truth, permutations):.2f} %")
