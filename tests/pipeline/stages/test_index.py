"""The index of what differs per run (MLflow run ids, timings), kept out of the stages'
outputs so that they are a function of the code and the data (:mod:`pipeline.runs.index`,
issue 34)."""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.runs import index

RECORD = {
    "experiment": "lr",
    "run_id": "9a37659802ff4906b142d94039b6be9d",
    "tune": {"lambdas": [1e-4, 1.0], "fit_seconds": [0.1, 0.2], "seconds": 0.3},
    "refit": {"0": {"lambda": 1e-4, "fit_seconds": 0.18, "converged": True}},
    "headline": {"hamming": 1.5},
}


def test_the_output_has_no_per_run_value_and_reads_back_whole(tmp_path: Path) -> None:
    path = tmp_path / "data/eval/lr/run/results.json"
    index.write_json(path, RECORD, tmp_path)
    written = json.loads(path.read_text())
    text = path.read_text()
    assert not any(f'"{key}"' in text for key in index.PER_RUN), text
    assert written["refit"]["0"] == {"lambda": 1e-4, "converged": True}
    assert index.index_path(path, tmp_path) == tmp_path / "data/runs/data/eval/lr/run/results.json"
    assert index.read_json(path, tmp_path) == RECORD
    # another run: the same output bytes, its own run id and times in the index
    again = {**RECORD, "run_id": "0" * 32, "tune": {**RECORD["tune"], "seconds": 9.0}}
    index.write_json(path, again, tmp_path)
    assert path.read_text() == text
    assert index.read_json(path, tmp_path) == again


def test_an_index_entry_of_other_outputs_is_not_used(tmp_path: Path) -> None:
    """An output restored from DVC's cache (another run's bytes): no run id, never a
    wrong one; an output with nothing per run: no index entry left."""
    path = tmp_path / "data/tuning/lr.json"
    index.write_json(path, RECORD, tmp_path)
    restored = {**json.loads(path.read_text()), "headline": {"hamming": 2.0}}
    path.write_text(json.dumps(restored))
    assert index.read_json(path, tmp_path) == restored
    index.write_json(path, {"headline": {"hamming": 2.0}}, tmp_path)
    assert not index.index_path(path, tmp_path).exists()


def test_outside_the_project_the_index_is_beside_the_output(tmp_path: Path) -> None:
    project, out = tmp_path / "project", tmp_path / "elsewhere/results.json"
    assert index.index_path(out, project) == tmp_path / "elsewhere/.runs/results.json"
