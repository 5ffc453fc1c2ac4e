"""A disk that refuses a write (issue 36, items 2 and 6): full (ENOSPC), read-only
(EROFS), not writable (EACCES). Every writer -- fetch, prepare, the evaluate outputs,
MLflow artifacts, the SQLite tracking store -- stops with one line naming the path and the
free space left (or the permission), exit status 1, no partial file, the MLflow run FAILED.

Two kinds of tests:

- on a real, small file system: a tmpfs the test mounts (``mount -t tmpfs``, root only),
  filled up or remounted read-only (``chmod`` does not stop root); skipped with the reason
  where mounting is not permitted (a container without CAP_SYS_ADMIN, a non-root user);
- the same faults injected at the write call (``np.savez``, ``os.mkdir``, the copy of an
  MLflow artifact, a SQLite page limit): they always run, so CI tests the behaviour too.
"""

from __future__ import annotations

import contextlib
import errno
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from pipeline import fileio
from pipeline.config.settings import TrackingSettings
from pipeline.data import fetch, storage
from pipeline.data import prepare as preprocess
from pipeline.errors import DiskError, TrackingError
from pipeline.runs.mlflow_tracker import MLflowTracker

from ._run_fixtures import env, one_error_line, parents, prepare_iris, runs


@pytest.fixture(scope="module")
def iris(tmp_path_factory: pytest.TempPathFactory):
    return prepare_iris(tmp_path_factory.mktemp("iris"))


def _cfg(iris, **dirs: Path) -> dict:
    data = {**iris.as_dict(), **{k: str(v) for k, v in dirs.items()}, "progress": False}
    return {"data": data, "datasets": ["iris"], "report": False}


def _leftovers(root: Path) -> list[Path]:
    """Temporary files of :mod:`pipeline.fileio` (or MLflow's) left under ``root``."""
    return [p for p in root.rglob("*") if p.name.endswith(fileio.TMP_SUFFIX) or ".tmp" in p.name]


