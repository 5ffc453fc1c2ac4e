"""The launchers section: the newest ``python -m benchmarks.launchers`` record, rendered."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks import launchers
from benchmarks.registry import Context


def test_section_renders_the_newest_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(launchers, "HISTORY", tmp_path)
    assert launchers.run(Context()).checks[0].status == "NOT MEASURED"
    for date, ray in (("2026-01-01 00:00 UTC", 40.0), ("2026-02-01 00:00 UTC", 24.0)):
        result = {
            "jobs": 8, "walls": {"joblib": [20.0, 21.0], "ray": [ray]},
            "best": {"joblib": 20.0, "ray": ray}, "overhead_per_job": (ray - 20.0) / 8,
            "ray_head_seconds": 9.0, "load_start": [1, 1, 1], "load_end": [2, 2, 2],
        }  # fmt: skip
        rec = {"short": "abc1234", "date": date, "cores": 2, "result": result}
        (tmp_path / f"launchers-{ray:.0f}.json").write_text(json.dumps(rec))
    out = launchers.run(Context())
    (check,) = out.checks
    assert check.value == pytest.approx(0.5) and check.status == "PASS"
    assert "**0.50 s**" in out.markdown and "launchers-24.json" in out.markdown


def test_the_sweep_command_has_eight_jobs(tmp_path: Path):
    cmd = launchers.sweep_command("ray", tmp_path, [])
    assert "--multirun" in cmd and "hydra/launcher=ray_cluster" in cmd
    grid = [a.split("=", 1)[1].count(",") + 1 for a in launchers.GRID]
    assert grid[0] * grid[1] == launchers.N_JOBS
