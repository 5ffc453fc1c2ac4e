"""The MLflow screenshots of ``docs/ui/`` match the code that decides what MLflow shows
(issue 35): ``make ui-screenshots`` records its fingerprint in ``docs/ui/FINGERPRINT``
(:mod:`pipeline.tools.ui_fingerprint`), and a change of that code fails here until the
screenshots are taken again."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pipeline.tools import ui_fingerprint, ui_screenshots

ROOT = Path(__file__).resolve().parents[3]
RECORDED = ROOT / "docs" / "ui" / ui_fingerprint.FILE_NAME
RUN_NAMES = [name for name, _ in ui_screenshots.RUNS]
REMEDY = "retake them with `make ui-screenshots` (it rewrites docs/ui/FINGERPRINT)"


def test_the_screenshots_match_the_tracking_code() -> None:
    assert RECORDED.is_file(), (
        f"{RECORDED.relative_to(ROOT)} (the code the screenshots of docs/ui/ show) is "
        f"missing: {REMEDY}"
    )
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    current = ui_fingerprint.fingerprint()
    changed = ui_fingerprint.changes(recorded, current)
    assert recorded["sha256"] == current["sha256"] and not changed, (
        "the screenshots of docs/ui/ were taken before a change of the code that decides "
        f"what MLflow shows (src/pipeline/: {', '.join(changed)}): {REMEDY}"
    )


def _package(root: Path) -> Path:
    """A fake ``src/pipeline`` with tracking code, a module that imports mlflow, one that
    does not, and the listed modules."""
    files = {
        "runs/__init__.py": "",
        "runs/tracking.py": "def log(): ...\n",
        "runs/tracking_views.py": "VIEW = 1\n",  # a split of tracking.py: by its prefix
        "runs/mlflow_view/__init__.py": "",  # a package of that prefix
        "runs/mlflow_view/names.py": "NAME = 'x'\n",
        "runs/logger.py": "def f():\n    from mlflow import log_metric\n",  # imports mlflow
        "runs/parallel.py": "# mlflow is not imported here\nN = 2\n",
        "runs/tune.py": "T = 1\n",
        "tools/ui_screenshots.py": "RUNS = ()\n",
    }
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
    return root


def test_the_fingerprinted_modules_and_a_change_found(tmp_path: Path) -> None:
    package = _package(tmp_path / "pipeline")
    assert ui_fingerprint.tracked_files(package) == [
        "runs/logger.py",
        "runs/mlflow_view/__init__.py",
        "runs/mlflow_view/names.py",
        "runs/tracking.py",
        "runs/tracking_views.py",
        "runs/tune.py",
        "tools/ui_screenshots.py",
    ]  # not parallel.py; runs/evaluate.py and runs/figures.py are listed but absent here
    before = ui_fingerprint.fingerprint(package=package)
    assert ui_fingerprint.fingerprint(package=package) == before  # deterministic
    (package / "runs/tracking_views.py").write_text("VIEW = 2\n")
    (package / "runs/metrics_log.py").write_text("import mlflow\n")  # a new logging module
    (package / "runs/tune.py").unlink()
    after = ui_fingerprint.fingerprint(package=package)
    assert after["sha256"] != before["sha256"]
    assert ui_fingerprint.changes(before, after) == [
        "+runs/metrics_log.py",
        "-runs/tune.py",
        "runs/tracking_views.py",
    ]
    (package / "runs/parallel.py").write_text("N = 3\n")  # not tracking code: no change
    assert ui_fingerprint.fingerprint(package=package) == after


def test_make_ui_screenshots_records_the_fingerprint(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``python -m pipeline.tools.ui_screenshots --out DIR`` writes ``DIR/FINGERPRINT``
    after the screenshots (the store, the UI and Chromium replaced by stand-ins), and not
    when taking them failed."""
    import contextlib

    shots: list[Path] = []
    monkeypatch.setattr(ui_screenshots, "chromium_path", lambda: "/usr/bin/chromium")
    monkeypatch.setattr(
        ui_screenshots, "make_store", lambda d: ("sqlite:///x", dict.fromkeys(RUN_NAMES, "r"))
    )
    monkeypatch.setattr(ui_screenshots, "experiment_of", lambda uri, run: "1")
    monkeypatch.setattr(
        ui_screenshots, "mlflow_ui", lambda uri: contextlib.nullcontext("http://127.0.0.1:1")
    )
    monkeypatch.setattr(
        ui_screenshots, "screenshots", lambda address, pages, out, size: shots.append(out)
    )
    out = tmp_path / "ui"
    assert ui_screenshots.main(["--out", str(out)]) == 0
    assert shots == [out]
    recorded = json.loads((out / "FINGERPRINT").read_text())
    assert recorded == ui_fingerprint.fingerprint()

    def fail(*args: object) -> None:
        raise ui_screenshots.ScreenshotError("the UI did not come up")

    monkeypatch.setattr(ui_screenshots, "screenshots", fail)
    other = tmp_path / "other"
    assert ui_screenshots.main(["--out", str(other)]) == 1
    assert not (other / "FINGERPRINT").exists()
