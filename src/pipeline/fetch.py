"""``python -m pipeline.fetch [datasets=...] [data.mirror=...]``: Hydra entry point.

Composes ``conf/fetch.yaml`` and calls :func:`pipeline.data.fetch.run`.  With no
arguments it fetches every mirrored dataset.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from ._hydra import config_path, entry, run_or_exit
from .argv import normalize_sys_argv
from .data import fetch


@hydra.main(config_path=config_path(), config_name="fetch", version_base="1.3")
def hydra_main(cfg: DictConfig) -> None:
    """Fetch the selected datasets."""
    run_or_exit(fetch.run, cfg)


def main() -> None:
    """``projloss-fetch`` (``python -m pipeline.fetch``): :func:`hydra_main`, with Hydra's own
    errors (an unknown option, key or override) as one line ``error: ...``."""
    entry(hydra_main)


if __name__ == "__main__":
    normalize_sys_argv()  # Hydra flags may follow the overrides
    main()
