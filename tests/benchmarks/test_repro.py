"""The repro section (newest record of benchmarks/history/) and the plumbing of
``python -m benchmarks.repro`` (no clone, no make: the dry run, the helpers, the per-stage
breakdown of a real ``dvc repro`` output and the time stamps of a real process)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import repro
from benchmarks.registry import Context


def _record(directory: Path, name: str, **fields) -> dict:
    rec = {
        "commit": "f" * 40,
        "short": name,
        "date": "2026-01-01 00:00 UTC",
        "status": "ok",
        "overrides": [],
        "venv_seconds": 100.0,
        "repro_seconds": 500.0,
        "experiments": 3,
        "runs": 12,
        "machine": {"cores": 2, "cpu": "test cpu"},
        **fields,
    }
    (directory / f"repro-{name}.json").write_text(json.dumps(rec), encoding="utf-8")
    return rec


@pytest.fixture
def history(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setattr(repro, "HISTORY", tmp_path)
    return tmp_path


def test_not_measured_without_record(history: Path) -> None:
    res = repro.run(Context(quick=True))
    check, speedup, parity = res.checks
    assert check.value is None and speedup.value is None and parity.value is None
    assert check.status == speedup.status == parity.status == "NOT MEASURED"
    assert "Not measured" in res.markdown


def test_reports_newest_full_record(history: Path) -> None:
    _record(history, "aaa", date="2026-01-01 00:00 UTC", repro_seconds=700.0)
    _record(history, "bbb", date="2026-02-01 00:00 UTC", repro_seconds=1000.0)
    # newer, but partial or failed: never the checked figure
    _record(history, "ccc", date="2026-03-01 00:00 UTC", overrides=["experiments=smoke"])
    _record(history, "ddd", date="2026-04-01 00:00 UTC", status="failed at repro")
    (history / "repro-broken.json").write_text("{not json", encoding="utf-8")
    res = repro.run(Context(quick=True))
    check = res.checks[0]
    assert check.value == 1000.0
    assert check.status == "FAIL"  # 1000 s > the 900 s goal
    assert "bbb" in res.markdown and "2026-02-01" in res.markdown
    assert "ddd" in res.markdown  # the newer record is mentioned
    assert res.data["repro/commit"] == "bbb"


def test_reports_the_newest_commits_record_when_an_older_one_was_measured_last(
    history: Path,
) -> None:
    """A comparison keeps each commit's best round; the old commit's may be the later
    measurement. The checked figure is the newest commit's."""
    _record(history, "new", commit_date="2026-03-01T00:00:00+00:00",
            date="2026-04-01 10:11 UTC", repro_seconds=210.0)  # fmt: skip
    _record(history, "old", commit_date="2026-01-01T00:00:00+00:00",
            date="2026-04-01 10:18 UTC", repro_seconds=413.0)  # fmt: skip
    res = repro.run(Context(quick=True))
    assert res.checks[0].value == 210.0
    assert res.data["repro/commit"] == "new"


def test_partial_record_alone_is_not_a_measurement(history: Path) -> None:
    _record(history, "eee", overrides=["experiments=smoke"], repro_seconds=10.0)
    res = repro.run(Context(quick=True))
    assert res.checks[0].value is None
    assert "eee" in res.markdown and "partial" in res.markdown


def test_plan_runs_params_only_with_overrides(tmp_path: Path) -> None:
    full = repro.plan(tmp_path, [], None)
    assert [s for s, _ in full] == ["venv", "repro"]
    part = repro.plan(tmp_path, ["experiments=smoke"], "python3.11")
    assert [s for s, _ in part] == ["venv", "params", "repro"]
    assert part[1][1][-1] == "experiments=smoke"
    assert "PYTHON=python3.11" in part[0][1] and "PYTHON=python3.11" in part[2][1]


def test_child_env_drops_what_points_elsewhere(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", "src")
    monkeypatch.setenv("VIRTUAL_ENV", "/some/venv")
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "sqlite:///x.db")
    monkeypatch.setenv("PROJLOSS_MIRROR", "/mirror")
    env = repro.child_env()
    assert not {"PYTHONPATH", "VIRTUAL_ENV", "MLFLOW_TRACKING_URI"} & set(env)
    assert env["PROJLOSS_MIRROR"] == "/mirror"
    assert repro.child_env(Path("/other"))["PROJLOSS_MIRROR"] == "/other"


def test_dry_run_writes_nothing(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared"
    (shared / "datasets").mkdir(parents=True)
    work = tmp_path / "work"
    code = repro.main(
        ["--dry-run", "--shared", str(shared), "--workdir", str(work), "experiments=smoke"]
    )
    out = capsys.readouterr().out
    assert code == 0
    assert "make venv" in out and "make repro" in out and "pipeline.params experiments=smoke" in out
    assert not work.exists()
    assert not list(history.glob("repro-*.json"))


def test_missing_shared_dir_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="no datasets mirror"):
        repro.main(["--dry-run", "--shared", str(tmp_path / "nowhere")])


