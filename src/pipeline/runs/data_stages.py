"""The data stages of ``dvc.yaml``: fetch and preprocess the ``datasets`` selection
(``python -m pipeline.stage fetch|preprocess``, :mod:`pipeline.stage`), with the ``data``
settings of ``params.yaml``, into the directories ``dvc.yaml`` declares as their outputs.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Mapping
from typing import Any

from ..paths import PREPARED_DIR, RAW_DIR

log = logging.getLogger("pipeline.stage")


def stage_data(params: Mapping[str, Any]) -> dict[str, Any]:
    """The ``data`` settings of params.yaml for a DVC stage: the data directories must be
    the ones ``dvc.yaml`` declares as outputs; download bars only on a terminal."""
    from ..config.experiments import data_node
    from ..data.settings import data_settings
    from ..paths import resolve

    data = data_node(params)
    settings = data_settings(data)
    for key, want in (("raw_dir", RAW_DIR), ("prepared_dir", PREPARED_DIR)):
        if getattr(settings, key) != resolve(want):
            from ..errors import CompositionError

            raise CompositionError(
                f"data.{key}={data.get(key)!r}: in the DVC pipeline it must be {want} (the "
                "output dvc.yaml declares); change it for pipeline.train runs only"
            )
    if not sys.stderr.isatty():
        data["progress"] = False
    return data


def fetch(params: Mapping[str, Any]) -> None:
    """Fetch the ``datasets`` selection (into ``data/raw``)."""
    from ..data import fetch as core

    core.run({"data": stage_data(params), "datasets": params.get("datasets", "mirrored")})


def preprocess(params: Mapping[str, Any]) -> None:
    """Prepare the ``datasets`` selection with the ``data`` settings, each dataset's
    default variant (the paper's protocol) too -- ``data/prepared/<dataset>/`` is the DVC
    dependency of the experiments on that dataset, whatever the settings -- and every
    variant an experiment may choose with its own ``data`` / ``splits`` keys: each
    orreview split of the ordinal datasets and ``drop_empty`` of the multilabel ones (so
    that editing an experiment never re-runs this stage)."""
    from ..data import prepare as core
    from ..data.protocol import Variant
    from ..data.registry import select
    from ..data.settings import PROTOCOL_DEFAULTS, data_settings

    data = stage_data(params)
    selection = params.get("datasets", "mirrored")
    cache = core.RawCache()
    core.run({"data": data, "datasets": selection, "report": True}, cache=cache)
    settings = data_settings(data)
    defaults = settings.replace(**PROTOCOL_DEFAULTS)
    start, count = time.perf_counter(), 0
    for spec in select(selection, defaults.dataset_dirs):
        wanted = [(defaults, None)]
        if spec.n_splits is not None:
            wanted += [(settings, split) for split in range(spec.n_splits)]
        if spec.task == "multilabel":
            wanted += [(settings.replace(drop_empty=not settings.drop_empty), None)]
        splits = 0  # the orreview splits: one line per dataset, not one per split
        for chosen, split in wanted:
            variant = Variant.of(spec, chosen, split)
            sums = core.raw_checksums(spec, chosen, variant.split)  # stale raw: rebuilt
            if not core.is_current(chosen.prepared_dir / variant.dirname, variant, sums, spec):
                core.prepare(spec, chosen, variant.split, cache, quiet=split is not None)
                count += 1
                splits += split is not None
        if splits:
            log.info("preprocess %-24s %d of %d splits", spec.name, splits, spec.n_splits)
    log.info("prepared %d other variant(s) in %.1f s", count, time.perf_counter() - start)
