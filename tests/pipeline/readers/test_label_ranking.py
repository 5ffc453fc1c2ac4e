"""Label-ranking text reader on files written by the test."""

from __future__ import annotations

import itertools
from pathlib import Path

import numpy as np
import pytest

from pipeline.data.readers.label_ranking import parse_rankings, read


def test_parse_rankings_convention() -> None:
    y, labels = parse_rankings(["b>a>c", "a>b>c", "c>b>a"])
    assert labels == ["a", "b", "c"]
    # y[rank] = label: "b>a>c" puts label b (1) at rank 0
    np.testing.assert_array_equal(y, [[1, 0, 2], [0, 1, 2], [2, 1, 0]])
    assert y.dtype == np.int64


def test_parse_rankings_all_permutations_roundtrip() -> None:
    letters = "abcd"
    perms = list(itertools.permutations(range(4)))
    strings = [">".join(letters[i] for i in p) for p in perms]
    y, _ = parse_rankings(strings)
    np.testing.assert_array_equal(y, np.array(perms))


@pytest.mark.parametrize(
    ("rankings", "message"),
    [(["a>b>c", "a>b"], "incomplete"), (["a>b>c", "a>a>b"], "repeats"), ([], "no rankings")],
)
def test_parse_rankings_errors(rankings: list[str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        parse_rankings(rankings)


def test_read_file(tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(7, 3))
    perms = [rng.permutation(5) for _ in range(7)]
    lines = ["A1,A2,A3,ranking"]
    for x, p in zip(X, perms, strict=True):
        lines.append(",".join(f"{v:.17g}" for v in x) + "," + ">".join("abcde"[i] for i in p))
    path = tmp_path / "toy.txt"
    path.write_text("\n".join(lines) + "\n")
    (parts, meta) = read([path])
    (Xr, yr) = parts[0]
    np.testing.assert_array_equal(Xr, X)
    np.testing.assert_array_equal(yr, np.array(perms))
    assert meta["n_classes"] == 5


def test_read_rejects_bad_header(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_text("A1,A2,label\n1,2,a>b\n")
    with pytest.raises(ValueError, match="ranking"):
        read([path])