#: the output of `make repro` (DVC 3) for two experiments, shortened, with time stamps
DVC_OUTPUT = [
    (0.0, "PATH=... .venv/bin/dvc repro"),
    (2.0, "Running stage 'fetch':"),
    (2.1, "> python -m pipeline.stage fetch"),
    (4.1, "fetched 1 dataset"),
    (4.5, "Generating lock file 'dvc.lock'"),
    (4.5, "Updating lock file 'dvc.lock'"),
    (4.6, ""),
    (5.0, "Running stage 'tune@a':"),
    (5.1, "> python -m pipeline.stage tune a"),
    (9.1, "stage tune@a done in 3.9 s (imports included)"),
    (9.6, "Updating lock file 'dvc.lock'"),
    (9.7, "Running stage 'tune@b':"),
    (9.8, "> python -m pipeline.stage tune b"),
    (12.8, "stage tune@b done in 2.9 s (imports included)"),
    (13.0, "Updating lock file 'dvc.lock'"),
    (13.1, "Running stage 'evaluate@a':"),
    (13.2, "> python -m pipeline.stage evaluate a"),
    (14.2, "a/run: iris | test ... | 0.1 s"),
    (14.4, "Updating lock file 'dvc.lock'"),
    (14.5, "Use `dvc push` to send your updates to remote storage."),
]


def test_breakdown_per_stage_type() -> None:
    b = repro.breakdown(DVC_OUTPUT, 15.0)
    assert [s["name"] for s in b["stages"]] == ["fetch", "tune@a", "tune@b", "evaluate@a"]
    assert [s["seconds"] for s in b["stages"]] == pytest.approx([3.0, 4.7, 3.4, 1.9])
    assert b["by_type"] == pytest.approx({"fetch": 2.0, "tune": 7.0, "evaluate": 1.0, "dvc": 5.0})
    assert b["processes"] == {"fetch": 1, "tune": 2, "evaluate": 1}
    assert sum(b["by_type"].values()) == pytest.approx(15.0)


def test_breakdown_of_a_failed_stage_and_no_stage() -> None:
    failed = [*DVC_OUTPUT[:9], (8.0, "error: something (iris); fix it")]
    b = repro.breakdown(failed, 8.5)
    assert b["by_type"]["tune"] == pytest.approx(2.9)  # to its last line
    assert repro.breakdown([(0.1, "Stage 'fetch' didn't change, skipping")], 1.0)["by_type"] == {
        "dvc": 1.0
    }


def test_run_stamped_stamps_lines_as_they_come(tmp_path: Path) -> None:
    import sys

    script = "import time; print('a', flush=True); time.sleep(0.5); print('b', flush=True)"
    log = tmp_path / "out.log"
    code, seconds, lines = repro.run_stamped(
        [sys.executable, "-c", script], tmp_path, repro.child_env(), log
    )
    assert code == 0 and [text for _, text in lines] == ["a", "b"]
    assert lines[1][0] - lines[0][0] >= 0.4 and seconds >= lines[1][0]
    assert log.read_text().splitlines()[1].endswith("] b")


def _measured(short: str, seconds: float, by_type: dict, **fields) -> dict:
    return {
        "short": short,
        "commit": short * 8,
        "status": "ok",
        "overrides": [],
        "repro_seconds": seconds,
        "breakdown": by_type,
        "processes": {"tune": 7, "evaluate": 7},
        "load_start": [1.0, 1.0, 1.0],
        "machine": {"cores": 2},
        **fields,
    }


def test_comparison_takes_each_commits_best_round(history: Path) -> None:
    rounds = [
        _measured("old", 300.0, {"tune": 150.0, "evaluate": 80.0, "dvc": 70.0}),
        _measured("new", 140.0, {"tune": 90.0, "evaluate": 10.0, "dvc": 40.0}),
        _measured("old", 290.0, {"tune": 145.0, "evaluate": 75.0, "dvc": 70.0}),
        _measured("new", 150.0, {"tune": 95.0, "evaluate": 12.0, "dvc": 43.0}),
    ]
    comp = repro.comparison(rounds, ["old", "new"])
    assert comp["status"] == "ok"
    assert comp["best_seconds"] == {"old": 290.0, "new": 140.0}
    assert comp["speedup"] == pytest.approx(290.0 / 140.0)
    assert comp["order"] == ["old", "new", "old", "new"]
    failed = repro.comparison(
        [*rounds[:1], {**rounds[1], "status": "failed at repro"}], ["old", "new"]
    )
    assert failed["status"] == "incomplete" and failed["speedup"] is None

    comp["date"] = "2026-05-01 00:00 UTC"
    (history / "compare-old-new.json").write_text(json.dumps(comp), encoding="utf-8")
    _record(history, "new", repro_seconds=140.0, breakdown=rounds[1]["breakdown"])
    res = repro.run(Context(quick=True))
    speedup = res.checks[1]
    assert speedup.value == pytest.approx(290.0 / 140.0) and speedup.status == "PASS"
    assert res.data["repro/speedup"] == pytest.approx(2.07, abs=0.01)
    md = res.markdown
    # the before/after table: a row per stage type, both commits' best rounds, the ratio
    assert "| `tune` | 145 (7) | 90 (7) | 1.61x |" in md
    assert "| `evaluate` | 75 (7) | 10 (7) | 7.50x |" in md
    assert "| **total** (`make repro`) | 290 | 140 | 2.07x |" in md
    assert "compare-old-new.json" in md and "2.07x" in md
    assert "Other back-to-back" not in md