# --------------------------------------------------------------------------- a real tmpfs
def _mount(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["mount", *args], capture_output=True, text=True, check=False)


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 256 KiB tmpfs mounted on a fresh directory (unmounted after the test)."""
    where = tmp_path / "fs"
    where.mkdir()
    if not hasattr(os, "geteuid") or os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root; the injection tests below cover the behaviour")
    done = _mount("-t", "tmpfs", "-o", "size=256k,mode=0755", "tmpfs", str(where))
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip()}); injection tests cover it")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def fill(where: Path) -> Path:
    """Fill the file system of ``where`` up: a file written until ENOSPC (returned)."""
    filler = where / "filler"
    with contextlib.suppress(OSError), open(filler, "wb", buffering=0) as f:
        while True:
            f.write(b"\0" * 4096)
    return filler


def read_only(where: Path) -> None:
    done = _mount("-o", "remount,ro", str(where))
    if done.returncode != 0:
        pytest.skip(f"cannot remount the tmpfs read-only ({done.stderr.strip()})")


@pytest.mark.slow
def test_preprocess_on_a_full_disk_is_one_line_and_resumes(iris, small_fs: Path) -> None:
    """The command: ``error: no space left on device (writing <file>: <free> free on
    <mount>, <size> needed); ...``, exit status 1 (it was 2 chained OSError tracebacks);
    no partial or temporary file; the variant is not marked complete; with space made, a
    re-run prepares it."""
    filler = fill(small_fs)
    prepared = small_fs / "prepared"
    done = subprocess.run(
        [
            sys.executable, "-m", "pipeline.preprocess", "datasets=iris", "report=false",
            f"data.mirror={iris.mirror}", f"data.raw_dir={iris.raw_dir}",
            f"data.prepared_dir={prepared}", "data.progress=false",
        ],
        env=env(), capture_output=True, text=True, timeout=240, check=False,
    )  # fmt: skip
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    line = one_error_line(out)
    assert line.startswith("error: no space left on device (writing "), line
    assert f"{prepared}/iris/" in line and f"free on {small_fs}" in line, line
    assert "needed)" in line and "free some space" in line, line
    assert not _leftovers(small_fs)
    assert not (prepared / "iris" / storage.STATS).exists()  # incomplete: rebuilt next time
    filler.unlink()
    preprocess.run(_cfg(iris, prepared_dir=prepared))
    assert (prepared / "iris" / storage.STATS).is_file()


def test_fetch_on_a_full_disk_names_the_file_and_its_size(iris, small_fs: Path) -> None:
    """A raw file that does not fit: a DiskError naming it and its size (the registry's),
    not 'no mirror, no network'; nothing left in the raw directory."""
    fill(small_fs)
    raw = small_fs / "raw"
    with pytest.raises(DiskError) as info:
        fetch.run(_cfg(iris, raw_dir=raw))
    text = str(info.value)
    assert f"writing {raw}/iris/iris.txt: 0 B free on {small_fs}, 6.3 KiB needed" in text
    assert not _leftovers(small_fs) and not (raw / "iris").exists()


def test_a_read_only_prepared_directory(iris, small_fs: Path) -> None:
    """EROFS creating the prepared directory (was an OSError traceback)."""
    read_only(small_fs)
    prepared = small_fs / "prepared"
    with pytest.raises(DiskError, match=rf"read-only file system \(writing {prepared}, on "):
        preprocess.run(_cfg(iris, prepared_dir=prepared))
    with pytest.raises(DiskError, match="read-only file system"):
        fileio.write_text(small_fs / "report.md", "x")


def _evaluated(iris, tmp_path: Path, tracker: MLflowTracker, out_dir: Path) -> str | None:
    """Tune, refit and evaluate iris (2 lambdas) inside a parent run of ``tracker``,
    writing the evaluate outputs to ``out_dir``; return the run id."""
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    from pipeline.config.run import RunConfig
    from pipeline.data.api import load_prepared
    from pipeline.paths import conf_dir
    from pipeline.runs import evaluate, refit, tune

    overrides = [
        "task=label_ranking", "dataset=iris", "lambdas.num=2", "tracking.log_models=false",
        f"data.raw_dir={iris.raw_dir}", f"data.prepared_dir={iris.prepared_dir}",
    ]  # fmt: skip
    with initialize_config_dir(config_dir=str(conf_dir()), version_base="1.3"):
        cfg = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
    cfg.pop("experiments")
    run = RunConfig.from_config(cfg)
    data = load_prepared("iris", cfg)
    with tracker.parent_run(task="label_ranking", name="disk") as run_id:
        tuned = tune.run(run, data, tracker)
        refitted = refit.run(run, data, tuned)
        evaluate.run(run, data, tuned, refitted, tracker, out_dir=out_dir)
    return run_id


@pytest.mark.slow
def test_evaluate_outputs_and_artifacts_on_a_full_disk(iris, tmp_path: Path, small_fs) -> None:
    """The evaluate outputs (data/eval) on a full disk, then the MLflow artifact directory:
    one DiskError each, the run FAILED, no partial file."""
    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    fill(small_fs)
    tracker = MLflowTracker(TrackingSettings(uri=uri, figures=False))
    with pytest.raises(DiskError, match=rf"no space left on device \(writing {small_fs}/eval/"):
        _evaluated(iris, tmp_path, tracker, small_fs / "eval")
    tracker = MLflowTracker(
        TrackingSettings(uri=uri, figures=False, artifacts=str(small_fs), experiment_prefix="a")
    )
    with pytest.raises(DiskError, match=rf"no space left on device \(writing {small_fs}/"):
        _evaluated(iris, tmp_path, tracker, tmp_path / "eval")
    assert not _leftovers(small_fs)
    assert [r.info.status for r in parents(runs(uri))] == ["FAILED", "FAILED"]


# --------------------------------------------------------------------------- injected faults
def _no_space(*args: object, **kwargs: object) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_full_disk_in_numpy_savez_is_one_disk_error(tmp_path: Path, monkeypatch) -> None:
    """ENOSPC in ``np.savez`` (injected after part of the file is written): the DiskError
    names the file, the free space and the size needed; no temporary left."""

    def savez(f, **arrays: np.ndarray) -> None:
        f.write(b"PK\x03\x04 part of a zip")
        _no_space()

    monkeypatch.setattr(np, "savez", savez)
    dest = tmp_path / "prepared" / "train.npz"
    with pytest.raises(DiskError) as info:
        storage.save_split(dest, np.zeros((100, 4)), np.zeros((100, 3)), np.arange(100))
    text = str(info.value)
    assert text.startswith(f"no space left on device (writing {dest}: ")
    assert " free on " in text and "4.8 KiB needed" in text and "\n" not in text
    assert not dest.exists() and not _leftovers(tmp_path)
    assert info.value.__cause__ is None and info.value.__suppress_context__


def test_the_command_prints_a_disk_error_as_one_line(tmp_path: Path, capsys, monkeypatch):
    from pipeline.lifecycle import command

    monkeypatch.setattr(os, "fsync", _no_space)  # the last write of atomic_open
    with pytest.raises(SystemExit) as info:
        with command():
            fileio.write_text(tmp_path / "README.md", "x")
    assert info.value.code == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("error: no space left on device"), err
    assert f"(writing {tmp_path}/README.md: " in err and "Traceback" not in err
    assert not list(tmp_path.iterdir())


def test_a_read_only_or_forbidden_directory_injected(tmp_path: Path, monkeypatch) -> None:
    """EROFS creating a directory, EACCES creating the temporary file: one DiskError each,
    naming the path (and the directory's owner and mode for EACCES)."""
    import tempfile

    real_mkdir = os.mkdir

    def mkdir(path, *args, **kwargs):
        if "ro" in Path(path).parts:
            raise OSError(errno.EROFS, os.strerror(errno.EROFS), str(path))
        return real_mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", mkdir)
    with pytest.raises(DiskError, match=rf"read-only file system \(writing {tmp_path}/ro/pre"):
        fileio.make_dir(tmp_path / "ro" / "prepared")
    with pytest.raises(DiskError, match=rf"read-only file system \(writing {tmp_path}/ro, on "):
        fileio.write_json(tmp_path / "ro" / "metrics.json", {})

    def mkstemp(suffix: str = "", prefix: str = "", dir: str = "", text: bool = False) -> None:
        raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), f"{dir}/{prefix}x{suffix}")

    monkeypatch.setattr(tempfile, "mkstemp", mkstemp)
    dest = tmp_path / "out" / "results.json"
    with pytest.raises(DiskError) as info:
        fileio.write_json(dest, {})
    text = str(info.value)
    assert text.startswith(f"permission denied (writing {dest}; {tmp_path / 'out'}: owner uid")
    assert "mode drwx" in text and "writable for this user" in text


