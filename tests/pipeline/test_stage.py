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
from pipeline.stage import keep_freed_memory
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

    from pipeline.stage import keep_freed_memory

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
