"""LIBSVM multi-label reader on files written by the test (plain and bz2)."""

from __future__ import annotations

import bz2
from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.data.readers.libsvm import read
from pipeline.errors import DataFormatError

TRAIN = "0,2 1:0.5 3:-1\n1 2:2.5\n 1:1 4:3\n2 4:0.25\n"  # third line: no labels
TEST = "0 1:1\n"


def _expected() -> tuple[np.ndarray, np.ndarray]:
    X = np.zeros((4, 4))
    X[0, [0, 2]] = [0.5, -1]
    X[1, 1] = 2.5
    X[2, [0, 3]] = [1, 3]
    X[3, 3] = 0.25
    Y = np.array([[1, 0, 1], [0, 1, 0], [0, 0, 0], [0, 0, 1]])
    return X, Y


@pytest.mark.parametrize("compress", [False, True])
def test_read_multilabel(tmp_path: Path, compress: bool) -> None:
    if compress:
        (tmp_path / "tr.bz2").write_bytes(bz2.compress(TRAIN.encode()))
        (tmp_path / "te.bz2").write_bytes(bz2.compress(TEST.encode()))
        paths = [tmp_path / "tr.bz2", tmp_path / "te.bz2"]
    else:
        (tmp_path / "tr.svm").write_text(TRAIN)
        (tmp_path / "te.svm").write_text(TEST)
        paths = [tmp_path / "tr.svm", tmp_path / "te.svm"]
    parts, meta = read(paths, n_labels=3)
    X, Y = _expected()
    assert sp.issparse(parts[0][0])
    np.testing.assert_array_equal(parts[0][0].toarray(), X)
    np.testing.assert_array_equal(parts[0][1], Y)
    # the test part shares the feature count (4) although it only uses feature 1
    assert parts[1][0].shape == (1, 4)
    np.testing.assert_array_equal(parts[1][1], [[1, 0, 0]])
    assert meta["n_classes"] == 3


def test_read_infers_labels_and_honours_n_features(tmp_path: Path) -> None:
    (tmp_path / "a.svm").write_text(TRAIN)
    parts, meta = read([tmp_path / "a.svm"], n_features=10)
    assert meta["n_classes"] == 3
    assert parts[0][0].shape == (4, 10)


def test_read_rejects_too_many_labels(tmp_path: Path) -> None:
    (tmp_path / "a.svm").write_text(TRAIN)
    with pytest.raises(ValueError, match="n_labels"):
        read([tmp_path / "a.svm"], n_labels=2)


def test_read_label_base(tmp_path: Path) -> None:
    (tmp_path / "a.svm").write_text("1,3 1:1\n2 1:2\n")
    parts, _ = read([tmp_path / "a.svm"], label_base=1)
    np.testing.assert_array_equal(parts[0][1], [[1, 0, 1], [0, 1, 0]])


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("1 1:0.5 x:2", "malformed LIBSVM data"),  # not an index
        ("1 3:1 2:1", "malformed LIBSVM data"),  # indices not increasing
        ("1 0:1", "malformed LIBSVM data"),  # 1-based indices
        ("1.5 1:1", "non-integer label"),
    ],
)
def test_bad_line_is_named_by_its_row(tmp_path: Path, line: str, problem: str, compress) -> None:
    """The file and the 1-based line of the first bad line (a comment line counts)."""
    text = "# a comment\n" + TRAIN.replace("1 2:2.5\n", line + "\n")  # the third line
    if compress:
        path = tmp_path / "a.bz2"
        path.write_bytes(bz2.compress(text.encode()))
    else:
        path = tmp_path / "a.svm"
        path.write_text(text)
    (tmp_path / "te.svm").write_text(TEST)  # a good file first: the bad one is named
    with pytest.raises(DataFormatError, match=problem) as info:
        read([tmp_path / "te.svm", path])
    assert info.value.file == path
    if compress and problem == "non-integer label":
        assert info.value.row is None  # a sample's line is not counted in archives
    else:
        assert info.value.row == 3, str(info.value)
    assert str(info.value).count("\n") == 0 and "; " in str(info.value)


@pytest.mark.parametrize(
    ("options", "match", "row"),
    [({"n_labels": 2}, "label id 2 but n_labels = 2", 1), ({"label_base": 1}, "label id 0", 1)],
)
def test_label_ids_out_of_range_name_the_row(tmp_path: Path, options, match, row) -> None:
    (tmp_path / "a.svm").write_text(TRAIN)
    with pytest.raises(DataFormatError, match=match) as info:
        read([tmp_path / "a.svm"], **options)
    assert info.value.row == row and "options." in info.value.remedy
