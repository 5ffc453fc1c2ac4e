"""Faults of an artifact write to a run's local folder: named in one line, no half file.

MLflow copies an artifact to the run's local artifact directory (a ``file:`` artifact
URI), or to a temporary directory before an upload; a full, read-only or unwritable disk
fails the copy. :func:`disk_fault` makes it the one-line :class:`DiskError` of
:func:`pipeline.fileio.disk_error`; :func:`no_half_file` removes what a failed copy left.
"""

from __future__ import annotations

import contextlib
import errno
import os
from collections.abc import Iterator
from pathlib import Path

from ..errors import DiskError


def disk_fault(exc: BaseException, artifact_dir: Path | None) -> DiskError | None:
    """A disk fault of an artifact write (full, read-only, not writable) as the one-line
    :class:`DiskError` of :func:`pipeline.fileio.disk_error`, naming the path MLflow wrote
    (when it says) or ``artifact_dir`` (the run's local artifact directory, else the
    temporary directory where MLflow writes what it uploads); None for any other error."""
    import tempfile

    from ..fileio import disk_error

    if not isinstance(exc, OSError) or exc.errno is None:
        return None
    if not exc.filename:
        where = artifact_dir or Path(tempfile.gettempdir())
    elif exc.errno in (errno.ENOSPC, errno.EDQUOT):  # the directory, not MLflow's temporary
        where = Path(os.fsdecode(exc.filename)).parent
    else:
        where = Path(os.fsdecode(exc.filename))
    return disk_error(exc, where)


@contextlib.contextmanager
def no_half_file(root: Path | None, artifact_file: str) -> Iterator[None]:
    """Remove ``artifact_file`` from the local artifact directory ``root`` when the block
    that logs it fails after changing it: a half-copied file (an MLflow that copies in
    place, without a temporary: a full disk leaves part of it). A file the failed write
    did not touch (MLflow's atomic copy: the earlier version stays) is kept; nothing to do
    without a local directory (``root`` None)."""
    dest = root / artifact_file if root is not None else None
    before = file_state(dest)
    try:
        yield
    except BaseException:
        if dest is not None and file_state(dest) not in (before, None):
            with contextlib.suppress(OSError):
                dest.unlink()
        raise


def file_state(path: Path | None) -> tuple[int, int, int] | None:
    """(inode, size, mtime in ns) of the file at ``path``, None when there is none."""
    try:
        st = os.stat(path) if path is not None else None
    except OSError:
        return None
    return None if st is None else (st.st_ino, st.st_size, st.st_mtime_ns)


def local_path(uri: str) -> Path | None:
    """The local path of an artifact URI (``file:`` or a plain absolute path), else None.

    Examples
    --------
    >>> local_path("file:///tmp/ml%20artifacts/1/abc/artifacts")
    PosixPath('/tmp/ml artifacts/1/abc/artifacts')
    >>> local_path("mlflow-artifacts:/1/abc/artifacts") is None
    True
    """
    import urllib.parse

    if uri.startswith("file:"):
        return Path(urllib.parse.unquote(urllib.parse.urlparse(uri).path))
    if uri.startswith("/"):
        return Path(uri)
    return None
