"""
Validation curves of the paper's label-ranking runs
===================================================

Every run of the pipeline tunes the regularization :math:`\\lambda` on a grid, fitting on
the training part and scoring on the validation part (``python -m pipeline.train``, the
*tune* stage of ``dvc repro``). The report writes these curves to
``reports/plots/validation/<experiment>.csv`` (one line per dataset, run, :math:`\\lambda`),
committed with the results: here the runs of the paper's Table 1 in the label-ranking
experiment, one curve per composition (projection set - decoding set) and the selected
:math:`\\lambda` circled.
"""

import csv
from collections import defaultdict
from pathlib import Path

import matplotlib.pyplot as plt

# the repository: the first directory up from here (the build runs each example in its
# own directory) that holds pyproject.toml
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").is_file())
rows = list(csv.DictReader((ROOT / "reports/plots/validation/lr.csv").open()))
print(f"{len(rows)} points; columns: {list(rows[0])}")

curves: dict[str, dict[str, list[tuple[float, float, bool]]]] = defaultdict(dict)
for row in rows:
    run = row["run"].split("/", 1)[1]
    if not run.startswith("t1-"):  # Table 1 only (t2-: KL projections, t3-: permutahedron)
        continue
    points = curves[row["dataset"]].setdefault(run, [])
    points.append((float(row["log10_lambda"]), float(row["value"]), row["selected"] == "1"))

datasets = ("glass", "vehicle", "vowel")
fig, axes = plt.subplots(1, len(datasets), figsize=(13, 4), sharey=False)
for ax, dataset in zip(axes, datasets, strict=True):
    for run, points in sorted(curves[dataset].items()):
        x, y, selected = zip(*sorted(points), strict=True)
        (line,) = ax.plot(x, y, marker=".", label=run)
        best = [(a, b) for a, b, s in zip(x, y, selected, strict=True) if s]
        if best:
            ax.plot(*best[0], "o", ms=11, mfc="none", color=line.get_color())
    ax.set_title(dataset)
    ax.set_xlabel(r"$\log_{10} \lambda$")
axes[0].set_ylabel("validation Hamming loss (%)")
axes[-1].legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.02, 1.0))
fig.tight_layout()
