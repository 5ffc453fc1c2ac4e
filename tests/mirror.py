"""Locate the local dataset mirror for the tests (no network is ever used).

Order: ``$PROJLOSS_MIRROR``; ``../shared/datasets`` beside the project root (the CI and
README layout); a ``shared/datasets`` beside any parent (git worktrees). A missing mirror
is an error, not a skip: the suite's end-to-end checks run on the real datasets, and
skipping them silently would let CI pass without them.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def find_mirror() -> Path | None:
    env = os.environ.get("PROJLOSS_MIRROR")
    candidates = [Path(env)] if env else []
    candidates += [p / "shared" / "datasets" for p in ROOT.parents]
    for c in candidates:
        if (c / "MANIFEST.tsv").is_file():
            return c.resolve()
    return None


def require_mirror() -> Path:
    path = find_mirror()
    if path is None:
        pytest.fail(
            "no local dataset mirror: expected ../shared/datasets beside the project root "
            "(with MANIFEST.tsv), or set PROJLOSS_MIRROR to its path",
            pytrace=False,
        )
    return path
