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
