"""Label-ranking text files (Cheng et al. 2009 format, as in akorba/Structured_Approach_...).

A header line ``A1,...,Ad,ranking``, then one sample per line: ``d`` comma-separated
numbers and a ranking of the labels written as letters joined by ``>``, most preferred
first, e.g. ``b>a>c``.  Labels are the letters in alphabetical order (``a`` = 0).

Encoding (the convention of the whole project): ``y[r] = label`` at rank ``r``, rank 0
most preferred, so ``b>a>c`` becomes ``[1, 0, 2]``; ``y`` is an int64 permutation.

Constraints (each violation is a one-line :class:`~pipeline.errors.DataFormatError`
naming the file and its 1-based line): every row has the header's number of fields;
features are finite numbers (no empty field, NaN, inf or text such as ``winter``: one-hot
encode such a column, or drop it with the option ``drop: [name]``); rankings are complete
and strict -- ties (``a>b=c``), empty labels (``a>>c``), unknown, missing or repeated
labels are refused.  The label set is the set of labels that at least half of the rows
use, so that the row at fault is the one blamed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from ...errors import DataFormatError
from ._text import check_drop, read_text, to_float

Part = tuple[np.ndarray, np.ndarray]
#: where a ranking comes from: (file, 1-based line)
Place = tuple[Any, int | None]

_TIE = (
    "ties are not supported: the label-ranking sets (Birkhoff polytope, permutahedron) "
    "need strict rankings; break the tie or remove the row"
)


def _tokens(ranking: str, place: Place) -> list[str]:
    text = ranking.strip()
    if "=" in text:
        raise DataFormatError(f"tie in ranking {text!r}", *place, _TIE)
    tokens = [t.strip() for t in text.split(">")]
    if not text or any(not t for t in tokens):
        raise DataFormatError(
            f"empty label in ranking {text!r}",
            *place,
            "write the labels joined by single '>' (e.g. b>a>c), most preferred first",
        )
    return tokens


def parse_rankings(
    rankings: Sequence[str], source: str = "", places: Sequence[Place] | None = None
) -> tuple[np.ndarray, list[str]]:
    """Strings ``"b>a>c"`` -> int64 array of label indices by rank, and the label names.

    ``places``: the (file, 1-based line) of each ranking, for the error messages
    (default: ``source`` and the 1-based sample number).
    """
    if places is None:
        places = [(source or None, i + 1) for i in range(len(rankings))]
    if not rankings:
        raise DataFormatError(
            "no rankings", source or None, None, "the file needs at least one data row"
        )
    # One Python split per sample: this runs once at load time, not in a training loop.
    tokens = [_tokens(r, p) for r, p in zip(rankings, places, strict=True)]
    counts = Counter(t for row in tokens for t in set(row))
    labels = sorted(t for t, c in counts.items() if 2 * c >= len(tokens))
    k = len(labels)
    index = {lab: i for i, lab in enumerate(labels)}
    shown = ", ".join(labels)
    for row, text, place in zip(tokens, rankings, places, strict=True):
        unknown = [t for t in row if t not in index]
        if unknown:
            raise DataFormatError(
                f"unknown label {unknown[0]!r} in ranking {text.strip()!r}",
                *place,
                f"the other rows rank the {k} labels {shown}: fix the label or remove the row",
            )
        repeated = [t for t, c in Counter(row).items() if c > 1]
        if repeated:
            raise DataFormatError(
                f"ranking {text.strip()!r} repeats label {repeated[0]!r}",
                *place,
                "each label must appear once: fix the ranking or remove the row",
            )
        if len(row) != k:
            missing = [lab for lab in labels if lab not in row]
            raise DataFormatError(
                f"incomplete ranking {text.strip()!r} (misses {', '.join(missing)})",
                *place,
                f"every ranking must order all {k} labels {shown} (partial rankings are "
                "not supported): complete it or remove the row",
            )
    y = np.array([[index[t] for t in row] for row in tokens], dtype=np.int64).reshape(-1, k)
    return y, labels


def _read_one(
    path: Path, drop: Sequence[str] | None = None
) -> tuple[list[str], np.ndarray, list[str], list[Place]]:
    """Header (without the dropped columns), features, rankings and their places."""
    lines = read_text(path).splitlines()
    numbered = [(i + 1, line) for i, line in enumerate(lines) if line.strip()]
    head_row, head = numbered[0]
    header = [h.strip() for h in head.split(",")]
    if header[-1].lower() != "ranking":
        raise DataFormatError(
            f"the header must end with a 'ranking' column, got {header}",
            path,
            head_row,
            "write a header line A1,...,Ad,ranking",
        )
    width = len(header)
    gone = check_drop(drop, header[:-1], path)
    keep = [j for j, name in enumerate(header[:-1]) if name not in gone]
    remedy = (
        "the label_ranking format takes numeric features only: one-hot encode the column, "
        "or drop it with `options: {drop: [%s]}` in the dataset YAML"
    )
    rows, ranks, places = [], [], []
    for lineno, line in numbered[1:]:
        fields = line.split(",")
        if len(fields) != width:
            raise DataFormatError(
                f"{len(fields)} fields, the header has {width}",
                path,
                lineno,
                "each row needs one value per feature and the ranking last (no extra "
                "column, no missing one)",
            )
        rows.append(
            [to_float(fields[j], repr(header[j]), path, lineno, remedy % header[j]) for j in keep]
        )
        ranks.append(fields[-1])
        places.append((path, lineno))
    X = np.array(rows, dtype=np.float64).reshape(len(rows), len(keep))
    return [header[j] for j in keep] + [header[-1]], X, ranks, places


def read(paths: Sequence[Path], drop: Sequence[str] | None = None) -> tuple[list[Part], dict]:
    """Read label-ranking files; all parts share the label alphabet.

    ``drop``: feature columns (header names) to remove, e.g. an identifier.
    """
    feats, ranks, places, headers = [], [], [], []
    for path in paths:
        header, X, r, p = _read_one(path, drop)
        feats.append(X)
        ranks += r
        places += p
        headers.append(header)
    if any(h != headers[0] for h in headers):
        raise DataFormatError(
            f"the files {list(map(str, paths))} have different headers",
            paths[-1],
            1,
            "all parts of a dataset need the same columns",
        )
    y_all, labels = parse_rankings(ranks, ", ".join(map(str, paths)), places)
    parts, start = [], 0
    for X in feats:
        parts.append((X, y_all[start : start + len(X)]))
        start += len(X)
    meta = {"n_classes": len(labels), "label_names": labels, "feature_names": headers[0][:-1]}
    return parts, meta
