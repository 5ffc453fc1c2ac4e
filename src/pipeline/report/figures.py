"""The report's figures (matplotlib, no pyplot).

- ``figure3_soft_permutation.png``: the paper's Figure 3, a soft permutation matrix:
  ``project(x)`` of a refitted Birkhoff/Birkhoff model on one test sample (``paper.yaml``
  ``figure3``: which experiment, run and test sample), the true permutation circled;
- ``<task>.png``: per task, the sets compared across datasets (Tables 1, 4 and 7): our
  values as bars, the paper's as black ticks.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..runs.figures import _figure, save
from .tables import Table

#: task plot -> the table it draws
TASK_PLOTS = {
    "label_ranking.png": "table1",
    "ordinal.png": "table4",
    "multilabel.png": "table7",
}


def write_all(
    root: Path, out_dir: Path, tables: Mapping[str, Table], layout: Mapping[str, Any]
) -> list[Path]:
    """Every figure (a placeholder when its inputs did not run); returns the files."""
    paths = []
    spec = layout.get("figure3") or {}
    fig3 = figure3(root, spec)
    if fig3 is None:
        fig3 = placeholder(f"Figure 3: not run ({spec.get('experiment')}/{spec.get('run')})")
    paths.append(save(fig3, out_dir / "figure3_soft_permutation.png"))
    for name, key in TASK_PLOTS.items():
        table = tables.get(key)
        if table is not None and any(c.ours is not None for c in table.cells.values()):
            fig = comparison(table)
        else:
            fig = placeholder(f"{key}: not run")
        paths.append(save(fig, out_dir / name))
    return paths


def placeholder(text: str) -> Any:
    """A small figure saying what is missing (the DVC stage declares every figure)."""
    fig = _figure(4.0, 1.2)
    fig.text(0.5, 0.5, text, ha="center", va="center", fontsize=9)
    return fig


def figure3(root: Path, spec: Mapping[str, Any]) -> Any:
    """The soft permutation matrix of one test sample (None when the model is missing)."""
    from ..data.api import load_prepared
    from ..paths import EVAL_DIR, MODELS_DIR
    from ..runs import refit as refit_core
    from .results import RESULTS

    experiment, run = spec.get("experiment"), spec.get("run")
    if not experiment or not run:
        return None
    model_dir = Path(root) / MODELS_DIR / experiment / run
    results = Path(root) / EVAL_DIR / experiment / run / RESULTS
    if not (model_dir / refit_core.INDEX).is_file() or not results.is_file():
        return None
    import json

    from ..config.run import RunConfig

    refitted = refit_core.load(model_dir)
    tuning = json.loads((Path(root) / "data" / "tuning" / f"{experiment}.json").read_text())
    typed = RunConfig.from_config(tuning["runs"][run]["config"])  # the run, as the stages
    data = load_prepared(typed.composition.dataset, typed.data, prepare_missing=False)
    metric = next(iter(refitted.selection))
    model = refitted.model_for(metric)
    i = int(spec.get("sample", 0))
    X, y = data.test
    U = model.project(X[i : i + 1])[0]
    k = U.shape[0]
    truth = np.eye(k)[np.asarray(y[i])]
    fig = _figure(4.6, 4.0)
    fig.subplots_adjust(left=0.14, right=0.84, bottom=0.13, top=0.86)
    ax = fig.add_subplot(1, 1, 1)
    image = ax.imshow(U, vmin=0.0, vmax=1.0, cmap="viridis")
    rows, cols = np.nonzero(truth)
    ax.scatter(cols, rows, s=120, facecolors="none", edgecolors="red", linewidths=1.5)
    for (r, c), v in np.ndenumerate(U):
        if v >= 0.005:
            ax.text(
                c,
                r,
                f"{v:.2f}",
                ha="center",
                va="center",
                fontsize=7,
                color="black" if v > 0.6 else "white",
            )
    ax.set_xticks(range(k))
    ax.set_yticks(range(k))
    ax.set_xlabel("label")
    ax.set_ylabel("rank")
    fig.colorbar(image, cax=fig.add_axes((0.87, 0.13, 0.03, 0.73)))
    ax.set_title(
        f"Soft permutation matrix: {typed.composition.dataset}, test sample {i}\n"
        "Birkhoff/Birkhoff, Euclidean (red circles: the true ranking)",
        fontsize=9,
    )
    return fig


def comparison(table: Table) -> Any:
    """Grouped bars: rows (datasets) x the paper's columns; the paper's values as ticks."""
    spec = table.spec
    rows = [r for r in spec.rows if r.dataset is not None]
    cols = spec.paper_cols
    n, m = len(rows), len(cols)
    width = 0.8 / m
    fig = _figure(max(7.0, 0.9 * n * m / 3 + 3), 4.2)
    fig.subplots_adjust(left=0.08, right=0.98, bottom=0.28, top=0.88)
    ax = fig.add_subplot(1, 1, 1)
    x = np.arange(n)
    for j, col in enumerate(cols):
        ours = [table.cell(r, col).ours for r in rows]
        paper = [table.cell(r, col).paper for r in rows]
        pos = x - 0.4 + width * (j + 0.5)
        ax.bar(pos, [np.nan if v is None else v for v in ours], width, label=col.id)
        ax.scatter(
            pos,
            [np.nan if v is None else v for v in paper],
            marker="_",
            s=60,
            color="black",
            zorder=3,
            label="paper" if j == 0 else None,
        )
    ax.set_xticks(x)
    ax.set_xticklabels([r.label for r in rows], rotation=35, ha="right", fontsize=8)
    ax.set_ylabel(spec.metric + (" (lower is better)" if spec.lower_is_better else ""))
    ax.set_title(spec.title, fontsize=9)
    ax.legend(fontsize=7, ncol=min(m + 1, 4), loc="upper right")
    ax.grid(True, axis="y", alpha=0.3)
    return fig
