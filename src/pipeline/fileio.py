"""Atomic writes and checksums.

Every file the pipeline writes goes first to a temporary file in the destination
directory and is then renamed over the destination with :func:`os.replace` (atomic on
POSIX and Windows within one file system).  An interrupted stage therefore leaves either
the old file or the new one, never half a file; stray temporaries are named
``.<name>.<random>.part`` and are removed on error.
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


@contextlib.contextmanager
def atomic_path(dest: Path) -> Iterator[Path]:
    """Yield a temporary path next to ``dest``; on success rename it to ``dest``.

    On any exception the temporary file is removed and ``dest`` is left untouched.
    """
    dest = Path(dest)
    dest.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{dest.name}.", suffix=TMP_SUFFIX, dir=dest.parent)
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
