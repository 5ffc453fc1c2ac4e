"""The repro section (newest record of benchmarks/history/) and the plumbing of
``python -m benchmarks.repro`` (no clone, no make: the dry run and the helpers)."""

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
    (check,) = res.checks
    assert check.value is None
    assert check.status == "NOT MEASURED"
    assert "Not measured" in res.markdown


def test_reports_newest_full_record(history: Path) -> None:
    _record(history, "aaa", date="2026-01-01 00:00 UTC", repro_seconds=700.0)
    _record(history, "bbb", date="2026-02-01 00:00 UTC", repro_seconds=1000.0)
    # newer, but partial or failed: never the checked figure
    _record(history, "ccc", date="2026-03-01 00:00 UTC", overrides=["experiments=smoke"])
    _record(history, "ddd", date="2026-04-01 00:00 UTC", status="failed at repro")
    (history / "repro-broken.json").write_text("{not json", encoding="utf-8")
    res = repro.run(Context(quick=True))
    (check,) = res.checks
    assert check.value == 1000.0
    assert check.status == "FAIL"  # 1000 s > the 900 s goal
    assert "bbb" in res.markdown and "2026-02-01" in res.markdown
    assert "ddd" in res.markdown  # the newer record is mentioned
    assert res.data["repro/commit"] == "bbb"


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
