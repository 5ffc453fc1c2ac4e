"""params.yaml is the composition of conf/config.yaml, exactly as DVC composes it."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from pipeline.params import compose_params, main

from .conftest import ROOT


@pytest.fixture
def no_mirror_env(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PROJLOSS_MIRROR", raising=False)


def test_committed_params_are_the_composition(no_mirror_env: None) -> None:
    """`make params` was run after the last change of conf/ (else: run it)."""
    committed = (ROOT / "params.yaml").read_text(encoding="utf-8")
    assert committed == compose_params(), "params.yaml is stale: run `make params`"


def test_dvc_composes_the_same(tmp_path: Path, no_mirror_env: None) -> None:
    """DVC's own Hydra composition (what `dvc exp run -S` writes) equals ours, for the
    defaults and with overrides."""
    from dvc.utils.hydra import compose_and_dump

    for overrides in ([], ["task=multilabel", "set=knapsack"], ["seed=2", "lambdas.num=3"]):
        out = tmp_path / "params.yaml"
        compose_and_dump(out, str(ROOT / "conf"), None, "config", str(ROOT), overrides)
        assert out.read_text(encoding="utf-8") == compose_params(overrides), overrides


def test_overrides_reach_the_current_experiment(no_mirror_env: None) -> None:
    """`dvc exp run -S task=multilabel -S set=knapsack` makes `current` that composition;
    the other experiments are untouched."""
    base = yaml.safe_load(compose_params())
    params = yaml.safe_load(compose_params(["task=multilabel", "set=knapsack", "seed=1"]))
    current = params["experiments"]["current"]
    assert current["dataset"] == "emotions"
    assert current["config"]["set"]["name"] == "knapsack"
    assert current["config"]["task"]["name"] == "multilabel"
    assert params["experiments"]["lr"] == base["experiments"]["lr"]
    assert params["data"]["seed"] == params["seed"] == 1
    assert params["data"]["mirror"] == "../shared/datasets"
    assert "hydra" not in params


def test_mirror_variable_is_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PROJLOSS_MIRROR", "/somewhere/else")
    assert yaml.safe_load(compose_params())["data"]["mirror"] == "../shared/datasets"


def test_check_and_write(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "params.yaml"
    with pytest.raises(SystemExit) as exc:
        main(["--check", "--output", str(out)])
    assert exc.value.code == 1
    assert "stale" in capsys.readouterr().out
    main(["--output", str(out), "experiments=smoke"])
    assert set(yaml.safe_load(out.read_text())["experiments"]) == {"smoke-cube", "smoke-birkhoff"}
    main(["--check", "--output", str(out), "experiments=smoke"])
    assert "up to date" in capsys.readouterr().out
