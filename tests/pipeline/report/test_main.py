"""``python -m pipeline.report``'s note on manifests of experiments outside its list."""

from __future__ import annotations

import logging
from pathlib import Path

from pipeline.report import __main__ as report_main


def _report_dir(out: Path) -> None:
    (out / "inputs").mkdir(parents=True)
    for key in ("lr", "lr-seed1"):
        (out / "inputs" / f"{key}.json").write_text("{}")
    (out / "inputs" / ".gitignore").write_text("/lr.json\n")  # what DVC writes: not one
    (out / "table1.csv").write_text("a report file")


def test_manifests_of_other_experiments_are_named(tmp_path: Path) -> None:
    """The manifests in the report's inputs/ (the report stage's dependency) of experiments
    outside params.yaml's list are found, and only those."""
    _report_dir(tmp_path)
    assert report_main.stale_inputs(tmp_path, ["lr"]) == ["inputs/lr-seed1.json"]
    assert report_main.stale_inputs(tmp_path, ["lr", "lr-seed1"]) == []
    assert report_main.stale_inputs(tmp_path / "empty", ["lr"]) == []  # nothing collected yet


def test_the_report_warns_in_one_line(tmp_path: Path, caplog) -> None:
    """One warning line names them and says why they matter (the stage's dependency) and
    what to do."""
    _report_dir(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipeline.report"):
        report_main._note_stale_inputs(tmp_path, ["lr"])
        report_main._note_stale_inputs(tmp_path, None)  # no params.yaml: no list, no note
        report_main._note_stale_inputs(tmp_path, ["lr", "lr-seed1"])
    (record,) = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    assert "inputs/lr-seed1.json" in line and "depends on that folder" in line
    assert "delete them" in line
