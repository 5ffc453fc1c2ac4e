"""The paper's values in src/pipeline/report/paper.yaml are the .tex source's, and the
table layouts refer to experiments and runs that exist."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.params import compose_params
from pipeline.report.paper import paper_tex, tables, tex_tables


@pytest.fixture(scope="module")
def tex() -> dict[str, dict[str, list[float]]]:
    path = paper_tex()
    if path is None or not Path(path).is_file():
        pytest.fail(
            "the paper's .tex is missing: expected ../shared/paper/projection-oracles.tex "
            "beside the project root, or set PROJLOSS_PAPER",
            pytrace=False,
        )
    return tex_tables(Path(path).read_text(encoding="utf-8"))


def test_every_paper_value_is_transcribed_from_the_tex(tex) -> None:
    specs = {k: s for k, s in tables().items() if not s.diagnostic}
    assert {s.tex_label for s in specs.values()} == set(tex)  # every numeric table covered
    for spec in specs.values():
        source = tex[spec.tex_label]
        rows = {label: vals for label, vals in source.items() if not label.startswith("Average")}
        assert rows == spec.paper, spec.key
        assert [r.label for r in spec.rows] == list(rows), spec.key  # same rows, same order
        assert len(spec.paper_cols) == len(next(iter(rows.values()))), spec.key
        if spec.paper_summary:
            assert source["Average MAE"] == spec.paper_summary["average"]
            assert source["Average rank"] == spec.paper_summary["rank"]


def test_the_tex_parser_on_a_small_table() -> None:
    tex = r"""
    \begin{table}\caption{x}\label{table:demo}
    \begin{tabular}{ccc}
    \toprule
    Projection & $[0,1]^k$ & $\cM$ \\
    \midrule
    Alpha & 1.5 & \textbf{0.25} \\
    Beta & 2 & 3.75 \\
    \midrule
    Average & 1.75 & 2.0 \\
    \bottomrule
    \end{tabular}\end{table}
    \begin{tabular}{cc} Gamma & 9 \\ \end{tabular}
    \caption{\label{table:after} y}
    """
    out = tex_tables(tex)
    assert out["table:demo"] == {"Alpha": [1.5, 0.25], "Beta": [2.0, 3.75], "Average": [1.75, 2.0]}
    assert out["table:after"] == {"Gamma": [9.0]}


def test_layouts_refer_to_the_paper_experiments() -> None:
    params = yaml.safe_load(compose_params(["experiments=paper"]))
    experiments = params["experiments"]
    for spec in tables().values():
        for row in spec.rows:
            if row.dataset is None:
                continue
            key = spec.experiment_of(row)
            assert key in experiments, (spec.key, key)
            item = experiments[key]
            runs = item["runs"]
            for col in spec.columns:
                run = spec.run_of(row, col)
                if "datasets" in item:
                    dataset, run = run.split("/", 1)
                    assert dataset in item["datasets"], (spec.key, run)
                assert run in runs, (spec.key, key, run)
        if spec.splits_experiment:
            assert experiments[spec.splits_experiment].get("splits") == "all"
