"""Fetch stage: get each dataset file, verified, into ``data/raw/<dataset>/``.

For every file of every selected dataset (registry: :mod:`pipeline.data.registry`):

1. if ``data/raw/<dataset>/<file>`` is already there with the right sha256 (and size),
   keep it (so a re-run resumes where an interrupted one stopped) -- unless it comes from
   a local ``path`` without a registry sha256 whose content changed since (compared by
   sha256, not mtime): then it is copied again;
2. otherwise copy it from its local ``path`` (user datasets), else from the local mirror
   (``data.mirror``), else download its URLs in order -- never touching the network when
   the mirror has the file;
3. hash while copying, compare with the registry's sha256 and size, and only then rename
   the temporary file onto its final name (:mod:`pipeline.fileio`).

Files without a sha256 in the registry (upstream-only datasets such as ``mediamill`` and
LIBSVM ``tmc2007``) are *trusted on first use*: the hash of the first download is
reported and recorded in ``data/raw/<dataset>/SHA256SUMS``, and later runs verify
against that record.  ``SHA256SUMS`` (``sha256sum -c`` format) lists every fetched file.

Errors name the dataset, the file and a remedy: :class:`~pipeline.errors.ChecksumError`,
:class:`~pipeline.errors.SourceUnavailableError` ("no mirror, no network"; for a ``path:``
that does not exist and no other source: the path and the YAML to fix),
:class:`~pipeline.errors.UnknownDatasetError`.
"""

from __future__ import annotations

import contextlib
import http.client
import logging
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from ..errors import (
    ChecksumError,
    DatasetError,
    DatasetFailures,
    DiskError,
    MissingRawDataError,
    SourceUnavailableError,
)
from ..fileio import (
    TMP_SUFFIX,
    atomic_open,
    copy_stream,
    is_stale_temporary,
    make_dir,
    sha256_file,
    write_text,
)
from ..paths import project_root, resolve
from ..plain import to_plain
from .registry import CHECKSUMS, DatasetSpec, FileSpec, select
from .settings import DataSettings, data_settings

log = logging.getLogger(__name__)

#: ``opener(url, timeout)`` -> a context manager yielding a binary stream.  Injectable so
#: that tests never use the network.
Opener = Callable[[str, float], contextlib.AbstractContextManager[IO[bytes]]]
#: errors meaning "this URL cannot be reached now"
NETWORK_ERRORS = (urllib.error.URLError, OSError, http.client.HTTPException, ValueError)


def urlopen(url: str, timeout: float) -> contextlib.AbstractContextManager[IO[bytes]]:
    """The default opener: :func:`urllib.request.urlopen` (http, https, file URLs)."""
    request = urllib.request.Request(url, headers={"User-Agent": "projloss-pipeline"})
    return urllib.request.urlopen(request, timeout=timeout)


@dataclass
class FetchReport:
    """What happened to the files of one dataset (file name -> action)."""

    dataset: str
    directory: Path
    actions: dict[str, str] = field(default_factory=dict)
    trusted: dict[str, str] = field(default_factory=dict)  # TOFU: file -> sha256

    def count(self, action: str) -> int:
        return sum(a == action for a in self.actions.values())


def read_checksums(directory: Path) -> dict[str, str]:
    """The ``SHA256SUMS`` record of a raw directory (file name -> sha256)."""
    path = directory / CHECKSUMS
    out: dict[str, str] = {}
    if path.is_file():
        for line in path.read_text(encoding="utf-8").splitlines():
            digest, _, name = line.strip().partition("  ")
            if digest and name:
                out[name] = digest
    return out


def write_checksums(directory: Path, sums: Mapping[str, str]) -> None:
    """Atomically write ``SHA256SUMS`` (sorted, ``sha256sum -c`` format)."""
    text = "".join(f"{sums[n]}  {n}\n" for n in sorted(sums))
    write_text(directory / CHECKSUMS, text)


def expected_sha256(fspec: FileSpec, recorded: Mapping[str, str]) -> str | None:
    """The registry's sha256, else the one recorded on first use, else None."""
    return fspec.sha256 or recorded.get(fspec.name)


