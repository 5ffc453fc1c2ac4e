"""Atomic writes and checksums.

Every file the pipeline writes goes first to a temporary file in the destination
directory and is then renamed over the destination with :func:`os.replace` (atomic on
POSIX and Windows within one file system).  An interrupted stage therefore leaves either
the old file or the new one, never half a file; temporaries are named
``.<name>.<pid>.<random>.part`` and are removed on error; :func:`is_stale_temporary`
tells a killed run's leftover from a temporary another live process is writing (several
sweep jobs fetch or verify the same dataset at once).

A disk that refuses a write -- full (ENOSPC, EDQUOT), read-only (EROFS), not ours
(EACCES, EPERM) -- is one :class:`~pipeline.errors.DiskError` naming the path and the free
space left on its file system (and needed, when the writer knows it) or the permission
(:func:`disk_error`), raised by :func:`atomic_path`, :func:`atomic_open` and
:func:`make_dir` after the temporary file is removed; :func:`writing` does the same for
writes that do not go through them (MLflow's artifact copies).
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

from .errors import DiskError

CHUNK = 1 << 20  # 1 MiB
TMP_SUFFIX = ".part"


def _file_mode() -> int:
    """The mode a plain ``open(..., "w")`` would give (mkstemp uses 0600)."""
    mask = os.umask(0)
    os.umask(mask)
    return 0o666 & ~mask


_MODE = _file_mode()


def sha256_file(path: Path) -> str:
    """Hex sha256 of the file at ``path``."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(CHUNK), b""):
            digest.update(block)
    return digest.hexdigest()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's live process
        return True
    return True


def is_stale_temporary(path: Path) -> bool:
    """Whether ``path`` is a temporary of :func:`atomic_path` that no live process of this
    machine is writing: its ``<pid>`` is gone (or it has none, from an older version).

    Examples
    --------
    >>> is_stale_temporary(Path(f".iris.txt.{os.getpid()}.x1y2.part"))
    False
    >>> is_stale_temporary(Path(".iris.txt.abc123.part"))
    True
    """
    name = path.name
    if not (name.startswith(".") and name.endswith(TMP_SUFFIX)):
        return False
    parts = name[: -len(TMP_SUFFIX)].rsplit(".", 2)
    if len(parts) == 3 and parts[1].isdigit():
        return not _alive(int(parts[1]))
    return True


#: the errors of the disk written to (not of the data written): full, over quota,
#: read-only, not writable by this user
DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS, errno.EACCES, errno.EPERM})


def human_bytes(n: float) -> str:
    """``n`` bytes for a person to read (binary units).

    Examples
    --------
    >>> human_bytes(512), human_bytes(12 * 1024), human_bytes(3.5 * 2**30)
    ('512 B', '12.0 KiB', '3.5 GiB')
    """
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    raise AssertionError("unreachable")


