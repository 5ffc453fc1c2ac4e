"""A new set is one module and its conf file: ``python -m pipeline.train set=linf_ball``
runs a set that projloss does not ship (``tests/projloss/sets/linf_ball.py``), from a
``set/linf_ball.yaml`` in the user's own conf directory (added to Hydra's search path)
that names its class, with no other edit; the estimator the pipeline builds for it fits
with the Newton solver on the set's own Jacobians."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from .conftest import ROOT, data_overrides, run_config

SET_MODULES = ROOT / "tests" / "projloss" / "sets"

CONF = """\
# The l-infinity ball [-1, 1]^p: a set defined outside projloss (its module names it).
name: linf_ball
class: linf_ball.LinfBall
params: {}
"""


@pytest.fixture
def unregister() -> Iterator[None]:
    """Composing the set imports its module, which registers it: undone."""
    from projloss.sets import SETS

    try:
        yield
    finally:
        SETS.pop("linf_ball", None)
        sys.modules.pop("linf_ball", None)


def test_train_runs_a_set_from_its_module_and_conf_file(
    prepared, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, unregister
) -> None:
    from pipeline.config.composition import make_estimator
    from pipeline.config.run import RunConfig
    from pipeline.data.api import load_prepared
    from pipeline.runs.mlflow_view import cell_params

    conf = tmp_path / "conf" / "set"
    conf.mkdir(parents=True)
    (conf / "linf_ball.yaml").write_text(CONF)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(SET_MODULES)]),
        "HYDRA_FULL_ERROR": "0",
    }
    args = [  # the default task and dataset: label ranking on iris
        f"hydra.searchpath=[file://{tmp_path / 'conf'}]",
        "set=linf_ball",
        "model=poly",
        "lambdas.num=2",
        "tracking.enabled=false",  # MLflow's store: 20 s here; the view is checked below
        *data_overrides(prepared),
    ]
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.train", *args],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    # decoder=same: the set cannot decode, so the task's (conf/task/label_ranking.yaml)
    assert "iris | label_ranking linf_ball->birkhoff poly2 | lambda=" in out
    assert "test hamming=" in out
    # the estimator the pipeline builds for it, composed the same way in this process:
    # the Newton solver (model=poly) on the set's own Jacobians
    monkeypatch.syspath_prepend(str(SET_MODULES))
    cfg = run_config(prepared, args[:3])
    run_cfg = RunConfig.from_config(cfg)
    params = cell_params(run_cfg)  # the MLflow view of the run
    assert (params["set"], params["decoder"], params["model"]) == ("linf_ball", "birkhoff", "poly")
    estimator = make_estimator(run_cfg.composition, alpha=1e-2)
    X, y = load_prepared("iris", run_cfg.data).train
    estimator.fit(X, y)
    assert type(estimator.projection_set_).__name__ == "LinfBall"
    assert estimator.n_iter_newton_ >= 1
    assert estimator.n_jacobians_["set"] >= 1 and estimator.n_jacobians_["differences"] == 0
