"""Checks shared by the text readers: a text file, numbers that are finite, names dropped.

Every check raises :class:`~pipeline.errors.DataFormatError` naming the file and the
1-based line (as an editor shows it) and saying what to do; nothing is written by the
readers, so a refused file leaves ``data/prepared/`` untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path

from ...errors import DataFormatError

#: the remedy of a NaN/inf value
NOT_FINITE = "missing or infinite values are not supported: fill the value in, or remove the row"


def read_text(path: Path) -> str:
    """The UTF-8 text of ``path``; refuses empty, binary and non-UTF-8 files."""
    data = Path(path).read_bytes()
    if not data.strip():
        raise DataFormatError(
            "empty file", path, None, "the file has no data: fetch it again or fix its source"
        )
    nul = data.find(b"\x00")
    if nul >= 0:
        row = data.count(b"\n", 0, nul) + 1
        raise DataFormatError(
            f"binary file (NUL byte at offset {nul}), not a text file",
            path,
            row,
            "give the dataset's text file (decompress it, or check its source)",
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        row = data.count(b"\n", 0, exc.start) + 1
        raise DataFormatError(
            f"not UTF-8 text (byte {data[exc.start]:#04x} at offset {exc.start})",
            path,
            row,
            "save the file as UTF-8 text",
        ) from None


def to_float(token: str, column: str, path: Path, row: int, remedy: str) -> float:
    """``float(token)``, refusing empty, non-numeric and non-finite values."""
    text = token.strip()
    if not text:
        raise DataFormatError(
            f"empty field in column {column}", path, row, "fill the value in, or remove the row"
        )
    try:
        value = float(text)
    except ValueError:
        raise DataFormatError(
            f"non-numeric value {text!r} in column {column}", path, row, remedy
        ) from None
    if not math.isfinite(value):
        raise DataFormatError(f"value {text!r} in column {column}", path, row, NOT_FINITE)
    return value


def check_drop(drop: Sequence[str] | None, names: Sequence[str], path: Path) -> set[str]:
    """Validate the reader option ``drop`` against the attribute ``names``."""
    if drop is None:
        return set()
    if isinstance(drop, str) or not all(isinstance(d, str) for d in drop):
        raise DataFormatError(
            f"option drop must be a list of attribute names, got {drop!r}",
            path,
            None,
            "write `options: {drop: [name, ...]}` in the dataset YAML",
        )
    unknown = [d for d in drop if d not in names]
    if unknown:
        shown = ", ".join(names[:20]) + (", ..." if len(names) > 20 else "")
        raise DataFormatError(
            f"option drop names unknown attribute(s) {unknown}",
            path,
            None,
            f"use names of the file's attributes: {shown}",
        )
    return set(drop)