def file_ok(path: Path, fspec: FileSpec, recorded: Mapping[str, str]) -> bool:
    """True when ``path`` exists with the expected size and sha256."""
    if not path.is_file():
        return False
    if fspec.bytes is not None and path.stat().st_size != fspec.bytes:
        return False
    expected = expected_sha256(fspec, recorded)
    return expected is None or sha256_file(path) == expected


def verify_raw(spec: DatasetSpec, raw_dir: Path, names: Sequence[str] | None = None) -> None:
    """Raise unless the raw files (all, or ``names``) are present and verified."""
    directory = raw_dir / spec.name
    recorded = read_checksums(directory)
    for fspec in spec.files:
        if names is not None and fspec.name not in names:
            continue
        path = directory / fspec.name
        if not path.is_file():
            raise MissingRawDataError(
                f"dataset {spec.name!r}: file {fspec.name!r} missing in {directory}; "
                f"run `python -m pipeline.fetch datasets={spec.name}`"
            )
        if not file_ok(path, fspec, recorded):
            raise ChecksumError(
                f"dataset {spec.name!r}: file {path} fails its checksum; delete it and run "
                f"`python -m pipeline.fetch datasets={spec.name}` to fetch it again"
            )


class _Progress:
    """A tqdm bar over the bytes of one dataset (no-op when disabled)."""

    def __init__(self, desc: str, total: int | None, enabled: bool) -> None:
        self.bar = None
        if enabled:
            from tqdm.auto import tqdm

            self.bar = tqdm(total=total or None, desc=desc, unit="B", unit_scale=True, leave=False)

    def update(self, n: int) -> None:
        if self.bar is not None:
            self.bar.update(n)

    def file(self, name: str) -> None:
        if self.bar is not None:
            self.bar.set_postfix_str(name, refresh=False)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()


def _mismatch(fspec: FileSpec, sha: str, size: int) -> str | None:
    if fspec.bytes is not None and size != fspec.bytes:
        return f"size {size} bytes, expected {fspec.bytes}"
    if fspec.sha256 is not None and sha != fspec.sha256:
        return f"sha256 {sha}, expected {fspec.sha256}"
    return None


def _copy_verified(
    spec: DatasetSpec,
    fspec: FileSpec,
    dest: Path,
    stream: IO[bytes],
    source: str,
    expected: str | None,
    progress: _Progress,
) -> str:
    """Copy ``stream`` to ``dest`` atomically if it matches; return its sha256."""
    with atomic_open(dest, "wb", needed=fspec.bytes) as out:
        sha, size = copy_stream(stream, out, progress.update)
        problem = _mismatch(fspec, sha, size)
        if problem is None and expected is not None and sha != expected:
            problem = f"sha256 {sha}, expected {expected} (recorded in {CHECKSUMS})"
        if problem is not None:
            raise ChecksumError(
                f"dataset {spec.name!r}, file {fspec.name!r}: checksum mismatch from {source}: "
                f"{problem}. Nothing was written to {dest.parent}. Remedy: restore the "
                "source file (re-copy the mirror / re-download), or fix the registry entry "
                f"{spec.source or spec.name} if the upstream file legitimately changed."
            )
    return sha


def _local_changed(fspec: FileSpec, sha: str) -> bool:
    """True for a local ``path`` file without registry sha256 whose content is not ``sha``."""
    if not fspec.path or fspec.sha256:
        return False
    local = resolve(fspec.path, project_root())
    return local.is_file() and sha256_file(local) != sha


def _where(spec: DatasetSpec, fspec: FileSpec) -> tuple[str, str, Path]:
    return spec.name, fspec.name, resolve(fspec.path or "", project_root())


