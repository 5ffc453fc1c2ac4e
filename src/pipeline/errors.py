"""Errors of the data pipeline: each message names the dataset, the file and a remedy."""

from __future__ import annotations


class DatasetError(Exception):
    """Base class of the errors the data stages raise on purpose."""


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
    raises it without the dataset name; :func:`pipeline.readers.load_raw` adds it.

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
