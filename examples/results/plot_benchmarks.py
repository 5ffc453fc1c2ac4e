"""
Timing against other libraries
==============================

``make bench`` (``python -m benchmarks``) times every projection of the engine against a
baseline and, where one exists, another library's implementation, and records the
numbers in ``benchmarks/RESULTS.json`` (the tables are in ``benchmarks/RESULTS.md``).
Three of its comparisons: the Birkhoff polytope against POT (one call per sample: POT
has no batched solver), Euclidean (``smooth_ot_semi_dual``) and KL (``sinkhorn_log``), and
the permutahedron against scikit-learn's isotonic regression called per sample. The
figure shows the time per projection as the batch grows, for each size :math:`k`.
"""

import json
import re
from collections import defaultdict
from pathlib import Path

import matplotlib.pyplot as plt

# the repository: the first directory up from here (the build runs each example in its
# own directory) that holds pyproject.toml
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").is_file())
results = json.loads((ROOT / "benchmarks/RESULTS.json").read_text())
machine = results["machine"]
print(
    f"measured {machine['date']} on {machine['cores']} cores ({machine['cpu']}), commit "
    f"{machine['commit']}"
)
data = results["data"]

panels = (
    ("birkhoff", "euclidean", "POT smooth_ot_semi_dual l2 loop (stopThr=1e-14)"),
    ("birkhoff", "kl", "POT sinkhorn_log loop (stopThr=1e-06)"),
    ("permutahedron", "euclidean", "sklearn isotonic loop"),
)
fig, axes = plt.subplots(1, len(panels), figsize=(13, 4.2), sharey=True)
for ax, (name, geometry, peer) in zip(axes, panels, strict=True):
    pattern = re.compile(rf"projections/{name}/{geometry}/k=(\d+)/n=(\d+)$")
    ours: dict[int, list[tuple[int, float]]] = defaultdict(list)
    for key, seconds in data.items():
        match = pattern.match(key)
        if match and f"{key}/{peer}" in data:
            k, n = map(int, match.groups())
            ours[k].append((n, seconds / n))
    for i, k in enumerate(sorted(ours)):
        points = sorted(ours[k])
        n = [p[0] for p in points]
        color = f"C{i}"
        ax.loglog(n, [p[1] for p in points], "-o", color=color, label=f"projloss, k={k}")
        theirs = [data[f"projections/{name}/{geometry}/k={k}/n={m}/{peer}"] / m for m in n]
        ax.loglog(n, theirs, "--s", color=color, alpha=0.6, label=f"peer, k={k}")
    ax.set_title(f"{name}, {geometry}\npeer: {peer}", fontsize=9)
    ax.set_xlabel("batch size n")
    ax.legend(fontsize=6, ncol=2)
axes[0].set_ylabel("seconds per projection")
fig.tight_layout()

# %%
# The speed-ups at the largest batch:
for name, geometry, peer in panels:
    keys = [k for k in data if re.fullmatch(rf"projections/{name}/{geometry}/k=\d+/n=\d+", k)]
    key = max(keys, key=lambda k: [int(v) for v in re.findall(r"=(\d+)", k)][::-1])
    if f"{key}/{peer}" in data:
        print(f"{key}: {data[f'{key}/{peer}'] / data[key]:.0f}x faster than {peer}")
