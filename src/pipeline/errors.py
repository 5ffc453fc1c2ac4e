"""The pipeline's one error tree: every error it raises on purpose, each message naming
the problem, the place (dataset, file, 1-based row; config key; tracking URI) and a remedy.

::

    PipelineError                 caught by every command (pipeline.errors.report)
    |-- ConfigError               a setting of the run config: bad type or value, unknown key
    |-- CompositionError          a composition or experiment that makes no sense
    |-- DataError (DatasetError)  a dataset, its files or the prepared data
    |   |-- UnknownDatasetError, RegistryError, ChecksumError,
    |   |-- SourceUnavailableError, MissingRawDataError,
    |   `-- DataFormatError, DataSettingError, PreparedDataError, DatasetFailures
    |-- TrackingError             the MLflow tracking store cannot be used
    `-- DiskError                 a file cannot be written: disk full, read-only, no permission

Every command (``python -m pipeline.train|fetch|preprocess|stage|report``) catches
:class:`PipelineError` in one place (:func:`report`) and prints it as one line
``error: <message>`` on stderr, exit status 1; ``PROJLOSS_DEBUG=1`` (or Hydra's
``HYDRA_FULL_ERROR=1``) shows the traceback instead. The configuration errors are also
``ValueError`` (as before the tree existed), the tracking ones ``RuntimeError``.
"""

from __future__ import annotations

import os
import sys

#: environment switches that show tracebacks instead of one-line errors
DEBUG_ENV = ("PROJLOSS_DEBUG", "HYDRA_FULL_ERROR")
#: exit status of a command that failed on purpose (bad input, unusable store ...)
EXIT_ERROR = 1
#: exit status of a run stopped by SIGINT (Ctrl-C) / SIGTERM (128 + signal number)
EXIT_SIGINT = 130
EXIT_SIGTERM = 143


class PipelineError(Exception):
    """Base class of every error the pipeline raises on purpose."""


class ConfigError(PipelineError, ValueError):
    """A run setting with a bad type or value, or an unknown key (names key and valid ones)."""


class CompositionError(PipelineError, ValueError):
    """A composition that makes no sense; the message lists the valid choices."""


class DataError(PipelineError):
    """Base class of the errors the data stages raise on purpose."""


#: the historical name of :class:`DataError` (same class)
DatasetError = DataError


class TrackingError(PipelineError, RuntimeError):
    """The tracking store cannot be used (unreachable, not MLflow, read-only, no driver...)."""


class DiskError(PipelineError):
    """A file the pipeline writes that the disk refuses: no space left (ENOSPC) or quota
    exceeded (EDQUOT), a read-only file system (EROFS), no permission (EACCES, EPERM).

    Raised by :mod:`pipeline.fileio` (every atomic write and directory the pipeline
    creates) and by the MLflow artifact writes of
    :class:`pipeline.runs.mlflow_tracker.MLflowTracker`; the message names the path, the free
    space left on its file system (and needed, when known) or the permission, and the
    remedy (:func:`pipeline.fileio.disk_error`). Nothing is left half-written: the
    temporary file is removed, the destination untouched. Not an ``OSError``: the code that
    takes an ``OSError`` for a network failure (the fetch stage's downloads) must not try
    the next URL on a full disk.
    """


class UnknownDatasetError(DatasetError, ValueError):
    """A dataset name that no registry YAML defines."""


class RegistryError(DatasetError, ValueError):
    """A dataset YAML that is malformed (missing key, wrong type, unknown format...)."""


class ChecksumError(DatasetError):
    """A file whose sha256 or size differs from the registry's."""


class SourceUnavailableError(DatasetError):
    """No mirror copy and no reachable URL ("no mirror, no network")."""


class MissingRawDataError(DatasetError):
    """Preprocessing asked for raw files that were never fetched."""


class DataFormatError(DatasetError, ValueError):
    """A raw file the reader refuses: what is wrong, where, and what to do.

    The message is one line, ``<problem> (dataset 'x', file <path>, row <n>); <remedy>``,
    ``row`` being the 1-based line number in the file (as an editor shows it).  The reader
    raises it without the dataset name; :func:`pipeline.data.readers.load_raw` adds it.

    >>> str(DataFormatError("empty field in column 'A2'", "x.txt", 4, "fill it in", "x"))
    "empty field in column 'A2' (dataset 'x', file x.txt, row 4); fill it in"
    """

    def __init__(
        self,
        problem: str,
        file: object = None,
        row: int | None = None,
        remedy: str = "",
        dataset: str | None = None,
    ) -> None:
        super().__init__(problem, file, row, remedy, dataset)  # args: picklable
        self.problem, self.file, self.row = problem, file, row
        self.remedy, self.dataset = remedy, dataset

    def with_dataset(self, dataset: str) -> DataFormatError:
        """The same error with the dataset named."""
        return type(self)(self.problem, self.file, self.row, self.remedy, dataset)

    def __str__(self) -> str:
        place = []
        if self.dataset is not None:
            place.append(f"dataset {self.dataset!r}")
        if self.file is not None:
            place.append(f"file {self.file}")
        if self.row is not None:
            place.append(f"row {self.row}")
        text = self.problem + (f" ({', '.join(place)})" if place else "")
        return text + (f"; {self.remedy}" if self.remedy else "")


class DataSettingError(DatasetError, ValueError):
    """A data setting out of its valid range for a dataset (e.g. ``data.ordinal_split``)."""


class PreparedDataError(DatasetError, FileNotFoundError):
    """A prepared variant that is missing, stale or corrupted and may not be rebuilt here."""


class DatasetFailures(DatasetError):
    """Several datasets failed in one stage run (each one was reported on its own line)."""


#: set by :func:`pipeline._hydra.entry` with the ``HYDRA_FULL_ERROR`` it sets itself (to
#: catch Hydra's errors): that one is not the user's debug switch
ENTRY_ENV = "PROJLOSS_HYDRA_RAISES"


def debug() -> bool:
    """Whether a debug switch (:data:`DEBUG_ENV`) asks for tracebacks."""
    keys = DEBUG_ENV
    if os.environ.get(ENTRY_ENV):
        keys = tuple(k for k in DEBUG_ENV if k != "HYDRA_FULL_ERROR")
    return any(os.environ.get(k, "").strip().lower() in ("1", "true", "yes") for k in keys)


def pipeline_cause(exc: BaseException) -> PipelineError | None:
    """The :class:`PipelineError` behind ``exc`` (itself, or its ``__cause__`` /
    ``__context__`` chain), else None: e.g. a registry error raised by an OmegaConf
    resolver, which OmegaConf wraps in its ``InterpolationResolutionError``."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        if isinstance(current, PipelineError):
            return current
        seen.add(id(current))
        current = current.__cause__ or current.__context__
    return None


def one_line(exc: BaseException) -> str:
    """``error: <message>`` on one line (newlines of the message folded)."""
    text = " ".join(str(exc).split()) or type(exc).__name__
    return f"error: {text}"


def report(exc: BaseException) -> None:
    """Print ``exc`` as the one-line ``error:`` on stderr (flushed)."""
    print(one_line(exc), file=sys.stderr, flush=True)
