"""The DVC stages' joblib tasks on a Ray head (``PROJLOSS_RAY_ADDRESS``): same results as
local processes, computed by the cluster's workers; unset, nothing changes."""

from __future__ import annotations

import os
from collections.abc import Iterator

import numpy as np
import pytest

from pipeline.config.run import RunConfig
from pipeline.paths import project_root
from pipeline.runs import parallel as splits
from pipeline.runs.joblib_backend import ADDRESS_ENV, backend

pytestmark = [pytest.mark.cluster, pytest.mark.xdist_group("cluster")]


def _config(data: list[str], high: float) -> dict:
    from hydra import compose, initialize_config_dir
    from omegaconf import OmegaConf

    overrides = ["lambdas.num=2", f"lambdas.high={high}", "tracking.enabled=false", *data]
    with initialize_config_dir(config_dir=str(project_root() / "conf"), version_base="1.3"):
        cfg = OmegaConf.to_container(compose("config", overrides=overrides), resolve=True)
    cfg.pop("experiments")
    return cfg


@pytest.fixture
def on_ray(ray_cluster, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    import ray

    monkeypatch.setenv(ADDRESS_ENV, ray_cluster.address)
    try:
        yield
    finally:
        ray.shutdown()


def test_unset_is_local(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv(ADDRESS_ENV, raising=False)
    with backend() as name:
        assert name == "loky"


def test_stage_tasks_on_the_ray_cluster(ray_cluster, on_ray, iris_data) -> None:
    cfgs = [_config(iris_data, high) for high in (1e3, 1e4)]
    tasks = [(RunConfig.from_config(cfg),) for cfg in cfgs]
    local = [splits.tune_task(*t) for t in tasks]
    remote = splits.run_tasks(splits.tune_task, tasks, n_jobs=2)
    for a, b in zip(local, remote, strict=True):
        assert a["lambdas"] == b["lambdas"]
        np.testing.assert_allclose(a["metrics"]["hamming"], b["metrics"]["hamming"], rtol=1e-9)
        assert a["selected"]["hamming"]["lambda"] == b["selected"]["hamming"]["lambda"]
    # the tasks ran in processes of the Ray node (their worker processes end with the
    # joblib pool; their parents, the node's raylet or agent, stay)
    parents = splits.run_tasks(os.getppid, [(), (), ()], n_jobs=2)
    assert os.getpid() not in parents
    assert all(ray_cluster.is_worker(pid) for pid in parents), parents
