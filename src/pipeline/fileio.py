"""Atomic writes and checksums.

Every file the pipeline writes goes first to a temporary file in the destination
directory and is then renamed over the destination with :func:`os.replace` (atomic on
POSIX and Windows within one file system).  An interrupted stage therefore leaves either
the old file or the new one, never half a file; temporaries are named
``.<name>.<pid>.<random>.part`` and are removed on error; :func:`is_stale_temporary`
tells a killed run's leftover from a temporary another live process is writing (several
sweep jobs fetch or verify the same dataset at once).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import IO, Any

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


@contextlib.contextmanager
def atomic_path(dest: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; on success rename it to ``dest``.

    On any exception the temporary file is removed and ``dest`` is left untouched.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{dest.name}.{os.getpid()}.", suffix=TMP_SUFFIX, dir=dest.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        os.chmod(tmp_path, _MODE)
        yield tmp_path
        os.replace(tmp_path, dest)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            tmp_path.unlink()
        raise


@contextlib.contextmanager
def atomic_open(dest: Path, mode: str = "wb") -> Iterator[IO[Any]]:
    """Open a temporary file next to ``dest`` for writing; rename it on success."""
    with atomic_path(dest) as tmp, open(tmp, mode) as f:
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
