"""
Are the differences significant? A critical-difference diagram
==============================================================

``make repro-repeated`` reruns the paper's experiments on ten random splits and writes
``reports/repeated/`` (committed): per table, the mean score of each composition on
each dataset and its rank. A critical-difference diagram (Demšar, JMLR 2006) places the
compositions at their average rank over the datasets and joins those that the Nemenyi
test does not separate. The report draws it with
:func:`scikit_posthocs.critical_difference_diagram`; here the same from the table's CSV,
for Table 1 (label ranking, Euclidean projections, Hamming loss: lower is better).
"""

import csv
from pathlib import Path

import matplotlib.pyplot as plt
import pandas as pd
import scikit_posthocs as sp

# the repository: the first directory up from here (the build runs each example in its
# own directory) that holds pyproject.toml
ROOT = next(p for p in (Path.cwd(), *Path.cwd().parents) if (p / "pyproject.toml").is_file())
rows = list(csv.DictReader((ROOT / "reports/repeated/table1.csv").open()))
scores = pd.DataFrame(rows).pivot(index="dataset", columns="composition", values="mean")
scores = scores.astype(float)
print(scores.round(2))

# %%
# The ranks per dataset (1 = lowest loss) are the table's ``rank`` column: the report
# counts two means closer than a tolerance as tied (they share their rank; see
# ``pipeline.report.significance.snap_ties``). Nemenyi's pairwise p-values come from the
# same blocks (the datasets).
table = pd.DataFrame(rows).astype({"rank": float})
ranks = table.pivot(index="dataset", columns="composition", values="rank")
p_values = sp.posthoc_nemenyi_friedman(ranks.to_numpy())
p_values.index = p_values.columns = ranks.columns
print(ranks.mean().sort_values().round(2))

fig, ax = plt.subplots(figsize=(8, 2.8))
sp.critical_difference_diagram(ranks.mean(), p_values, ax=ax)
ax.set_title("Table 1 over 10 splits: average rank (lower loss = better)")
fig.tight_layout()

# %%
# With six datasets and seven compositions, only the extremes are separated: the
# diagram (and the report's verdicts in ``reports/repeated/README.md``) is the honest
# summary of what the ten splits show.
