"""``python -m pipeline.stage``: arguments, params checks, one-line errors (the stages
themselves run in test_dvc)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.config.composition import CompositionError
from pipeline.params import compose_params
from pipeline.stage import main, stage_data


@pytest.fixture
def params_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv("PROJLOSS_MIRROR", raising=False)
    path = tmp_path / "params.yaml"
    path.write_text(compose_params(["experiments=smoke"]), encoding="utf-8")
    return path


def test_data_dirs_must_be_the_dvc_outputs(params_file: Path) -> None:
    params = yaml.safe_load(params_file.read_text())
    assert stage_data(params)["raw_dir"] == "data/raw"
    params["data"]["prepared_dir"] = "/elsewhere"
    with pytest.raises(CompositionError, match="must be data/prepared"):
        stage_data(params)


def test_arguments_and_errors(params_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["tune", "--params", str(params_file)])
    assert exc.value.code == 2
    assert "needs an experiment key" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exc:
        main(["tune", "nope", "--params", str(params_file)])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert "error: unknown experiment 'nope'" in err and "smoke-cube" in err
    with pytest.raises(SystemExit) as exc:
        main(["refit", "smoke-cube", "--params", str(params_file.parent / "none.yaml")])
    assert exc.value.code == 1
    assert "python -m pipeline.params" in capsys.readouterr().err


#: a fresh process: allocate and free arrays of a few MiB (a solver's temporaries), then
#: print the page faults that took
_FAULTS = """
import resource, sys
import numpy as np
from pipeline.lifecycle import keep_freed_memory
if sys.argv[1] == "kept":
    assert keep_freed_memory()
x = np.ones(500_000)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):  # three 4 MB temporaries, then freed: 12 MB of free heap
    a, b, c = x * 2.0, x * 3.0, x * 4.0
    del a, b, c
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


def test_a_stage_keeps_the_memory_it_frees() -> None:
    """The stages reuse freed memory (glibc mallopt) instead of mapping fresh zeroed pages
    for every temporary array. By default, glibc gives the heap's free top back to the
    system above twice the largest block freed so far (here 4 MB: 8 MB), so 200 rounds of
    three 4 MB temporaries take ~600k page faults (a tmc2007 fit spent as much system
    time as user time on them), a few thousand here. Skipped where the C library is not
    glibc."""
    import subprocess
    import sys

    from pipeline.lifecycle import keep_freed_memory

    if not keep_freed_memory():  # also: the call is harmless in this process
        pytest.skip("not glibc: no mallopt")
    faults = {
        mode: int(
            subprocess.run(
                [sys.executable, "-c", _FAULTS, mode],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for mode in ("default", "kept")
    }
    assert faults["default"] > 100_000, faults  # the case the setting is for
    assert faults["kept"] < faults["default"] / 20, faults


#: a fresh process that ends as a stage's command line does: a SQLite MLflow store in WAL
#: mode with a run and a metric, output left in the buffer, another exit handler, then the
#: stage's last handler (done: the process ends without the interpreter's teardown)
_EXIT = """
import atexit, sys
from mlflow.tracking import MlflowClient
from pipeline import lifecycle
from pipeline.runs import store

atexit.register(lifecycle._exit_without_teardown)  # as main() does, before the stage's imports
uri = "sqlite:///" + sys.argv[1]
store.init_store(uri)
client = MlflowClient(tracking_uri=uri)
run = client.create_run(client.create_experiment("exit"))
client.log_metric(run.info.run_id, "test.accuracy", 0.75)
atexit.register(print, "other exit handler ran")
sys.stdout.write("left in the buffer\\n")
lifecycle._DONE = sys.argv[2] == "done"
if not lifecycle._DONE:
    sys.exit(3)
"""


@pytest.mark.parametrize("how", ["done", "failed"])
def test_a_done_stage_exits_without_teardown_and_leaves_a_complete_store(
    tmp_path: Path, how: str
) -> None:
    """A stage that has done its work ends with ``os._exit`` after every other exit
    handler (0.5-1.5 s of the interpreter's teardown per stage process saved), its output
    flushed and its SQLite connections closed: no write-ahead log is left, so the
    database file alone (copied elsewhere) holds the run and its metric (the interpreter's
    own exit leaves the log: the connections are never closed). A failed stage exits as
    ever, with its own status."""
    import shutil
    import subprocess
    import sys

    from mlflow.tracking import MlflowClient

    db = tmp_path / "mlflow.db"
    proc = subprocess.run(
        [sys.executable, "-c", _EXIT, str(db), how],
        capture_output=True,
        text=True,
        env={**__import__("os").environ, "MLFLOW_DISABLE_TELEMETRY": "true"},
        timeout=120,
    )
    assert proc.returncode == (0 if how == "done" else 3), proc.stderr
    assert "left in the buffer" in proc.stdout and "other exit handler ran" in proc.stdout
    if how == "failed":  # the interpreter's exit (which leaves the write-ahead log)
        return
    assert not db.with_name("mlflow.db-wal").exists()
    alone = tmp_path / "copy" / "mlflow.db"
    alone.parent.mkdir()
    shutil.copy(db, alone)  # the file alone, as a user would copy it
    client = MlflowClient(tracking_uri=f"sqlite:///{alone}")
    (run,) = client.search_runs([client.get_experiment_by_name("exit").experiment_id])
    assert run.data.metrics == {"test.accuracy": 0.75}