def _existing(path: Path) -> Path:
    """``path`` or its nearest ancestor that exists."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    return path


def _mount_point(path: Path) -> Path:
    """The mount point of the file system ``path`` (or its nearest existing ancestor) is on."""
    path = _existing(path)
    while not os.path.ismount(path) and path != path.parent:
        path = path.parent
    return path


def space_left(path: Path) -> tuple[str, Path]:
    """``("<free> free on <mount point>", mount point)`` of the file system ``path`` (or
    its nearest existing ancestor) is on (:func:`shutil.disk_usage`)."""
    mount = _mount_point(Path(path))
    try:
        return (
            f"{human_bytes(shutil.disk_usage(_existing(Path(path))).free)} free on {mount}",
            mount,
        )
    except OSError:
        return f"free space on {mount} unknown", mount


def disk_error(exc: OSError, path: Path, needed: int | None = None) -> DiskError | None:
    """The one-line :class:`DiskError` of ``exc``, raised while writing ``path``: what the
    disk refused, the path, the free space left on its file system (:func:`shutil.disk_usage`,
    and ``needed`` bytes when the writer knows them) or the directory's owner and mode, and
    the remedy; None when ``exc`` is not a fault of the disk (:data:`DISK_ERRNOS`).

    Examples
    --------
    >>> disk_error(OSError(errno.ENOENT, "gone"), Path("x")) is None
    True
    >>> str(disk_error(OSError(errno.EROFS, "Read-only file system"), Path("/x/y")))[:42]
    'read-only file system (writing /x/y, on /)'
    """
    if exc.errno not in DISK_ERRNOS:
        return None
    path = Path(os.path.abspath(path))
    mount = _mount_point(path)
    then = "then re-run (dvc repro resumes where it stopped)"
    if exc.errno in (errno.ENOSPC, errno.EDQUOT):
        what = "no space left on device" if exc.errno == errno.ENOSPC else "disk quota exceeded"
        free, _ = space_left(path)
        if needed:
            free += f", {human_bytes(needed)} needed"
        return DiskError(
            f"{what} (writing {path}: {free}); free some space on {mount} or write the "
            f"outputs elsewhere, {then}"
        )
    if exc.errno == errno.EROFS:
        return DiskError(
            f"read-only file system (writing {path}, on {mount}); remount {mount} read-write "
            f"or write the outputs elsewhere, {then}"
        )
    directory = _existing(path.parent)
    try:
        st = directory.stat()
        mode = f"owner uid {st.st_uid}, mode {stat.filemode(st.st_mode)}"
    except OSError:
        mode = "its owner and mode unknown"
    user = f"this process runs as uid {os.geteuid()}" if hasattr(os, "geteuid") else ""
    what = "permission denied" if exc.errno == errno.EACCES else "operation not permitted"
    return DiskError(
        f"{what} (writing {path}; {directory}: {mode}{'; ' + user if user else ''}); make "
        f"{directory} writable for this user (ls -ld, lsattr: immutable?) or write the "
        f"outputs elsewhere, {then}"
    )


def _written(exc: BaseException, dest: Path, tmp: Path | None = None) -> Path | None:
    """The path a disk fault ``exc`` is about when it is one of writing ``dest`` (through
    its temporary ``tmp``, creating a directory above it, or a file under ``dest`` when it
    is a directory being filled), else None: a full disk is always the written file's; a
    refused path must be one of those (a source file that cannot be read is not a fault of
    the destination)."""
    if not isinstance(exc, OSError) or exc.errno not in DISK_ERRNOS:
        return None
    dest = Path(os.path.abspath(dest))
    if exc.errno in (errno.ENOSPC, errno.EDQUOT) or not exc.filename:
        return dest
    name = Path(os.path.abspath(os.fsdecode(exc.filename)))
    if name == dest or (tmp is not None and name == Path(os.path.abspath(tmp))):
        return dest
    if name.parent == dest.parent and name.name.startswith(f".{dest.name}."):
        return dest  # its temporary, refused when created
    if name in dest.parents or dest in name.parents:
        return name
    return None


@contextlib.contextmanager
def writing(dest: Path, needed: int | None = None) -> Iterator[None]:
    """Turn a disk fault of writing ``dest`` inside the block (:func:`_written`) into the
    one-line :class:`DiskError` of :func:`disk_error`; other errors pass through."""
    try:
        yield
    except OSError as exc:
        where = _written(exc, dest)
        if where is None:
            raise
        error = disk_error(exc, where, needed)
        if error is None:
            raise
        raise error from None


def make_dir(path: Path) -> Path:
    """``mkdir -p path`` (returned), a disk fault a :class:`DiskError` naming the directory
    that cannot be created."""
    path = Path(path)
    with writing(path):
        path.mkdir(parents=True, exist_ok=True)
    return path


@contextlib.contextmanager
def atomic_path(dest: Path, needed: int | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; on success rename it to ``dest``.

    On any exception the temporary file is removed and ``dest`` is left untouched; a disk
    that refuses the write (full, read-only, not writable) is a :class:`DiskError` naming
    ``dest`` (with ``needed``, its size when the writer knows it), raised once the
    temporary file is gone (:func:`disk_error`).
    """
    dest = Path(dest)
    tmp_path: Path | None = None
    try:
        dest.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(
            prefix=f".{dest.name}.{os.getpid()}.", suffix=TMP_SUFFIX, dir=dest.parent
        )
        os.close(fd)
        tmp_path = Path(tmp)
        os.chmod(tmp_path, _MODE)
        yield tmp_path
        os.replace(tmp_path, dest)
    except BaseException as exc:
        if tmp_path is not None:
            with contextlib.suppress(FileNotFoundError):
                tmp_path.unlink()
        where = _written(exc, dest, tmp_path)
        error = disk_error(exc, where, needed) if isinstance(exc, OSError) and where else None
        if error is None:
            raise
        raise error from None


@contextlib.contextmanager
def atomic_open(dest: Path, mode: str = "wb", needed: int | None = None) -> Iterator[IO[Any]]:
    """Open a temporary file next to ``dest`` for writing; rename it on success (see
    :func:`atomic_path`: ``needed``, the disk faults)."""
    with atomic_path(dest, needed) as tmp, open(tmp, mode) as f:
        yield f
        f.flush()
        os.fsync(f.fileno())


def write_text(dest: Path, text: str) -> None:
    """Atomically write ``text`` (UTF-8) to ``dest``."""
    with atomic_open(dest, "w") as f:
        f.write(text)


def write_json(dest: Path, obj: Any) -> None:
    """Atomically write ``obj`` as indented JSON to ``dest``."""
    write_text(dest, json.dumps(obj, indent=2, sort_keys=False) + "\n")


def copy_stream(
    src: IO[bytes],
    dst: IO[bytes],
    update: Callable[[int], object] | None = None,
) -> tuple[str, int]:
    """Copy ``src`` to ``dst`` by chunks; return ``(sha256 hex, number of bytes)``."""
    digest = hashlib.sha256()
    n = 0
    for block in iter(lambda: src.read(CHUNK), b""):
        dst.write(block)
        digest.update(block)
        n += len(block)
        if update is not None:
            update(len(block))
    return digest.hexdigest(), n
