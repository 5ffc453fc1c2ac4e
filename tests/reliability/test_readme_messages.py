"""The README's "When things go wrong" quotes the messages of issue 36's fixes as the code
writes them: each phrase below is asserted on the real output by the test named beside it,
and must appear in the README (a reworded message fails here until the README follows)."""

from __future__ import annotations

from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]

#: phrase in the README -> the test that asserts it on the command's real output
PHRASES = {
    "no space left on device (writing": "tests/reliability/test_disk.py",
    "read-only file system (writing": "tests/reliability/test_disk.py",
    "its disk is full (SQLite: database or disk is full;": "tests/reliability/test_disk.py",
    "(not selected: skipped)": "tests/reliability/test_data_registry.py",
    "too few rows for the protocol:": "tests/reliability/test_data.py",
    "is not a launcher (command line); choose one with hydra/launcher=<name>": (
        "tests/reliability/test_runs.py"
    ),
    "hydra.launcher.n_jobs=0 is invalid (command line)": "tests/reliability/test_runs.py",
    "error: python -m pipeline.train (a sweep) was interrupted by": (
        "tests/reliability/test_runs.py"
    ),
    "the fit's products of the\n  features overflow float64": "tests/reliability/test_engine.py",
    "override: true": "tests/reliability/test_data_registry.py",
    "'./dvc.lock' validation failed": "tests/pipeline/test_dvc_crash.py",
    "user-iris": "tests/reliability/test_data_registry.py",
}


def _flat(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("phrase", sorted(PHRASES))
def test_readme_quotes_the_message_its_test_asserts(phrase: str) -> None:
    readme = _flat((ROOT / "README.md").read_text(encoding="utf-8"))
    assert _flat(phrase) in readme, f"README.md does not quote {phrase!r}"
    # the test named asserts the phrase's first words on the real output
    start = " ".join(_flat(phrase).split(" ")[:3])
    test_file = _flat((ROOT / PHRASES[phrase]).read_text(encoding="utf-8"))
    assert start in test_file, f"{PHRASES[phrase]} does not assert {start!r}"