def test_other_comparisons_of_the_same_commits_are_listed(history: Path) -> None:
    """The machine drifts between back-to-back measurements of the same two commits: the
    newest is the checked figure, the others are listed beside it (newest first), not
    those of other commits or partial runs."""
    rounds = [_measured("old", 300.0, {"tune": 150.0}), _measured("new", 140.0, {"tune": 90.0})]
    _record(history, "new", repro_seconds=140.0, breakdown=rounds[1]["breakdown"])
    for name, date, old, new in (
        ("compare-old-new.json", "2026-05-03 00:00 UTC", 300.0, 160.0),
        ("compare-old-new-pair1.json", "2026-05-01 00:00 UTC", 310.0, 140.0),
        ("compare-old-new-pair2.json", "2026-05-02 00:00 UTC", 290.0, 150.0),
        ("compare-x-new.json", "2026-04-30 00:00 UTC", 900.0, 150.0),
    ):
        commits = ["x", "new"] if name.startswith("compare-x") else ["old", "new"]
        comp = repro.comparison(
            [_measured(commits[0], old, {"tune": 1.0}), _measured("new", new, {"tune": 1.0})],
            commits,
        )
        comp["date"] = date
        (history / name).write_text(json.dumps(comp), encoding="utf-8")
    md = repro.run(Context(quick=True)).markdown
    other = md.split("Other back-to-back measurements of the same commits: ")[1]
    assert other.index("pair2") < other.index("pair1")  # newest first
    assert "old 290 s, new 150 s, **1.93x**" in other and "**2.21x**" in other
    assert "compare-x-new" not in other and "compare-old-new.json" not in other


def test_commits_resolve_in_order() -> None:
    import argparse

    head = repro._git("rev-parse", "HEAD")
    parent = repro._git("rev-parse", "HEAD~1")
    args = argparse.Namespace(compare="HEAD~1", commit=[])
    assert [c for c, _ in repro._commits(args)] == [parent, head]
    args = argparse.Namespace(compare=None, commit=["HEAD", "HEAD"])
    assert [c for c, _ in repro._commits(args)] == [head]  # no repeat
    with pytest.raises(SystemExit, match="no commit 'nope-not-a-rev'"):
        repro._commits(argparse.Namespace(compare=None, commit=["nope-not-a-rev"]))


def test_dry_run_of_a_comparison(
    history: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shared = tmp_path / "shared"
    (shared / "datasets").mkdir(parents=True)
    code = repro.main(
        ["--dry-run", "--shared", str(shared), "--compare", "HEAD~1", "--rounds", "2"]
    )
    out = capsys.readouterr().out
    parent = repro._git("rev-parse", "--short", "HEAD~1")
    head = repro._git("rev-parse", "--short", "HEAD")
    assert code == 0
    assert f"order: {parent} {head} {parent} {head}" in out
    assert f"compare-{parent}-{head}.json" in out
    assert not list(history.glob("*.json"))


def test_a_comparison_with_a_parity_base_is_checked_apart(history: Path) -> None:
    """Issue 14 checks the speed-up over the first commit (2x); issue 34 that HEAD is not
    slower than the commit before its refactor (0.95x, back to back): each check takes the
    newest comparison with its own base, so a newer parity comparison does not replace
    (and fail) the speed-up check."""
    base = repro.PARITY_BASES[0]
    _record(history, "new", repro_seconds=140.0, breakdown={"tune": 90.0})
    for name, commits, date, old, new in (
        ("compare-old-new.json", ["old", "new"], "2026-05-01 00:00 UTC", 300.0, 140.0),
        (f"compare-{base}-new.json", [base, "new"], "2026-05-02 00:00 UTC", 150.0, 155.0),
    ):
        comp = repro.comparison(
            [_measured(commits[0], old, {"tune": 1.0}), _measured("new", new, {"tune": 1.0})],
            commits,
        )
        comp["date"] = date
        (history / name).write_text(json.dumps(comp), encoding="utf-8")
    res = repro.run(Context(quick=True))
    _, speedup, parity = res.checks
    assert speedup.value == pytest.approx(300.0 / 140.0) and speedup.status == "PASS"
    assert parity.value == pytest.approx(150.0 / 155.0) and parity.status == "PASS"
    assert res.data["repro/parity"] == pytest.approx(0.968, abs=0.001)
    assert f"compare-{base}-new.json" in res.markdown