def test_a_full_disk_during_a_download_is_not_no_network(iris, tmp_path: Path, monkeypatch):
    """ENOSPC while a download is written was taken for a network error (the URL loop
    catches OSError) and ended as 'no mirror, no network': now the DiskError."""
    monkeypatch.setattr(fetch, "copy_stream", _no_space)
    cfg = _cfg(iris, raw_dir=tmp_path / "raw")
    cfg["data"]["mirror"] = None
    with pytest.raises(DiskError, match=r"no space left on device \(writing .*iris.txt: "):
        fetch.run(cfg, opener=lambda url, timeout: contextlib.nullcontext(None))
    assert not _leftovers(tmp_path)


def test_an_mlflow_artifact_on_a_full_disk_injected(tmp_path: Path, monkeypatch) -> None:
    """ENOSPC while MLflow copies an artifact (injected in its copy, after part of the
    file): one DiskError naming the run's artifact directory, no partial file, the run
    FAILED."""
    import shutil

    uri = f"sqlite:///{tmp_path / 'mlflow.db'}"
    tracker = MLflowTracker(TrackingSettings(uri=uri, artifacts=str(tmp_path / "art")))
    src = tmp_path / "predictions.npz"
    src.write_bytes(b"\0" * 10_000)

    def copyfileobj(fsrc, fdst, length=0):
        fdst.write(fsrc.read(100))
        _no_space()

    with pytest.raises(DiskError) as info:
        with tracker.parent_run(task="label_ranking", name="full") as run_id:
            monkeypatch.setattr(shutil, "copyfileobj", copyfileobj)
            monkeypatch.setattr(shutil, "copyfile", copyfileobj)
            tracker.log_artifact(src)
    monkeypatch.undo()
    assert str(info.value).startswith(f"no space left on device (writing {tmp_path}/art/")
    assert tracker.client.get_run(run_id).info.status == "FAILED"
    assert not [p for p in (tmp_path / "art").rglob("*") if p.is_file()]


def test_a_full_sqlite_store_is_one_line_without_mlflows_traceback(tmp_path: Path, capfd):
    """The SQLite store cannot grow mid-run (SQLITE_FULL, made with SQLite's own page
    limit): our one-line TrackingError naming the disk and its free space, and no
    ``ERROR mlflow.store.db.utils`` record with its SQLAlchemy traceback before it; the
    run ends FAILED, as before."""
    from sqlalchemy import event

    tracker = MLflowTracker(TrackingSettings(uri=f"sqlite:///{tmp_path / 'mlflow.db'}"))
    engine = tracker.client._tracking_client.store.engine

    def cap(connection, record) -> None:  # the file may not grow from now on
        pages = connection.execute("PRAGMA page_count").fetchone()[0]
        connection.execute(f"PRAGMA max_page_count = {pages}")

    capfd.readouterr()
    with pytest.raises(TrackingError) as info:
        with tracker.parent_run(task="label_ranking", name="full") as run_id:
            event.listen(engine, "connect", cap)
            engine.dispose()  # new connections, capped
            try:
                tracker.log_batch([({f"m{i}": 1.0 for i in range(500)}, s) for s in range(20)])
                tracker.flush()  # written when the run ends otherwise
            finally:
                event.remove(engine, "connect", cap)
                engine.dispose()
    text = str(info.value)
    assert "its disk is full (SQLite: database or disk is full; " in text and " free on " in text
    out = capfd.readouterr()
    assert "SQLAlchemy database error" not in out.err + out.out
    assert "Traceback" not in out.err + out.out
    assert tracker.client.get_run(run_id).info.status == "FAILED"
