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


def run_or_exit(stage: Callable[[Any], Any], cfg: Any) -> None:
    """Run a stage core; report a :class:`DatasetError` as one clear line and exit 1."""
    try:
        stage(cfg)
    except DatasetError as exc:
        logging.getLogger("pipeline").error("error: %s", exc)
        sys.exit(1)