def fetch_file(
    spec: DatasetSpec,
    fspec: FileSpec,
    settings: DataSettings,
    recorded: dict[str, str],
    opener: Opener,
    progress: _Progress,
) -> str:
    """Fetch one file; return the action taken (``present``, ``path``, ``mirror``,
    ``download``)."""
    directory = settings.raw_dir / spec.name
    dest = directory / fspec.name
    progress.file(fspec.name)
    expected = expected_sha256(fspec, recorded)
    if dest.is_file() and not settings.force:
        if file_ok(dest, fspec, recorded):
            recorded.setdefault(fspec.name, expected or sha256_file(dest))
            if not _local_changed(fspec, recorded[fspec.name]):
                progress.update(dest.stat().st_size)
                return "present"
            log.info("%s/%s: its local file %s changed; copying it again", *_where(spec, fspec))
            expected = None  # the local file is the source of truth (no registry sha256)
        log.warning("%s/%s: present but fails its checksum; re-fetching", spec.name, fspec.name)
        if fspec.sha256:  # known bad: never leave it in place
            dest.unlink()
    if settings.force or (fspec.path and not fspec.sha256):
        expected = fspec.sha256  # re-fetch, or a local file: do not trust an earlier copy

    tried: list[str] = []
    if fspec.path:
        local = resolve(fspec.path, project_root())
        if local.is_file():
            with open(local, "rb") as src:
                recorded[fspec.name] = _copy_verified(
                    spec, fspec, dest, src, str(local), expected, progress
                )
            return "path"
        tried.append(f"local path {local} (not found)")
        if not fspec.mirror and not fspec.urls:  # nothing else to try: the path is wrong
            where = spec.source or "its YAML"
            raise SourceUnavailableError(
                f"local file {local} not found (dataset {spec.name!r}, file {fspec.name!r}, "
                f"path: {fspec.path} in {where}); fix `path:` in {where} (a relative path is "
                f"relative to the project root {project_root()})"
            )
    mirror_path = None
    if fspec.mirror:
        if settings.mirror is None:
            tried.append("mirror (none configured: data.mirror is null)")
        else:
            mirror_path = settings.mirror / fspec.mirror
            if mirror_path.is_file():
                with open(mirror_path, "rb") as src:
                    recorded[fspec.name] = _copy_verified(
                        spec, fspec, dest, src, str(mirror_path), expected, progress
                    )
                return "mirror"
            tried.append(f"mirror {mirror_path} (not found)")
    elif settings.mirror is not None:
        tried.append("mirror (this file has no mirror copy)")

    mismatches: list[ChecksumError] = []
    for url in fspec.urls:
        try:
            with opener(url, settings.timeout) as response:
                sha = _copy_verified(spec, fspec, dest, response, url, expected, progress)
        except ChecksumError as exc:
            mismatches.append(exc)
            tried.append(f"{url} (checksum mismatch)")
            continue
        except NETWORK_ERRORS as exc:
            tried.append(f"{url} ({type(exc).__name__}: {exc})")
            continue
        recorded[fspec.name] = sha
        return "download"
    if mismatches:
        raise mismatches[0]
    remedies = [
        f"connect to the network and re-run `python -m pipeline.fetch datasets={spec.name}`"
    ]
    if fspec.path:
        remedies.insert(0, f"fix `path:` in {spec.source or 'its YAML'}")
    if fspec.mirror:
        where = mirror_path or f"<mirror>/{fspec.mirror}"
        remedies.append(f"put the file in the mirror at {where} (setting data.mirror)")
    check = (
        "verified against the registry sha256" if fspec.sha256 else "sha256 recorded on first use"
    )
    remedies.append(f"copy the file to {dest} yourself ({check})")
    raise SourceUnavailableError(
        f"dataset {spec.name!r}, file {fspec.name!r}: no mirror, no network. Tried: "
        + "; ".join(tried or ["no source listed"])
        + ". Remedy: "
        + ", or ".join(remedies)
        + "."
    )


