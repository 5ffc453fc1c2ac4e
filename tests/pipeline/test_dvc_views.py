"""The DVC views of the pipeline at the paper's scale (issue 13, Build 2 and 3).

- the report's summary metrics (``reports/summary/<table>.json``): right counts and
  averages, and ``dvc metrics show`` fits a screen (no line over 200 characters) on the
  paper's experiment list, with the committed results of ``reports/*.csv``;
- ``dvc plots show`` renders the validation curves and the tables' bars (top-level
  ``plots:`` of ``dvc.yaml``, templates in ``.dvc/plots/``);
- each experiment list writes its own report directory (``report.dir``), the small list
  follows the paper's protocol;
- ``dvc.lock`` matches the committed code and params (:func:`test_dvc_lock_is_fresh`).
"""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
import yaml

from pipeline.params import compose_params
from pipeline.report.build import build_report

from .conftest import ROOT

BIN = Path(sys.executable).parent
#: the tables' CSVs (not the dataset statistics, nor runs.csv: the runs they cite)
TABLES = sorted(
    p.stem for p in (ROOT / "reports").glob("*.csv") if p.stem not in ("dataset_stats", "runs")
)


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MLFLOW_", "PROJLOSS_"))}
    env.update(PATH=str(BIN) + os.pathsep + env.get("PATH", ""), DVC_NO_ANALYTICS="1")
    return env


def _dvc(args: list[str], cwd: Path) -> str:
    done = subprocess.run(
        [str(BIN / "dvc"), *args], cwd=cwd, env=_env(), capture_output=True, text=True, timeout=300
    )
    assert done.returncode == 0, f"dvc {args}:\n{done.stdout}\n{done.stderr}"
    return done.stdout


