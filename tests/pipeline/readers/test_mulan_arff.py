"""MULAN ARFF reader on files written by the test: dense vs sparse, nominal encoding."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.data.readers.mulan_arff import label_names_from_xml, read

HEADER = """@relation toy
@attribute f1 numeric
@attribute 'it\\'s' {0,1}
@attribute color {red,green,blue}
@attribute flag {1,0}
@attribute 'lab A' {0,1}
@attribute labB {0,1}
@data
"""
ROWS = [  # f1, it's, color, flag, labA, labB
    (1.5, "1", "blue", "1", "1", "0"),
    (0.0, "0", "red", "0", "0", "0"),
    (-2.0, "0", "green", "1", "1", "1"),
]
XML = """<?xml version="1.0" encoding="utf-8"?>
<labels xmlns="http://mulan.sourceforge.net/labels">
<label name="lab A"></label>
<label name="labB"></label>
</labels>
"""
ATTRS = ["f1", "it's", "color", "flag", "lab A", "labB"]
CATS = {1: ["0", "1"], 2: ["red", "green", "blue"], 3: ["1", "0"], 4: ["0", "1"], 5: ["0", "1"]}


def _expected() -> tuple[np.ndarray, np.ndarray]:
    """Independent encoding: numeric, {0,1} -> indicator of 1, color one-hot, {1,0} too."""
    X = np.array(
        [
            [r[0], float(r[1] == "1"), float(r[3] == "1")]
            + [float(r[2] == c) for c in ("red", "green", "blue")]
            for r in ROWS
        ]
    )
    Y = np.array([[int(r[4]), int(r[5])] for r in ROWS])
    return X, Y


def _dense(path: Path) -> None:
    body = "\n".join(",".join(str(v) for v in r) for r in ROWS)
    path.write_text(HEADER + body + "\n")


def _sparse(path: Path) -> None:
    lines = []
    for r in ROWS:
        cells = []
        for j, v in enumerate(r):
            # a sparse ARFF omits zeros / first categories
            if j == 0 and v != 0.0:
                cells.append(f"{j} {v}")
            elif j > 0 and CATS[j].index(v) != 0:
                cells.append(f"{j} {v}")
        lines.append("{" + ",".join(cells) + "}")
    path.write_text(HEADER + "\n".join(lines) + "\n")


def test_label_names_from_xml(tmp_path: Path) -> None:
    (tmp_path / "l.xml").write_text(XML)
    assert label_names_from_xml(tmp_path / "l.xml") == ["lab A", "labB"]


def test_dense_encoding(tmp_path: Path) -> None:
    _dense(tmp_path / "d.arff")
    (tmp_path / "l.xml").write_text(XML)
    parts, meta = read([tmp_path / "d.arff"], labels_xml=tmp_path / "l.xml")
    X, Y = _expected()
    got_X, got_Y = parts[0]
    assert not sp.issparse(got_X)
    # columns: kept ones in attribute order, then one-hot blocks
    assert meta["feature_names"][:2] == ["f1", "it's"]
    order = [meta["feature_names"].index(n) for n in ["f1", "it's"]]
    np.testing.assert_array_equal(got_X[:, order], X[:, :2])
    flag = [i for i, n in enumerate(meta["feature_names"]) if n.startswith("flag")]
    assert len(flag) == 1  # binary: one column
    np.testing.assert_array_equal(got_X[:, flag[0]], X[:, 2])
    colors = [meta["feature_names"].index(f"color={c}") for c in ("red", "green", "blue")]
    np.testing.assert_array_equal(got_X[:, colors], X[:, 3:])
    np.testing.assert_array_equal(got_Y, Y)
    assert got_Y.dtype == np.int8
    assert meta["n_attributes"] == 4 and meta["n_classes"] == 2


def test_sparse_equals_dense(tmp_path: Path) -> None:
    _dense(tmp_path / "d.arff")
    _sparse(tmp_path / "s.arff")
    dense, _ = read([tmp_path / "d.arff"], n_labels=2)
    sparse, _ = read([tmp_path / "s.arff"], n_labels=2)
    assert sp.issparse(sparse[0][0])
    np.testing.assert_array_equal(sparse[0][0].toarray(), dense[0][0])
    np.testing.assert_array_equal(sparse[0][1], dense[0][1])


def test_header_mismatch(tmp_path: Path) -> None:
    _dense(tmp_path / "a.arff")
    (tmp_path / "b.arff").write_text(HEADER.replace("f1", "g1") + "1,0,red,0,0,0\n")
    with pytest.raises(ValueError, match="attributes differ"):
        read([tmp_path / "a.arff", tmp_path / "b.arff"], n_labels=2)


def test_missing_values_rejected(tmp_path: Path) -> None:
    (tmp_path / "m.arff").write_text(HEADER + "?,0,red,0,0,0\n")
    with pytest.raises(ValueError, match="missing"):
        read([tmp_path / "m.arff"], n_labels=2)


def test_unknown_label(tmp_path: Path) -> None:
    _dense(tmp_path / "d.arff")
    (tmp_path / "l.xml").write_text(XML.replace("labB", "labZ"))
    with pytest.raises(ValueError, match="labZ"):
        read([tmp_path / "d.arff"], labels_xml=tmp_path / "l.xml")
