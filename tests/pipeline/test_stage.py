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
