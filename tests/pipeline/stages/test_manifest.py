"""The manifest of an experiment's results that the report stage depends on, written by
the evaluate stage (:mod:`pipeline.runs.manifest`)."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from pipeline.errors import DatasetError
from pipeline.runs import manifest


def _outputs(root: Path, key: str) -> None:
    for rel, text in (
        (f"data/eval/{key}/a/results.json", "{}"),
        (f"data/eval/{key}/b/results.json", "[]"),
        (f"data/tuning/{key}.json", "{}"),
        (f"models/{key}/a/refit.json", "{}"),
    ):
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)


def test_the_manifest_follows_the_experiments_outputs_only(tmp_path: Path) -> None:
    """Each output's digest changes with any of its files (content or name) and with
    nothing else: not with another experiment's outputs."""
    for key in ("lr", "lr-seed1"):
        _outputs(tmp_path, key)
    first = manifest.manifest(tmp_path, "lr")
    assert first["experiment"] == "lr"
    assert list(first["outputs"]) == ["data/eval/lr", "data/tuning/lr.json", "models/lr"]
    # a file's digest is its content's SHA-256 (hashlib on the bytes, independently)
    want = hashlib.sha256(b"\0" + hashlib.sha256(b"{}").hexdigest().encode() + b"\n")
    assert first["outputs"]["data/tuning/lr.json"] == want.hexdigest()
    (tmp_path / "data/eval/lr-seed1/a/results.json").write_text("changed")
    assert manifest.manifest(tmp_path, "lr") == first
    (tmp_path / "data/eval/lr/b/results.json").write_text("[1]")
    changed = manifest.manifest(tmp_path, "lr")["outputs"]
    assert changed["data/eval/lr"] != first["outputs"]["data/eval/lr"]
    assert changed["models/lr"] == first["outputs"]["models/lr"]
    (tmp_path / "data/eval/lr/b/results.json").write_text("[]")
    assert manifest.manifest(tmp_path, "lr") == first  # a function of the contents
    (tmp_path / "data/eval/lr/b/results.json").rename(tmp_path / "data/eval/lr/b/other.json")
    assert manifest.manifest(tmp_path, "lr") != first  # a renamed file too


def test_missing_outputs_are_one_clear_error(tmp_path: Path) -> None:
    _outputs(tmp_path, "lr")
    (tmp_path / "data/tuning/lr.json").unlink()
    with pytest.raises(DatasetError, match=r"data/tuning/lr\.json.*dvc repro evaluate@lr"):
        manifest.manifest(tmp_path, "lr")


def test_it_goes_to_the_lists_report_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROJLOSS_ROOT", str(tmp_path))
    params = {"report": {"dir": "reports/smoke"}, "experiments": {}}
    assert manifest.manifest_path(params, "a") == tmp_path / "reports/smoke/inputs/a.json"


def test_write_puts_it_in_the_lists_report_directory(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.setenv("PROJLOSS_ROOT", str(tmp_path))
    _outputs(tmp_path, "lr")
    path = manifest.write({"report": {"dir": "reports/x"}}, "lr")
    assert path == tmp_path / "reports/x/inputs/lr.json"
    assert json.loads(path.read_text()) == manifest.manifest(tmp_path, "lr")
