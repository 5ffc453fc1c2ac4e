"""A prepared dataset in memory, split with another seed (repeated splits).

The repeated-split experiments (``conf/experiments/paper-repeated.yaml``) run the paper's
protocol with the split seeds 1..R-1 (``data: {seed: s}`` of an experiment). Writing
those variants under ``data/prepared/`` would change the DVC dependency of every paper
experiment (``data/prepared``, the whole directory), so they are never written: the
stages split the raw files in memory with :func:`pipeline.data.protocol.apply_protocol`, the
same code the preprocess stage runs (deterministic: tune, refit and evaluate see the same
split). Datasets with their own test part and no indexed splits (the multilabel ones)
pool their parts and draw a new test part of the shipped size (beyond the paper's
protocol, :func:`pipeline.data.protocol.split_indices`), so that every seed resamples the
test sample; seed 0 is the shipped split.
"""

from __future__ import annotations

from .api import PreparedData
from .protocol import SPLITS, Variant, apply_protocol
from .registry import get_spec
from .settings import PROTOCOL_DEFAULTS, DataSettings


def is_reseeded(settings: DataSettings) -> bool:
    """True when the run's data variant differs from the prepared default by its seed
    (an experiment's ``data.seed``): :func:`load_resplit` builds it in memory."""
    return settings.seed != PROTOCOL_DEFAULTS["seed"]


def load_resplit(dataset: str, settings: DataSettings) -> PreparedData:
    """The prepared data of ``dataset`` (a registry name) with the data ``settings`` of a
    run, split and standardized in memory from the raw files (checked against their
    sha256 sums), nothing written."""
    from .fetch import verify_raw
    from .readers import load_raw

    spec = get_spec(dataset, settings.dataset_dirs)  # as splits.load
    variant = Variant.of(spec, settings)
    verify_raw(spec, settings.raw_dir, list(spec.part_files(variant.split).values()))
    raw = load_raw(spec, settings.raw_dir, variant.split)
    parts, _ = apply_protocol(raw, variant)
    return PreparedData(
        name=spec.name,
        task=spec.task,
        variant=variant.dirname,
        directory=settings.prepared_dir / variant.dirname,  # not written
        train=parts["train"][:2],
        val=parts["val"][:2],
        test=parts["test"][:2],
        index={s: parts[s][2] for s in SPLITS},
        stats={"params": variant.as_dict(), "in_memory": True},
    )
