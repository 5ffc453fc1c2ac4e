"""Preprocess stage: the paper's protocol from ``data/raw/`` to ``data/prepared/``.

For each selected dataset (and each requested ordinal split) this reads the raw files
(:func:`pipeline.readers.load_raw`), splits and standardizes them
(:mod:`pipeline.protocol`) and writes ``data/prepared/<dataset>[+variant]/`` (format:
:mod:`pipeline.storage`).  A variant whose ``stats.json`` already records the same
parameters and raw checksums is left alone (``data.force=true`` redoes it).  Finally it
writes the statistics table of every registry dataset (``reports/dataset_stats.*``,
:mod:`pipeline.stats`).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import MissingRawDataError
from ..protocol import SPLITS, Variant, apply_protocol, split_indices
from ..readers import FILE_OPTIONS, RawData, load_raw
from ..registry import DatasetSpec, list_specs, select
from ..settings import DataSettings, data_settings, to_plain
from ..stats import missing_row, summarize, table_row, write_table
from ..storage import SCALER, load_stats, save_scaler, save_split, save_stats
from .fetch import read_checksums, verify_raw

log = logging.getLogger(__name__)


class RawCache:
    """Raw datasets read once (keyed by raw directory, dataset and split)."""

    def __init__(self) -> None:
        self._data: dict[tuple[Path, str, int | None], RawData] = {}

    def get(self, spec: DatasetSpec, split: int | None, raw_dir: Path) -> RawData:
        key = (Path(raw_dir), spec.name, split if spec.n_splits else None)
        if key not in self._data:
            self._data[key] = load_raw(spec, raw_dir, key[2])
        return self._data[key]


def splits_to_prepare(spec: DatasetSpec, settings: DataSettings) -> list[int | None]:
    """The split indices ``data.ordinal_split`` asks for (``[None]`` without splits)."""
    if spec.n_splits is None:
        return [None]
    sel = settings.ordinal_split
    if sel == "all":
        return list(range(spec.n_splits))
    chosen = list(sel) if isinstance(sel, tuple) else [sel]
    for s in chosen:
        spec.part_files(s)  # validates the range
    return chosen


def raw_checksums(spec: DatasetSpec, settings: DataSettings, split: int | None) -> dict[str, str]:
    """sha256 of the raw files a variant is built from (from ``SHA256SUMS``)."""
    recorded = read_checksums(settings.raw_dir / spec.name)
    names = list(spec.part_files(split).values())
    names += [spec.options[k] for k in sorted(FILE_OPTIONS & set(spec.options))]
    return {n: recorded.get(n, "") for n in names}


def is_current(directory: Path, variant: Variant, sums: Mapping[str, str] | None) -> bool:
    """True when ``directory`` holds this variant, complete, built from these raw files."""
    stats = load_stats(directory)
    if stats is None or stats.get("params") != variant.as_dict():
        return False
    if sums is not None and stats.get("raw_files") != dict(sums):
        return False
    return (
        all((directory / f"{s}.npz").is_file() for s in SPLITS) and (directory / SCALER).is_file()
    )


def write_variant(
    spec: DatasetSpec, raw: RawData, variant: Variant, directory: Path, sums: dict[str, str]
) -> dict[str, Any]:
    """Split, standardize and write one variant; return its statistics."""
    splits, scaler = apply_protocol(raw, variant)
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "stats.json").unlink(missing_ok=True)  # incomplete until rewritten
    for name, (X, y, ids) in splits.items():
        save_split(directory / f"{name}.npz", X, y, ids)
    mean = scaler.mean_ if scaler.with_mean else None  # sklearn sets mean_ either way
    save_scaler(directory / SCALER, mean, scaler.scale_, scaler.var_)
    stats = summarize(spec, raw, variant, {s: v[2] for s, v in splits.items()})
    stats["scaler"] = {
        "class": "sklearn.preprocessing.StandardScaler",
        "with_mean": bool(scaler.with_mean),
        "fitted_on": "train+val",
        "n_samples_seen": int(np.max(scaler.n_samples_seen_)),
    }
    stats["raw_files"] = sums
    save_stats(directory, stats)
    return stats


def prepare(
    spec: DatasetSpec,
    settings: DataSettings,
    split: int | None = None,
    cache: RawCache | None = None,
) -> Path:
    """Prepare one variant of ``spec`` (if not already current); return its directory."""
    variant = Variant.of(spec, settings, split)
    directory = settings.prepared_dir / variant.dirname
    sums = raw_checksums(spec, settings, variant.split)
    if not settings.force and is_current(directory, variant, sums):
        log.info("preprocess %-24s up to date", variant.dirname)
        return directory
    start = time.perf_counter()
    raw = (cache or RawCache()).get(spec, variant.split, settings.raw_dir)
    stats = write_variant(spec, raw, variant, directory, sums)
    n = stats["n_samples"]
    log.info(
        "preprocess %-24s train %d, val %d, test %d, %d features%s (%.1f s)",
        variant.dirname,
        n["train"],
        n["val"],
        n["test"],
        stats["n_features"],
        " sparse" if stats["sparse"] else "",
        time.perf_counter() - start,
    )
    return directory


def table_rows(
    specs: Mapping[str, DatasetSpec], settings: DataSettings, cache: RawCache
) -> list[dict[str, Any]]:
    """Statistics-table rows of every dataset (both drop_empty settings for multilabel)."""
    rows = []
    split = settings.ordinal_split if isinstance(settings.ordinal_split, int) else 0
    for spec in specs.values():
        try:
            verify_raw(
                spec,
                settings.raw_dir,
                list(spec.part_files(split if spec.n_splits else None).values()),
            )
            raw = cache.get(spec, split, settings.raw_dir)
        except MissingRawDataError:
            status = "not fetched" + ("" if spec.mirrored else " (upstream only)")
            rows.append(missing_row(spec, status))
            continue
        options = [False, True] if spec.task == "multilabel" else [False]
        for drop in options:
            variant = Variant.of(spec, settings.replace(drop_empty=drop), split)
            stats = summarize(spec, raw, variant, split_indices(raw, variant))
            rows.append(table_row(stats))
    return rows


def run(cfg: Mapping[str, Any] | None = None, *, cache: RawCache | None = None) -> list[Path]:
    """Prepare the datasets ``cfg["datasets"]`` selects; write the statistics table.

    ``cfg``: a plain mapping or DictConfig with a ``data`` node, a ``datasets`` selector
    (default ``mirrored``) and ``report`` (default true: write the table).  ``cache``:
    raw data already read (shared between calls, e.g. by tests).
    """
    plain = to_plain(cfg) or {}
    settings = data_settings(plain)
    specs = select(plain.get("datasets", "mirrored"), settings.dataset_dirs)
    start = time.perf_counter()
    cache = cache or RawCache()
    done = []
    for spec in specs:
        verify_raw(spec, settings.raw_dir)
        for split in splits_to_prepare(spec, settings):
            done.append(prepare(spec, settings, split, cache))
    log.info(
        "prepared %d variant(s) of %d dataset(s) in %s in %.1f s",
        len(done),
        len(specs),
        settings.prepared_dir,
        time.perf_counter() - start,
    )
    if plain.get("report", True):
        all_specs = list_specs(settings.dataset_dirs)
        paths = write_table(table_rows(all_specs, settings, cache), all_specs, settings.reports_dir)
        log.info("statistics table: %s, %s", *paths)
    return done
