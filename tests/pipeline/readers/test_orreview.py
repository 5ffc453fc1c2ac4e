"""orreview matlab-format reader on files written by the test."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from pipeline.data.readers.orreview import read


def _write(path: Path, X: np.ndarray, y: np.ndarray) -> None:
    np.savetxt(path, np.column_stack([X, y]), fmt="%.17g", delimiter=" ")


def test_read_train_test(tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    Xa, Xb = rng.normal(size=(9, 4)), rng.normal(size=(3, 4))
    ya, yb = rng.integers(1, 4, size=9), np.array([1, 5, 2])
    _write(tmp_path / "tr", Xa, ya)
    _write(tmp_path / "te", Xb, yb)
    parts, meta = read([tmp_path / "tr", tmp_path / "te"])
    np.testing.assert_array_equal(parts[0][0], Xa)
    np.testing.assert_array_equal(parts[1][1], yb)
    assert parts[0][1].dtype == np.int64
    assert meta["n_classes"] == 5  # the largest class over both parts


def test_read_single_row(tmp_path: Path) -> None:
    (tmp_path / "one").write_text("0.5 1.5 2\n")
    parts, _ = read([tmp_path / "one"])
    assert parts[0][0].shape == (1, 2)


@pytest.mark.parametrize("bad_class", ["0", "1.5"])
def test_read_rejects_bad_classes(tmp_path: Path, bad_class: str) -> None:
    (tmp_path / "f").write_text(f"0.1 0.2 {bad_class}\n")
    with pytest.raises(ValueError, match="integer classes"):
        read([tmp_path / "f"])


def test_read_rejects_width_mismatch(tmp_path: Path) -> None:
    (tmp_path / "a").write_text("0.1 0.2 1\n")
    (tmp_path / "b").write_text("0.1 1\n")
    with pytest.raises(ValueError, match="columns"):
        read([tmp_path / "a", tmp_path / "b"])
