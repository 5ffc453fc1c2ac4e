"""Suite-wide test settings.

Hypothesis runs derandomized by default (the "ci" profile), so a fresh clone, CI and every
developer see the same examples and a failure is reproducible. Set
``HYPOTHESIS_PROFILE=explore`` to search new random examples (more of them, with the local
example database) when working on an oracle.

Tests marked ``long`` (minutes each) are collected first: ``make test`` runs on two
workers that take the tests in collection order, and a test of eight minutes collected
last kept one worker busy alone for its whole length (the crash-consistency test, measured:
the suite's last 8 of 23 minutes).
"""

import os
import sys
from pathlib import Path

import pytest
from hypothesis import settings

# tests/mirror.py (locating the dataset mirror) and tests/stores.py (an empty MLflow store)
# are shared by the engine and pipeline tests.
sys.path.insert(0, str(Path(__file__).parent))

from stores import empty_store

settings.register_profile("ci", derandomize=True, database=None, print_blob=True)
settings.register_profile("explore", max_examples=500)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))


def pytest_collection_modifyitems(items: list) -> None:
    """The ``long`` tests first (stable: the others keep their order)."""
    items.sort(key=lambda item: item.get_closest_marker("long") is None)


@pytest.fixture
def store_uri(tmp_path: Path, tmp_path_factory: pytest.TempPathFactory) -> str:
    """``sqlite:///<tmp_path>/mlflow.db``, an empty MLflow store (a copy of one made once
    per session: :mod:`stores`)."""
    return empty_store(tmp_path_factory, tmp_path / "mlflow.db")
