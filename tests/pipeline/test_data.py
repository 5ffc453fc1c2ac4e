"""pipeline.data.load_prepared: fetch + preprocess on demand, then load."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
import scipy.sparse as sp

from pipeline.data.api import load_prepared

from .conftest import make_settings
from .stages.test_fetch import offline


def test_load_prepared_fetches_and_prepares(tmp_path: Path, mirror: Path) -> None:
    cfg = make_settings(tmp_path, mirror).as_dict()
    d = load_prepared("vowel", cfg, opener=offline)
    assert d.name == "vowel" and d.task == "label_ranking" and d.variant == "vowel"
    assert (tmp_path / "raw" / "vowel" / "vowel.txt").is_file()
    X, y = d.train
    assert X.dtype == np.float64 and y.dtype == np.int64 and y.shape[1] == 11
    assert sum(len(v[1]) for v in (d.train, d.val, d.test)) == 528
    assert d.stats["n_samples"]["train"] == len(y)
    Xtv, ytv = d.train_val
    assert len(ytv) == len(d.train[1]) + len(d.val[1])
    np.testing.assert_array_equal(Xtv[: len(y)], X)
    # a second call only loads
    stamp = (d.directory / "stats.json").stat().st_mtime_ns
    again = load_prepared("vowel", cfg, opener=offline)
    assert (d.directory / "stats.json").stat().st_mtime_ns == stamp
    np.testing.assert_array_equal(again.test[0], d.test[0])


def test_load_prepared_options(tmp_path: Path, mirror: Path) -> None:
    cfg = make_settings(tmp_path, mirror).as_dict()
    d = load_prepared("ERA", cfg, split=4, opener=offline)
    assert d.variant == "ERA+split4" and d.stats["params"]["split"] == 4
    assert set(np.unique(d.train[1])) <= set(range(1, 10))
    b = load_prepared("birds", cfg, drop_empty=True, seed=3, opener=offline)
    assert b.variant == "birds+drop_empty+seed3"
    assert (b.train[1].sum(axis=1) > 0).all()
    assert b.train[1].dtype == np.int64 and set(np.unique(b.train[1])) <= {0, 1}


def test_load_prepared_sparse(tmp_path: Path, mirror: Path) -> None:
    cfg = make_settings(tmp_path, mirror).as_dict()
    d = load_prepared("tmc2007_500", cfg, opener=offline)
    assert all(sp.issparse(part[0]) for part in (d.train, d.val, d.test))
    assert sp.issparse(d.train_val[0])


def test_load_prepared_without_preparing(tmp_path: Path) -> None:
    cfg = make_settings(tmp_path, None).as_dict()
    with pytest.raises(FileNotFoundError, match=r"pipeline\.preprocess datasets=iris"):
        load_prepared("iris", cfg, prepare_missing=False)
