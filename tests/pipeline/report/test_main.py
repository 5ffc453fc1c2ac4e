"""``python -m pipeline.report``'s note on another experiment list's outputs."""

from __future__ import annotations

import logging
from pathlib import Path

from pipeline.report import __main__ as report_main


def _project(root: Path) -> None:
    for key in ("lr", "lr-seed1"):
        (root / "data" / "eval" / key / "run").mkdir(parents=True)
        (root / "models" / key / "run").mkdir(parents=True)
        (root / "data" / "tuning").mkdir(parents=True, exist_ok=True)
        (root / "data" / "tuning" / f"{key}.json").write_text("{}")
    (root / "models" / ".gitignore").write_text("/lr\n")  # what DVC writes: not an output
    (root / "data" / "tuning" / "notes.txt").write_text("a user's file")


def test_other_lists_outputs_are_named(tmp_path: Path) -> None:
    """The outputs of experiments outside params.yaml's list under the report stage's
    dependencies (make repro-repeated's seeds) are found, and only those."""
    _project(tmp_path)
    assert report_main.other_outputs(tmp_path, ["lr"]) == [
        "data/eval/lr-seed1",
        "data/tuning/lr-seed1.json",
        "models/lr-seed1",
    ]
    assert report_main.other_outputs(tmp_path, ["lr", "lr-seed1"]) == []
    assert report_main.other_outputs(tmp_path / "empty", ["lr"]) == []  # nothing run yet


def test_the_report_warns_in_one_line(tmp_path: Path, caplog) -> None:
    """One warning line names them and says why they matter (dvc.lock) and what to do."""
    _project(tmp_path)
    with caplog.at_level(logging.WARNING, logger="pipeline.report"):
        report_main._note_other_outputs(tmp_path, ["lr"])
        report_main._note_other_outputs(tmp_path, None)  # no params.yaml: no list, no note
        report_main._note_other_outputs(tmp_path, ["lr", "lr-seed1"])
    (record,) = caplog.records
    line = record.getMessage()
    assert "\n" not in line
    assert "data/eval/lr-seed1, data/tuning/lr-seed1.json, models/lr-seed1" in line
    assert "dvc.lock" in line and "move them out of the project" in line
