"""The data: from the registry of datasets to the prepared splits.

- :mod:`.settings`: the data settings (``conf/data/``), taken by every module here;
- :mod:`.registry`: ``conf/dataset/<name>.yaml`` (the only reader of those files);
- :mod:`.readers`: one parser per raw file format;
- :mod:`.fetch`: copy or download the raw files, verify their sha256 (``data/raw/``);
- :mod:`.protocol`: the paper's splits and standardization;
- :mod:`.prepare`: raw files -> prepared variants (``data/prepared/``), with
  :mod:`.storage` (the files of a variant) and :mod:`.stats` (the dataset table);
- :mod:`.api`: :func:`load_prepared`, the Python API of the training stages and users;
- :mod:`.resplit`: a variant split anew in memory (another seed).

``from pipeline.data import load_prepared`` works without importing the whole package
eagerly (the registry is imported by every command; the API is not).
"""

from __future__ import annotations

from typing import Any

__all__ = ["PreparedData", "load_prepared"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
