"""MULAN multi-label ARFF files (dense or sparse), parsed with liac-arff.

A MULAN data set is a Weka ARFF file whose label attributes are binary ``{0,1}``
attributes (the last L by convention), plus an XML file listing the label names.  Sparse
ARFF rows ``{index value, ...}`` use 0-based attribute indices; absent attributes are 0,
which for a nominal attribute means its first category.

Features: numeric attributes are kept; nominal attributes are one-hot encoded
(:class:`sklearn.preprocessing.OneHotEncoder`), except binary ones, kept as a single 0/1
column (the indicator of the second category, or of ``1`` for ``{1,0}``: scikit-learn's
``drop="if_binary"`` convention), so sparse binary word features stay sparse.  Column
order: kept attributes, flipped ``{1,0}`` ones, then the one-hot blocks (``name=value``).
Birds thus has 258 numeric + 1 (``hasSegments``) + 12 (``location``) = 271 columns
from its 260 feature attributes.
Labels: a dense 0/1 ``int8`` indicator matrix, columns in the order of the label list.

Option ``drop: [name, ...]``: feature attributes removed before encoding (e.g. an
identifier that would one-hot encode into hundreds of columns).  Refused with a one-line
:class:`~pipeline.errors.DataFormatError`: empty or binary files, invalid ARFF (liac-arff's
message names the line), missing (``?``) or infinite values.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import arff
import numpy as np
import scipy.sparse as sp
from sklearn.preprocessing import OneHotEncoder

from ...errors import DataFormatError
from ._text import NOT_FINITE, check_drop, read_text

Part = tuple[np.ndarray | sp.csr_matrix, np.ndarray]
_NUMERIC = {"NUMERIC", "REAL", "INTEGER"}


def label_names_from_xml(path: Path) -> list[str]:
    """Label names listed in a MULAN XML file (``<label name="...">``, any nesting)."""
    root = ET.parse(path).getroot()
    names = [el.attrib["name"] for el in root.iter() if el.tag.split("}")[-1] == "label"]
    if not names:
        raise ValueError(f"{path}: no <label name=...> element")
    return names


def _load_arff(path: Path) -> tuple[dict[str, Any], list[int], bool]:
    """liac-arff decode of ``path``: (decoded, 1-based line of each instance, sparse?)."""
    text = read_text(path)
    # Count the data lines (sparse COO output does not report empty trailing rows).
    lines = text.splitlines()
    start = next(
        (i for i, line in enumerate(lines) if line.strip().lower().startswith("@data")), None
    )
    if start is None:
        raise DataFormatError("no @data section", path, None, "this is not an ARFF file")
    numbers = [
        i + 1
        for i in range(start + 1, len(lines))
        if lines[i].strip() and not lines[i].strip().startswith("%")
    ]
    sparse = bool(numbers) and lines[numbers[0] - 1].strip().startswith("{")
    kind = arff.COO if sparse else arff.DENSE
    try:
        decoded = arff.loads(text, encode_nominal=True, return_type=kind)
    except arff.ArffException as exc:
        found = re.search(r"line (\d+)", str(exc))
        raise DataFormatError(
            f"invalid ARFF: {exc}",
            path,
            int(found.group(1)) if found else None,
            "fix the line it names (see the ARFF format)",
        ) from None
    return decoded, numbers, sparse


def _as_matrix(decoded: dict[str, Any], numbers: list[int], sparse: bool, path: Path) -> Any:
    n_attr = len(decoded["attributes"])
    n = len(numbers)
    if sparse:
        values, rows, cols = decoded["data"]
        vals = np.array([np.nan if v is None else v for v in values], dtype=np.float64)
        bad = np.flatnonzero(~np.isfinite(vals))
        if bad.size:
            what = "missing value '?'" if values[bad[0]] is None else "infinite value"
            raise DataFormatError(what, path, numbers[int(rows[bad[0]])], NOT_FINITE)
        return sp.csr_matrix((vals, (np.asarray(rows), np.asarray(cols))), shape=(n, n_attr))
    A = np.array(decoded["data"], dtype=np.float64).reshape(-1, n_attr)
    bad = np.argwhere(~np.isfinite(A))
    if bad.size:
        r, c = bad[0]
        what = "missing value '?'" if np.isnan(A[r, c]) else "infinite value"
        raise DataFormatError(
            f"{what} in attribute {decoded['attributes'][c][0]!r}", path, numbers[r], NOT_FINITE
        )
    return A


def read(
    paths: Sequence[Path],
    labels_xml: Path | None = None,
    n_labels: int | None = None,
    drop: Sequence[str] | None = None,
) -> tuple[list[Part], dict[str, Any]]:
    """Read MULAN ARFF files sharing one header; labels from ``labels_xml`` or the last
    ``n_labels`` attributes; the feature attributes ``drop`` names are removed."""
    decoded = [_load_arff(p) for p in paths]
    attributes = [(name, typ) for name, typ in decoded[0][0]["attributes"]]
    for (d, _, _), p in zip(decoded[1:], paths[1:], strict=True):
        if [tuple(a) for a in d["attributes"]] != [tuple(a) for a in attributes]:
            raise ValueError(f"{p}: its attributes differ from those of {paths[0]}")
    # liac-arff keeps the backslash escapes of quoted names ('Swainson\\'s Thrush').
    names = [re.sub(r"\\(.)", r"\1", a[0]) for a in attributes]
    if labels_xml is not None:
        label_names = label_names_from_xml(labels_xml)
        missing = [lab for lab in label_names if lab not in names]
        if missing:
            raise ValueError(f"{paths[0]}: label attribute(s) {missing[:5]} not in the header")
        label_idx = [names.index(lab) for lab in label_names]
    elif n_labels is not None:
        label_idx = list(range(len(names) - n_labels, len(names)))
        label_names = names[-n_labels:]
    else:
        raise ValueError("mulan_arff needs the option labels_xml or n_labels")
    label_set = set(label_idx)
    gone = check_drop(drop, [n for j, n in enumerate(names) if j not in label_set], paths[0])

    positive = []  # code of the category "1" of each label attribute
    for j in label_idx:
        cats = attributes[j][1]
        if not isinstance(cats, list) or sorted(cats) != ["0", "1"]:
            raise ValueError(f"label attribute {names[j]!r} must be nominal {{0,1}}, got {cats}")
        positive.append(cats.index("1"))

    # keep: numeric, and binary nominal whose code 1 is the positive category
    # flip: binary {1,0} (code 0 is "1": column = 1 - code); encode: k > 2 categories
    keep, flip, encode, encode_cats = [], [], [], []
    for j, (_, typ) in enumerate(attributes):
        if j in label_set or names[j] in gone:
            continue
        if isinstance(typ, str) and typ.upper() in _NUMERIC:
            keep.append(j)
        elif isinstance(typ, list) and len(typ) == 2:
            (flip if typ == ["1", "0"] else keep).append(j)
        elif isinstance(typ, list):
            encode.append(j)
            encode_cats.append(list(range(len(typ))))
        else:
            raise ValueError(f"attribute {names[j]!r} has unsupported type {typ!r}")

    encoder = None
    if encode:
        encoder = OneHotEncoder(categories=encode_cats, dtype=np.float64, handle_unknown="error")
        encoder.fit(np.array([[c[0] for c in encode_cats]]))
    feature_names = [names[j] for j in keep] + [names[j] for j in flip]
    if encoder is not None:
        feature_names += [
            f"{names[j]}={attributes[j][1][c]}"
            for j, cats in zip(encode, encode_cats, strict=True)
            for c in cats
        ]

    parts: list[Part] = []
    any_sparse = False
    for (dec, n, sparse), path in zip(decoded, paths, strict=True):
        A = _as_matrix(dec, n, sparse, path)
        any_sparse |= sparse
        L = A[:, label_idx]
        L = L.toarray() if sp.issparse(L) else L
        Y = (L == np.asarray(positive)).astype(np.int8)
        blocks = [A[:, keep]]
        if flip:
            F = A[:, flip]
            blocks.append(1.0 - (F.toarray() if sp.issparse(F) else F))
        if encoder is not None:
            E = A[:, encode]
            E = E.toarray() if sp.issparse(E) else E
            onehot = encoder.transform(E.astype(np.int64))
            blocks.append(onehot)
        if sparse:
            X = sp.hstack([sp.csr_matrix(b) for b in blocks], format="csr")
        else:
            X = np.hstack([b.toarray() if sp.issparse(b) else b for b in blocks])
        parts.append((X, Y))
    if any_sparse:  # mixed dense/sparse files: make every part sparse
        parts = [(sp.csr_matrix(X), Y) for X, Y in parts]
    meta = {
        "n_classes": len(label_idx),
        "label_names": label_names,
        "feature_names": feature_names,
        "n_attributes": len(attributes) - len(label_idx) - len(gone),
    }
    return parts, meta