def fetch_dataset(
    spec: DatasetSpec, settings: DataSettings, opener: Opener | None = None
) -> FetchReport:
    """Fetch every file of ``spec`` into ``settings.raw_dir / spec.name``."""
    opener = opener or urlopen
    directory = settings.raw_dir / spec.name
    make_dir(directory)
    for stale in directory.glob(f".*{TMP_SUFFIX}"):
        if is_stale_temporary(stale):  # left by a killed run, not a live job's
            stale.unlink(missing_ok=True)
    recorded = read_checksums(directory)
    known = {f.name: f.sha256 for f in spec.files}
    recorded = {n: s for n, s in recorded.items() if n in known and (known[n] in (None, s))}
    report = FetchReport(spec.name, directory)
    total = sum(f.bytes or 0 for f in spec.files)
    progress = _Progress(spec.name, total, settings.progress)
    errors: list[tuple[str, DatasetError]] = []
    failing: BaseException | None = None
    try:
        for fspec in spec.files:
            first_use = expected_sha256(fspec, recorded) is None
            try:
                report.actions[fspec.name] = fetch_file(
                    spec, fspec, settings, recorded, opener, progress
                )
            except (ChecksumError, SourceUnavailableError) as exc:
                errors.append((fspec.name, exc))  # go on: a re-run needs only the failed files
                continue
            if first_use and fspec.sha256 is None:
                sha = report.trusted[fspec.name] = recorded[fspec.name]
                log.warning(
                    "%s/%s: no sha256 in the registry; trusting this first copy: sha256 %s "
                    "(recorded in %s; add `sha256: %s` to %s to pin it)",
                    spec.name,
                    fspec.name,
                    sha,
                    directory / CHECKSUMS,
                    sha,
                    spec.source or "its YAML",
                )
    except BaseException as exc:
        failing = exc
        raise
    finally:
        progress.close()
        try:
            if recorded:
                write_checksums(directory, recorded)
            elif not any(directory.iterdir()):
                directory.rmdir()  # nothing fetched: leave no empty directory behind
        except DiskError:
            if failing is None:
                raise
            # the disk refused a data file first: that is the error to report (a re-run
            # verifies the files against the registry and rewrites the record)
    if errors:
        first = errors[0][1]
        if len(errors) > 1:
            others = ", ".join(name for name, _ in errors[1:])
            raise type(first)(f"{first} ({len(errors) - 1} more file(s) failed: {others})")
        raise first
    return report


def run(cfg: Mapping[str, Any] | None = None, *, opener: Opener | None = None) -> list[FetchReport]:
    """Fetch the datasets ``cfg["datasets"]`` selects (default: every mirrored one).

    ``cfg`` is a plain mapping or DictConfig with a ``data`` node (see
    ``conf/data/default.yaml``) and a ``datasets`` selector (names, ``all``, ``mirrored``
    or a task name); ``opener`` replaces the URL opener (tests).
    """
    plain = to_plain(cfg) or {}
    settings = data_settings(plain)
    broken: dict[str, DatasetError] = {}  # broken YAMLs the selection includes
    skipped: dict[str, DatasetError] = {}  # and those it does not
    specs = select(plain.get("datasets", "mirrored"), settings.dataset_dirs, broken, skipped)
    for exc in skipped.values():
        log.warning("warning: %s (not selected: skipped)", exc)
    start = time.perf_counter()
    reports = []
    failures: list[tuple[str, DatasetError]] = list(broken.items())
    for name in broken:
        log.error("fetch %-16s failed", name)
    for spec in specs:
        try:
            report = fetch_dataset(spec, settings, opener=opener)
        except DatasetError as exc:
            failures.append((spec.name, exc))  # go on with the other datasets
            log.error("fetch %-16s failed", spec.name)
            continue
        reports.append(report)
        log.info(
            "fetch %-16s %3d files: %d present, %d mirror, %d local, %d downloaded",
            spec.name,
            len(report.actions),
            report.count("present"),
            report.count("mirror"),
            report.count("path"),
            report.count("download"),
        )
    n_files = sum(len(r.actions) for r in reports)
    log.info(
        "fetched %d dataset(s), %d file(s) into %s in %.1f s",
        len(reports),
        n_files,
        settings.raw_dir,
        time.perf_counter() - start,
    )
    if len(failures) == 1:
        raise failures[0][1]
    if failures:
        for _, exc in failures:
            log.error("error: %s", exc)
        raise DatasetFailures(
            f"{len(failures)} of {len(specs) + len(broken)} dataset(s) failed: "
            f"{', '.join(name for name, _ in failures)} (one line each above); the others "
            "were fetched"
        )
    return reports
