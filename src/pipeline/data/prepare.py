"""Preprocess stage: the paper's protocol from ``data/raw/`` to ``data/prepared/``.

For each selected dataset (and each requested ordinal split) this reads the raw files
(:func:`pipeline.data.readers.load_raw`), splits and standardizes them
(:mod:`pipeline.data.protocol`) and writes ``data/prepared/<dataset>[+variant]/`` (format:
:mod:`pipeline.data.storage`).  A variant is keyed by content: its ``stats.json`` records the
protocol parameters, the reader settings of the dataset YAML (format, options), the
sha256 of the raw files it came from and the sha256 of each file it wrote.  It is left
alone only when all of them still hold (:func:`staleness`); otherwise it is rebuilt, with a
log line saying why (a changed raw file, changed settings, a corrupted file).
``data.force=true`` rebuilds it anyway.

Isolation: one dataset's failure (unreadable file, failed checksum...) never stops the
others.  Every failure is reported at the end, one line each; the run fails only when a
dataset it was asked to build failed -- the statistics table, which covers every registry
dataset, reports the others without failing.  Finally it writes the statistics table
(``reports/dataset_stats.*``, :mod:`pipeline.data.stats`); datasets whose raw files are not
here keep their rows of the existing table.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np

from ..errors import DatasetError, DatasetFailures, MissingRawDataError
from ..fileio import make_dir, sha256_file
from ..plain import to_plain
from .fetch import read_checksums, verify_raw
from .protocol import SPLITS, Variant, apply_protocol, small_train_warning, split_indices
from .readers import FILE_OPTIONS, RawData, load_raw
from .registry import DatasetSpec, list_specs, select
from .settings import DataSettings, data_settings
from .stats import error_row, missing_row, read_table, summarize, table_row, write_table
from .storage import SCALER, load_stats, save_scaler, save_split, save_stats

log = logging.getLogger(__name__)


class RawCache:
    """Raw datasets read once (keyed by raw directory, dataset, split, the recorded sha256
    of its raw files and its reader settings: a changed file or option is read again)."""

    def __init__(self) -> None:
        self._data: dict[tuple[Any, ...], RawData] = {}

    def get(self, spec: DatasetSpec, split: int | None, raw_dir: Path) -> RawData:
        split = split if spec.n_splits else None
        sums = read_checksums(Path(raw_dir) / spec.name)
        key = (
            Path(raw_dir),
            spec.name,
            split,
            json.dumps(sums, sort_keys=True),
            json.dumps(source_settings(spec), sort_keys=True, default=str),
        )
        if key not in self._data:
            self._data[key] = load_raw(spec, raw_dir, split)
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
        spec.part_files(s)  # validates the range (DataSettingError)
    return chosen


def raw_checksums(spec: DatasetSpec, settings: DataSettings, split: int | None) -> dict[str, str]:
    """sha256 of the raw files a variant is built from (from ``SHA256SUMS``)."""
    recorded = read_checksums(settings.raw_dir / spec.name)
    names = list(spec.part_files(split).values())
    names += [spec.options[k] for k in sorted(FILE_OPTIONS & set(spec.options))]
    return {n: recorded.get(n, "") for n in names}


def source_settings(spec: DatasetSpec) -> dict[str, Any]:
    """The settings of the dataset YAML that change what the reader returns."""
    return {
        "task": spec.task,
        "format": spec.format,
        "options": to_plain(spec.options),
        "sparse": spec.sparse,
    }


def written_files() -> list[str]:
    """The data files of a prepared variant (their sha256 are in ``stats.json``)."""
    return [f"{s}.npz" for s in SPLITS] + [SCALER]


def staleness(
    directory: Path,
    variant: Variant,
    sums: Mapping[str, str] | None,
    spec: DatasetSpec | None = None,
    verify: bool = True,
) -> str | None:
    """Why ``directory`` is not this variant built from these raw files (None: current).

    ``sums``: sha256 of the raw files (None: not checked); ``spec``: checks the reader
    settings; ``verify``: checks each written file against the sha256 recorded at write.
    """
    stats = load_stats(directory)
    if stats is None:
        return "missing" if not directory.exists() else "incomplete (no stats.json)"
    if stats.get("params") != variant.as_dict():
        return "built with other protocol settings"
    if spec is not None and stats.get("source") != source_settings(spec):
        return "built with other reader settings (format/options of the dataset YAML)"
    if sums is not None and stats.get("raw_files") != dict(sums):
        old = stats.get("raw_files") or {}
        changed = sorted(n for n in sums if old.get(n) != sums[n]) or sorted(old)
        return f"raw file(s) {', '.join(changed)} changed since it was built"
    recorded = stats.get("checksums") or {}
    for name in written_files():
        path = directory / name
        if not path.is_file():
            return f"{name} is missing"
        if verify and sha256_file(path) != recorded.get(name):
            return f"{path} is corrupted (its sha256 differs from the one recorded at write)"
    return None


def is_current(
    directory: Path,
    variant: Variant,
    sums: Mapping[str, str] | None,
    spec: DatasetSpec | None = None,
) -> bool:
    """True when ``directory`` holds this variant, complete, built from these raw files."""
    return staleness(directory, variant, sums, spec) is None


def write_variant(
    spec: DatasetSpec, raw: RawData, variant: Variant, directory: Path, sums: dict[str, str]
) -> dict[str, Any]:
    """Split, standardize and write one variant; return its statistics."""
    splits, scaler = apply_protocol(raw, variant)
    make_dir(directory)
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
    stats["source"] = source_settings(spec)
    stats["checksums"] = {name: sha256_file(directory / name) for name in written_files()}
    save_stats(directory, stats)
    return stats


def prepare(
    spec: DatasetSpec,
    settings: DataSettings,
    split: int | None = None,
    cache: RawCache | None = None,
    *,
    quiet: bool = False,
) -> Path:
    """Prepare one variant of ``spec`` (if not already current); return its directory.
    ``quiet``: its line at DEBUG level (one of many splits: the caller sums them up)."""
    level = logging.DEBUG if quiet else logging.INFO
    variant = Variant.of(spec, settings, split)
    directory = settings.prepared_dir / variant.dirname
    sums = raw_checksums(spec, settings, variant.split)
    if not settings.force:
        reason = staleness(directory, variant, sums, spec)
        if reason is None:
            log.log(level, "preprocess %-24s up to date", variant.dirname)
            return directory
        if reason != "missing":
            log.warning("preprocess %-24s %s: rebuilding it", variant.dirname, reason)
    start = time.perf_counter()
    raw = (cache or RawCache()).get(spec, variant.split, settings.raw_dir)
    stats = write_variant(spec, raw, variant, directory, sums)
    n = stats["n_samples"]
    log.log(
        level,
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
    specs: Mapping[str, DatasetSpec],
    settings: DataSettings,
    cache: RawCache,
    failures: dict[str, DatasetError] | None = None,
) -> list[dict[str, Any]]:
    """Statistics-table rows of every dataset (both drop_empty settings for multilabel).

    A dataset whose raw files are not here keeps its rows of the existing table (a fresh
    clone that prepares one dataset does not turn the others into "not fetched"); one whose
    files cannot be read gets an error row, and its error is added to ``failures``.
    """
    rows = []
    split = settings.ordinal_split if isinstance(settings.ordinal_split, int) else 0
    previous = read_table(settings.reports_dir)
    for spec in specs.values():
        try:
            verify_raw(
                spec,
                settings.raw_dir,
                list(spec.part_files(split if spec.n_splits else None).values()),
            )
            raw = cache.get(spec, split, settings.raw_dir)
        except MissingRawDataError:
            kept = [r for r in previous.get(spec.name, []) if r.get("task") == spec.task]
            if kept:
                rows += kept
                continue
            local = all(f.mirror or f.path for f in spec.files)
            status = "not fetched" + ("" if local else " (upstream only)")
            rows.append(missing_row(spec, status))
            continue
        except (DatasetError, ValueError) as exc:  # ValueError: e.g. a split out of range
            if failures is not None:
                failures.setdefault(spec.name, exc)
            rows.append(error_row(spec))
            continue
        options = [False, True] if spec.task == "multilabel" else [False]
        for drop in options:
            variant = Variant.of(spec, settings.replace(drop_empty=drop), split)
            try:  # a dataset too small for the protocol: its own error, not the table's
                stats = summarize(spec, raw, variant, split_indices(raw, variant))
            except (DatasetError, ValueError) as exc:
                if failures is not None:
                    failures.setdefault(spec.name, exc)
                rows.append(error_row(spec))
                break
            rows.append(table_row(stats))
    return rows


def report_failures(failures: Mapping[str, Exception], asked: bool) -> None:
    """Log one line per failed dataset (``error:`` when asked for, else ``warning:``)."""
    for name, exc in failures.items():
        if asked:
            log.error("error: %s", exc)
        else:
            log.warning("warning: %s (statistics table only; not asked to build %s)", exc, name)


def run(cfg: Mapping[str, Any] | None = None, *, cache: RawCache | None = None) -> list[Path]:
    """Prepare the datasets ``cfg["datasets"]`` selects; write the statistics table.

    ``cfg``: a plain mapping or DictConfig with a ``data`` node, a ``datasets`` selector
    (default ``mirrored``) and ``report`` (default true: write the table).  ``cache``:
    raw data already read (shared between calls, e.g. by tests).
    """
    plain = to_plain(cfg) or {}
    settings = data_settings(plain)
    broken: dict[str, DatasetError] = {}  # broken YAMLs the selection includes
    skipped: dict[str, DatasetError] = {}  # and those it does not
    specs = select(plain.get("datasets", "mirrored"), settings.dataset_dirs, broken, skipped)
    for exc in skipped.values():
        log.warning("warning: %s (not selected: skipped)", exc)
    start = time.perf_counter()
    cache = cache or RawCache()
    done = []
    # Settings errors first (e.g. data.ordinal_split out of range): before any work.
    todo = [(spec, splits_to_prepare(spec, settings)) for spec in specs]
    failed: dict[str, DatasetError] = dict(broken)
    for name in broken:
        log.error("preprocess %-24s failed", name)
    for spec, splits in todo:
        try:
            verify_raw(spec, settings.raw_dir)
            t0, many = time.perf_counter(), len(splits) > 1  # e.g. 30 ordinal splits: 1 line
            for split in splits:
                done.append(prepare(spec, settings, split, cache, quiet=many))
                n = ((load_stats(done[-1]) or {}).get("n_samples")) or {}
                warning = n and small_train_warning(f"dataset {spec.name!r} ({done[-1]})", n)
                if warning:
                    log.warning("%s", warning)
            if many:
                log.info(
                    "preprocess %-24s %d splits ready (%.1f s)",
                    spec.name,
                    len(splits),
                    time.perf_counter() - t0,
                )
        except DatasetError as exc:  # go on with the other datasets
            failed[spec.name] = exc
            log.error("preprocess %-24s failed", spec.name)
    log.info(
        "prepared %d variant(s) of %d dataset(s) in %s in %.1f s",
        len(done),
        len(specs),
        settings.prepared_dir,
        time.perf_counter() - start,
    )
    others: dict[str, DatasetError] = {}
    if plain.get("report", True):
        all_specs = list_specs(settings.dataset_dirs, broken={})  # broken: reported above
        rows = table_rows(all_specs, settings, cache, others)
        paths = write_table(rows, all_specs, settings.reports_dir)
        log.info("statistics table: %s, %s", *paths)
    report_failures({n: e for n, e in others.items() if n not in failed}, asked=False)
    if len(failed) == 1:
        raise next(iter(failed.values()))
    if failed:
        report_failures(failed, asked=True)
        raise DatasetFailures(
            f"{len(failed)} of {len(specs) + len(broken)} dataset(s) failed: "
            f"{', '.join(failed)} (one line each above); the others were prepared"
        )
    return done
