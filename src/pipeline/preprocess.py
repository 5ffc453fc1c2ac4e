"""``python -m pipeline.preprocess [datasets=...] [data.drop_empty=true] ...``: Hydra entry.

Composes ``conf/preprocess.yaml`` and calls :func:`pipeline.data.prepare.run`.
With no arguments it prepares every mirrored dataset and writes the statistics table.
"""

from __future__ import annotations

import hydra
from omegaconf import DictConfig

from ._hydra import config_path, entry, run_or_exit
from .argv import normalize_sys_argv
from .data import prepare as preprocess


@hydra.main(config_path=config_path(), config_name="preprocess", version_base="1.3")
def hydra_main(cfg: DictConfig) -> None:
    """Preprocess the selected datasets."""
    run_or_exit(preprocess.run, cfg)


def main() -> None:
    """``projloss-preprocess`` (``python -m pipeline.preprocess``): :func:`hydra_main`,
    with Hydra's own errors (an unknown option, key or override) as one line."""
    entry(hydra_main)


if __name__ == "__main__":
    normalize_sys_argv()  # Hydra flags may follow the overrides
    main()