def _committed_results(root: Path) -> None:
    """``data/eval/<experiment>/<run>/results.json`` holding the committed values of
    ``reports/*.csv`` (the paper's list as last run), and one tuning file with curves."""
    values: dict[tuple[str, str], dict] = defaultdict(
        lambda: {"headline": {}, "lambda": {}, "std": {}}
    )
    for table in TABLES:
        with open(ROOT / "reports" / f"{table}.csv", encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if not row["ours"]:
                    continue
                entry = values[(row["experiment"], row["run"])]
                entry["headline"][row["metric"]] = float(row["ours"])
                entry["n_test"] = n = int(row["n_test"]) if row["n_test"] else None
                noise = float(row["noise"]) if row["noise"] else None
                if noise and n and row["metric"] == "hamming":  # 400 / (k^2 n_test)
                    entry["y_shape"] = [round((400 / (noise * n)) ** 0.5)]
                elif noise and n and row["metric"] == "accuracy":  # 100 / (k n_test)
                    entry["y_shape"] = [round(100 / (noise * n))]
                if row["ours_std"]:
                    entry["std"][row["metric"]] = float(row["ours_std"])
                    entry["n_splits"] = 30
    for (experiment, run), entry in values.items():
        path = root / "data/eval" / experiment / run / "results.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({**entry, "std": entry["std"] or None}), encoding="utf-8")
    grid = [1e-4, 1e-2, 1.0, 1e2, 1e4]
    tuning = {"experiment": "lr", "runs": {}}
    for ds in ("iris", "wine"):
        for i, run in enumerate(("t1-cube-cube", "t1-birkhoff-birkhoff")):
            curve = [10.0 + i + j * (1 + i) for j in range(len(grid))]
            tuning["runs"][f"{ds}/{run}"] = {
                "config": {"dataset": {"name": ds}},
                "tune": {
                    "lambdas": grid,
                    "metrics": {"hamming": curve},
                    "selected": {"hamming": {"index": 0, "lambda": grid[0], "value": curve[0]}},
                },
            }
    (root / "data/tuning").mkdir(parents=True)
    (root / "data/tuning/lr.json").write_text(json.dumps(tuning), encoding="utf-8")


@pytest.fixture(scope="module")
def paper_repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A git repository with the project's dvc.yaml and params.yaml (the paper's list) and
    the report built from the committed results."""
    root = tmp_path_factory.mktemp("paper") / "repo"
    root.mkdir()
    for item in ("dvc.yaml", "params.yaml", ".dvc/config", ".dvc/plots"):
        src, dst = ROOT / item, root / item
        dst.parent.mkdir(parents=True, exist_ok=True)
        (shutil.copytree if src.is_dir() else shutil.copy2)(src, dst)
    _committed_results(root)
    build_report(root, root / "reports", figures=False, experiments=["lr"])
    env = _env()
    for args in (["git", "init", "-q"], ["git", "add", "-A"]):
        subprocess.run(args, cwd=root, env=env, check=True, capture_output=True)
    return root


def test_summary_counts_the_committed_tables(paper_repo: Path) -> None:
    for table in TABLES:
        with open(ROOT / "reports" / f"{table}.csv", encoding="utf-8") as f:
            rows = list(csv.DictReader(f))
        summary = json.loads((paper_repo / f"reports/summary/{table}.json").read_text())
        with_paper = [r for r in rows if r["status"] and r["ours"] and r["paper"]]
        status = Counter(r["status"] for r in with_paper)
        assert summary["cells"] == len(with_paper), table
        assert summary["match"] == status["match"], table
        assert summary["within_noise"] == status["within noise"], table
        assert summary["differs"] == status["differs"], table
        assert summary["not_run"] == 0, table
        if with_paper:
            mean = sum(abs(float(r["ours"]) - float(r["paper"])) for r in with_paper)
            assert summary["mean_abs_diff"] == pytest.approx(mean / len(with_paper), abs=1e-4)
    t1 = json.loads((paper_repo / "reports/summary/table1.json").read_text())
    assert t1["best"] == t1["paper_best"] == "B/B"  # the paper's finding, on our values


def test_table_plot_data_has_every_cell_and_the_column_averages(paper_repo: Path) -> None:
    with open(paper_repo / "reports/plots/tables/table1.csv", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    with open(ROOT / "reports/table1.csv", encoding="utf-8") as f:
        cells = [r for r in csv.DictReader(f) if r["status"] and r["ours"]]
    assert len(rows) == len(cells) + len({r["column"] for r in cells})
    bb = [float(r["ours"]) for r in cells if r["column"] == "B/B"]
    (avg,) = [r for r in rows if r["cell"] == "average · B/B"]
    assert float(avg["ours"]) == pytest.approx(sum(bb) / len(bb), rel=1e-12)
    summary = json.loads((paper_repo / "reports/summary/table1.json").read_text())
    assert summary["best_avg"] == pytest.approx(sum(bb) / len(bb), abs=1e-4)


def test_dvc_metrics_show_fits_a_screen(paper_repo: Path) -> None:
    shown = _dvc(["metrics", "show"], paper_repo)
    lines = shown.splitlines()
    assert max(map(len, lines)) <= 200, shown
    assert len(lines) == 1 + len(TABLES), shown  # a header and one row per table
    assert {"cells", "match", "differs", "best"} <= set(lines[0].split()), shown
    # the per-experiment files are not metrics any more (they made a 32,060-char line)
    assert "metrics/" not in shown


def test_dvc_dag_fits_a_screen(paper_repo: Path) -> None:
    """``dvc dag --collapse-foreach-matrix`` on the paper's list: one box per stage (plain
    ``dvc dag`` draws every experiment's three stages side by side, 791 characters)."""
    shown = _dvc(["dag", "--collapse-foreach-matrix"], paper_repo)
    assert max(map(len, shown.splitlines())) <= 200, shown
    for stage in ("fetch", "preprocess", "tune", "refit", "evaluate", "report"):
        assert stage in shown, shown


def test_dvc_plots_show_renders_the_curves_and_the_bars(paper_repo: Path) -> None:
    shown = json.loads(_dvc(["plots", "show", "--json"], paper_repo))
    data = shown.get("data", shown)
    validation = [k for k in data if "plots/validation" in k]
    assert validation and any("plots/tables" in k for k in data), list(data)
    content = json.dumps(data[validation[0]])
    assert "iris/t1-birkhoff-birkhoff" in content and "log10_lambda" in content
    out = paper_repo / "dvc_plots"
    _dvc(["plots", "show", "-o", str(out)], paper_repo)
    html = (out / "index.html").read_text(encoding="utf-8")
    assert "wine/t1-cube-cube" in html and html.count("vegaEmbed(") == 1 + len(TABLES)


