"""Shared plumbing of the thin Hydra entry points (``python -m pipeline.<stage>``)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import Any

from .errors import DatasetError
from .paths import conf_dir


def config_path() -> str:
    """Absolute path of the repository's ``conf/`` (Hydra's ``config_path``)."""
    return str(conf_dir())


def expected_errors() -> tuple[type[BaseException], ...]:
    """The errors a stage raises on purpose, each with a message that names the remedy:
    bad data (:class:`DatasetError`), a composition that makes no sense
    (:class:`~pipeline.composition.CompositionError`), an unusable tracking store
    (:class:`~pipeline.tracking.TrackingError`)."""
    from .composition import CompositionError
    from .tracking import TrackingError

    return (DatasetError, CompositionError, TrackingError)


def run_or_exit(stage: Callable[[Any], Any], cfg: Any) -> None:
    """Run a stage core; report an expected error as one clear line and exit 1."""
    try:
        stage(cfg)
    except expected_errors() as exc:
        logging.getLogger("pipeline").error("error: %s", exc)
        sys.exit(1)
