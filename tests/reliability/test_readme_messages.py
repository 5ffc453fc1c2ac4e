"""The guide ("When things go wrong", ``docs/guide/troubleshooting.md``, and "Datasets")
quotes the messages of issue 36's fixes as the code writes them: each phrase below is
asserted on the real output by the test named beside it, and must appear in the page named
beside it (a reworded message fails here until the page follows)."""

from __future__ import annotations

from pathlib import Path

import pytest

from docs_pages import page

ROOT = Path(__file__).resolve().parents[2]
WRONG = "troubleshooting.md"  # "When things go wrong"

#: phrase -> (the guide page that quotes it, the test that asserts it on the real output)
PHRASES = {
    "no space left on device (writing": (WRONG, "tests/reliability/test_disk.py"),
    "read-only file system (writing": (WRONG, "tests/reliability/test_disk.py"),
    "its disk is full (SQLite: database or disk is full;": (
        WRONG,
        "tests/reliability/test_disk.py",
    ),
    "(not selected: skipped)": (WRONG, "tests/reliability/test_data_registry.py"),
    "too few rows for the protocol:": ("datasets.md", "tests/reliability/test_data.py"),
    "is not a launcher (command line); choose one with hydra/launcher=<name>": (
        WRONG,
        "tests/reliability/test_runs.py",
    ),
    "hydra.launcher.n_jobs=0 is invalid (command line)": (WRONG, "tests/reliability/test_runs.py"),
    "error: python -m pipeline.train (a sweep) was interrupted by": (
        WRONG,
        "tests/reliability/test_runs.py",
    ),
    "the fit's products of the\n  features overflow float64": (
        WRONG,
        "tests/reliability/test_engine.py",
    ),
    "override: true": ("datasets.md", "tests/reliability/test_data_registry.py"),
    "'./dvc.lock' validation failed": (WRONG, "tests/pipeline/test_dvc_crash.py"),
    "user-iris": ("datasets.md", "tests/reliability/test_data_registry.py"),
}


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("phrase", sorted(PHRASES))
def test_readme_quotes_the_message_its_test_asserts(phrase: str) -> None:
    name, test = PHRASES[phrase]
    assert _flat(phrase) in _flat(page(name)), f"docs/guide/{name} does not quote {phrase!r}"
    # the test named asserts the phrase's first words on the real output
    start = " ".join(_flat(phrase).split(" ")[:3])
    test_file = _flat((ROOT / test).read_text(encoding="utf-8"))
    assert start in test_file, f"{test} does not assert {start!r}"