def test_dvc_plots_diff_compares_two_commits(paper_repo: Path, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(paper_repo, repo)
    env = {**_env(), "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t"}
    env.update(GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@t")
    subprocess.run(["git", "commit", "-qm", "report"], cwd=repo, env=env, check=True)
    # a better iris Birkhoff/Birkhoff run: the report changes in the workspace
    path = repo / "data/eval/lr/iris/t1-birkhoff-birkhoff/results.json"
    result = json.loads(path.read_text())
    result["headline"]["hamming"] -= 1.0
    path.write_text(json.dumps(result))
    build_report(repo, repo / "reports", figures=False, experiments=["lr"])
    diff = json.loads(_dvc(["plots", "diff", "HEAD", "--json"], repo))
    data = diff.get("data", diff)
    (table1,) = [v for k, v in data.items() if k.endswith("table1.csv")]
    text = json.dumps(table1)
    assert '"HEAD"' in text and '"workspace"' in text
    summary = json.loads(_dvc(["metrics", "diff", "HEAD", "--json"], repo))
    changed = summary.get("diff", summary)["reports/summary/table1.json"]
    assert changed["mean_abs_diff"]["diff"] != 0


def test_each_list_has_its_report_directory() -> None:
    paper = yaml.safe_load(compose_params([]))
    assert paper["report"] == {"dir": "reports"}
    small = yaml.safe_load(compose_params(["experiments=default"]))
    assert small["report"]["dir"] == "reports/default"
    assert yaml.safe_load(compose_params(["experiments=smoke"]))["report"]["dir"] == (
        "reports/smoke"
    )
    # the small list's cube column follows the paper's protocol (ranking Hamming loss)
    assert "task.target_loss=hamming_ranking" in small["experiments"]["t1-iris"]["overrides"]
    # the committed params.yaml is the paper's list
    committed = yaml.safe_load((ROOT / "params.yaml").read_text(encoding="utf-8"))
    assert committed["report"] == {"dir": "reports"}


def test_the_small_list_runs_the_papers_compositions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every run of the small list's t1-iris is the paper list's lr run on iris (same
    task, target loss, set, geometry, decoder and model): its cube/cube is the paper's
    27.78 column, not the entrywise-Hamming variant (17.04)."""
    from pipeline.config.experiments import compose_runs

    monkeypatch.delenv("PROJLOSS_MIRROR", raising=False)
    small = yaml.safe_load(compose_params(["experiments=default"]))
    paper = yaml.safe_load(compose_params([]))
    paper["experiments"]["lr"]["datasets"] = ["iris"]
    ours = compose_runs(small, "t1-iris")
    theirs = compose_runs(paper, "lr")
    nodes = ("task", "set", "geometry", "decoder", "model", "dataset")
    for rid, cfg in ours.items():
        ref = theirs[f"iris/t1-{rid}"]
        assert {n: cfg[n] for n in nodes} == {n: ref[n] for n in nodes}, rid
    assert ours["cube-cube"]["task"]["target_loss"] == "hamming_ranking"


def _stale(
    status: dict, outs: list[str], committed: frozenset[str] = frozenset()
) -> dict[str, list[str]]:
    """Per stage, what ``dvc status`` says changed in its code, config or params (a data
    dependency produced by another stage is not committed to git: ignored), and which of
    its outputs committed to git (``committed``: files or directories) differ from the
    lock (edited by hand, or written by other code or params)."""

    def is_data(path: str) -> bool:  # an output, inside one, or a directory of outputs
        return any(
            path == o or path.startswith(o.rstrip("/") + "/") or o.startswith(path + "/")
            for o in outs
        )

    stale: dict[str, list[str]] = {}
    for stage, changes in status.items():
        for change in changes:
            if not isinstance(change, dict):  # e.g. "always changed"
                continue
            for path, what in (change.get("changed deps") or {}).items():
                if isinstance(what, dict):  # a params file: {param: "modified"/"new"/...}
                    stale.setdefault(stage, []).extend(f"{path}:{p} {w}" for p, w in what.items())
                elif not is_data(path):
                    stale.setdefault(stage, []).append(f"{path} {what}")
            for file, params in (change.get("changed params") or {}).items():
                stale.setdefault(stage, []).extend(f"{file}:{p} {w}" for p, w in params.items())
            if "changed command" in change:
                stale.setdefault(stage, []).append("command changed")
            for path, what in (change.get("changed outs") or {}).items():
                if path in committed:
                    stale.setdefault(stage, []).append(f"{path} (committed output) {what}")
    return stale


def test_stale_filter_ignores_missing_data_only() -> None:
    status = {
        "preprocess": [
            {"changed deps": {"data/raw": "deleted", "src/pipeline/data/stats.py": "modified"}},
            {"changed deps": {"params.yaml": {"data.seed": "modified"}}},
            {"changed outs": {"data/prepared": "deleted", "reports/stats.md": "modified"}},
        ],
        "tune@lr": [{"changed deps": {"data/prepared/iris": "deleted"}}],
        "report": [{"changed deps": {"data/eval": "modified", "models": "deleted"}}],
        "evaluate@lr": [{"changed params": {"params.yaml": {"report.dir": "new"}}}],
    }
    outs = ["data/raw", "data/prepared", "data/eval/lr", "models/lr"]
    assert _stale(status, outs, frozenset({"reports/stats.md"})) == {
        "preprocess": [
            "src/pipeline/data/stats.py modified",
            "params.yaml:data.seed modified",
            "reports/stats.md (committed output) modified",
        ],
        "evaluate@lr": ["params.yaml:report.dir new"],
    }


def stale_stages(root: Path) -> dict[str, list[str]]:
    """What ``dvc status`` of the repository ``root`` finds changed in the code, config and
    params of each stage (:func:`_stale`).

    Without DVC's repository lock (it only reads): a ``make test`` beside a running ``make
    repro`` in the same checkout neither waits for it nor makes it fail ("Unable to acquire
    lock": the stage's process re-takes the lock after each command, for 3 s at most)."""
    from dvc.lock import LockNoop
    from dvc.repo import Repo

    with Repo(str(root)) as repo:
        repo.lock = LockNoop()
        outs = [str(out.fs_path) for out in repo.index.outs]
        outs = [os.path.relpath(p, root) if os.path.isabs(p) else p for p in outs]
        status = repo.status()
    files = subprocess.run(
        ["git", "ls-files"], cwd=root, capture_output=True, text=True, check=True
    ).stdout.splitlines()
    # a committed output: a file tracked by git, or a directory holding some
    committed = frozenset(
        o for o in outs if o in files or any(f.startswith(o.rstrip("/") + "/") for f in files)
    )
    return _stale(status, outs, committed)


def test_stale_stages_takes_no_lock(paper_repo: Path) -> None:
    """A ``dvc repro`` holding the repository's lock (here: this process) does not stop the
    freshness check, nor the check the repro."""
    from dvc.repo import Repo

    with Repo(str(paper_repo)) as running:
        with running.lock:
            start = time.perf_counter()
            stale_stages(paper_repo)
            assert time.perf_counter() - start < 30
            assert running.lock.is_locked


def test_dvc_lock_has_no_entry_of_a_removed_stage() -> None:
    """DVC keeps the ``dvc.lock`` entries of stages that ``dvc.yaml`` no longer defines
    (``collect@*``, removed by 8bfcb7c, stayed: 504 of its 2,932 lines). They change
    nothing DVC decides, but ``dvc repro`` parses and rewrites the whole lock after every
    stage (ruamel's round trip, pure Python: 0.8 s for 78 kB), and they made it slower. Fix:
    delete them (DVC's own serializer keeps the rest byte for byte)."""
    from dvc.lock import LockNoop
    from dvc.repo import Repo

    with Repo(str(ROOT)) as repo:
        repo.lock = LockNoop()
        defined = {stage.addressing for stage in repo.index.stages}
    locked = yaml.safe_load((ROOT / "dvc.lock").read_text(encoding="utf-8"))["stages"]
    assert sorted(set(locked) - defined) == []


def test_dvc_lock_is_fresh() -> None:
    """FAILS when dvc.lock does not match the committed code, config and params: the
    committed results (reports/, metrics/) were not produced by this code. Fix: re-run
    `make repro` and commit dvc.lock (and the results) with the change.

    Works on a fresh clone: missing data (not in git) is not a change; only the
    dependencies tracked by git (src/, conf/) and the params are compared."""
    stale = stale_stages(ROOT)
    lines = [f"  {stage}: {', '.join(sorted(set(what)))}" for stage, what in stale.items()]
    assert not stale, (
        "dvc.lock does not match the committed code/params -- re-run `make repro` and commit "
        "dvc.lock with the results:\n" + "\n".join(lines)
    )
