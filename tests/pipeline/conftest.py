"""Fixtures of the data-pipeline tests.

- The network is disabled for every test (``no_network``): name resolution and socket
  connections to anything but the loopback interface raise ``OSError``, so a test that
  would download something fails instead of touching the network.
- ``mirror``: the local dataset mirror, located by ``tests/mirror.py``
  (``$PROJLOSS_MIRROR``, else ``shared/datasets`` beside the project root or one of its
  parents); a missing mirror fails the tests that need it (never a silent skip).
- ``raw_all``: every mirrored dataset fetched once per test session (per xdist worker).
"""

from __future__ import annotations

import copy
import csv
import shutil
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from mirror import require_mirror
from pipeline.data import fetch
from pipeline.data.prepare import RawCache
from pipeline.data.readers import RawData
from pipeline.data.registry import DatasetSpec, get_spec, list_specs
from pipeline.data.settings import DataSettings, data_settings
from pipeline.paths import project_root

ROOT = project_root()
LOOPBACK = {"localhost", "127.0.0.1", "::1", "", None}


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Refuse every non-loopback name lookup and connection."""
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect

    def getaddrinfo(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host not in LOOPBACK:
            raise OSError(f"network disabled in tests (lookup of {host!r})")
        return real_getaddrinfo(host, *args, **kwargs)

    def connect(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else None
        if self.family in (socket.AF_INET, socket.AF_INET6) and host not in LOOPBACK:
            raise OSError(f"network disabled in tests (connect to {address!r})")
        return real_connect(self, address)

    monkeypatch.setattr(socket, "getaddrinfo", getaddrinfo)
    monkeypatch.setattr(socket.socket, "connect", connect)


@pytest.fixture(scope="session")
def mirror() -> Path:
    return require_mirror()


@pytest.fixture(scope="session")
def manifest(mirror: Path) -> list[dict[str, str]]:
    with open(mirror / "MANIFEST.tsv", encoding="utf-8", newline="") as f:
        return list(csv.DictReader(f, delimiter="\t"))


def make_settings(tmp: Path, mirror: Path | None, **extra: Any) -> DataSettings:
    """Data settings writing under ``tmp`` (never under the repository)."""
    return data_settings(
        {
            "mirror": str(mirror) if mirror else None,
            "raw_dir": str(tmp / "raw"),
            "prepared_dir": str(tmp / "prepared"),
            "reports_dir": str(tmp / "reports"),
            "progress": False,
            **extra,
        }
    )


def cfg_for(settings: DataSettings, **top: Any) -> dict[str, Any]:
    """A stage config (plain dict) with these data settings."""
    return {"data": settings.as_dict(), **top}


@pytest.fixture(scope="session")
def registry() -> dict[str, DatasetSpec]:
    return list_specs([ROOT / "conf" / "dataset"])


@pytest.fixture(scope="session")
def raw_all(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> DataSettings:
    """Settings whose raw_dir holds every mirrored dataset (fetched once)."""
    settings = make_settings(tmp_path_factory.mktemp("session"), mirror)
    fetch.run(cfg_for(settings, datasets="mirrored"))
    return settings


@pytest.fixture(scope="session")
def raw_cache() -> RawCache:
    """Raw data parsed once per session, shared with the stage runs of the tests."""
    return RawCache()


@pytest.fixture(scope="session")
def load(raw_all: DataSettings, raw_cache: RawCache):
    """``load(name, split=0)``: a mirrored dataset's RawData, parsed once per session."""

    def _load(name: str, split: int | None = 0) -> RawData:
        return raw_cache.get(get_spec(name, raw_all.dataset_dirs), split, raw_all.raw_dir)

    return _load


# --------------------------------------------------------------------------- pipeline
#: small real datasets of each task, prepared once per session for the training tests
TRAIN_DATASETS = ["iris", "wine", "emotions", "ERA"]


@pytest.fixture(scope="session")
def prepared(tmp_path_factory: pytest.TempPathFactory, mirror: Path) -> DataSettings:
    """Settings whose raw and prepared dirs hold :data:`TRAIN_DATASETS` (done once)."""
    from pipeline.data import prepare as preprocess

    settings = make_settings(tmp_path_factory.mktemp("prepared"), mirror)
    fetch.run(cfg_for(settings, datasets=TRAIN_DATASETS))
    preprocess.run(cfg_for(settings, datasets=TRAIN_DATASETS, report=False))
    return settings


def data_overrides(settings: DataSettings) -> list[str]:
    """Hydra overrides pointing the ``data`` group at ``settings``' directories."""
    return [
        f"data.mirror={settings.mirror}",
        f"data.raw_dir={settings.raw_dir}",
        f"data.prepared_dir={settings.prepared_dir}",
        f"data.reports_dir={settings.reports_dir}",
        "data.progress=false",
    ]


def compose(overrides: list[str] | None = None, return_hydra_config: bool = False) -> Any:
    """``conf/config.yaml`` composed with Hydra's compose API (the registry's resolver
    registered: ``hydra.sweeper.params`` resolves)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_dir

    from pipeline.data.registry import register_resolver

    register_resolver()

    with initialize_config_dir(config_dir=str(ROOT / "conf"), version_base="1.3"):
        return hydra_compose(
            "config", overrides=overrides or [], return_hydra_config=return_hydra_config
        )


def run_config(settings: DataSettings, overrides: list[str]) -> dict[str, Any]:
    """A plain, resolved run config on the prepared data of ``settings``."""
    from omegaconf import OmegaConf

    cfg = OmegaConf.to_container(compose([*overrides, *data_overrides(settings)]), resolve=True)
    cfg.pop("experiments")
    return cfg


#: mark of the tests that use :func:`paper_runs`: ``--dist loadgroup`` gives them one
#: worker, so that each list is composed once in the session (not once on each worker;
#: pytest < 9.2, see pyproject.toml: under 9.2 xdist ignores the groups, and each
#: worker's cache then composes what that worker needs).
PAPER_RUNS = pytest.mark.xdist_group("paper-runs")


class PaperRuns:
    """The paper's experiment lists (the default composition, ``params.yaml``'s), each
    list's runs composed on first use and kept: composing one takes seconds of Hydra (lr
    6.6 s, ml 3.7 s, ord 3.2 s), and several tests read the same lists. Every call returns
    a deep copy, so that a test changing what it gets cannot change another's."""

    def __init__(self) -> None:
        import yaml

        from pipeline.params import compose_params

        self._params = yaml.safe_load(compose_params([]))
        self._runs: dict[str, dict[str, dict[str, Any]]] = {}

    def params(self) -> dict[str, Any]:
        """The composed params (``compose_params([])``), the lists' source."""
        return copy.deepcopy(self._params)

    def runs(self, key: str) -> dict[str, dict[str, Any]]:
        """``compose_runs(params, key)``: run id -> config, in its order."""
        from pipeline.config.experiments import compose_runs

        if key not in self._runs:
            self._runs[key] = compose_runs(self._params, key)
        return copy.deepcopy(self._runs[key])


@pytest.fixture(scope="session")
def paper_runs() -> PaperRuns:
    """:class:`PaperRuns`, one per session (per xdist worker); mark its tests
    :data:`PAPER_RUNS`."""
    return PaperRuns()


class RecordingTracker:
    """A tracker that records what the stages log (no MLflow)."""

    enabled = True

    def __init__(self, **settings: Any) -> None:
        from pipeline.runs.tracking import TrackingSettings

        self.settings = TrackingSettings(**settings)
        self.run_id = "recorded"
        self.children: list[tuple[str, dict[str, Any], dict[str, float]]] = []
        self.metrics: dict[str, float] = {}
        self.models: dict[str, Any] = {}
        self.artifacts: list[tuple[Path, str | None]] = []
        self.params: dict[str, str] = {}
        self.tags: dict[str, str] = {}
        self.inputs: list[tuple[Any, dict[str, str]]] = []

    def log_tuning(self, tuning: Any, ties: str = "smallest") -> None:
        """The grid: every lambda's would-be child run (``tracking.child_runs: all``)."""
        from pipeline.runs import tuning_log

        self.tuning = tuning
        for i in tuning_log.child_indices(tuning, "all", ties):
            self.children.append(tuning_log.child_run(tuning, i))

    def log_metrics(self, metrics: Any, step: int | None = None) -> None:
        self.metrics.update(metrics)

    def log_model(
        self, model: Any, name: str, X_example: Any = None, registered_name: Any = None
    ) -> None:
        self.models[name] = model

    def log_model_files(self, files: Any, name: str, registered_name: Any = None) -> None:
        """A model saved by a worker (its files): loaded back, as MLflow would serve it."""
        import tempfile

        import mlflow.sklearn

        root = Path(tempfile.mkdtemp(prefix="projloss-test-model-"))
        for rel, data in files.items():
            (root / rel).parent.mkdir(parents=True, exist_ok=True)
            (root / rel).write_bytes(data)
        self.models[name] = mlflow.sklearn.load_model(str(root))

    def log_params(self, params: Any) -> None:
        self.params.update(params)

    def log_input(self, dataset: Any, tags: Any = None) -> None:
        self.inputs.append((dataset, dict(tags or {})))

    def log_artifact(self, path: Path, artifact_path: str | None = None) -> None:
        self.artifacts.append((Path(path), artifact_path))

    def set_tags(self, tags: Any) -> None:
        self.tags.update(tags)

    def log_dict(self, obj: Any, artifact_file: str) -> None:
        pass

    def log_figure(self, figure: Any, artifact_file: str) -> None:
        pass

    def log_batch(self, steps: Any = (), params: Any = None, tags: Any = None) -> None:
        for metrics, step in steps:
            self.log_metrics(metrics, step=step)
        self.params.update(params or {})
        self.tags.update(tags or {})


@pytest.fixture
def fit_memos(monkeypatch: pytest.MonkeyPatch) -> list:
    """The memos of the ``projloss.estimators.memoized_fits`` blocks opened in the test
    (the pipeline's group tasks open one each)."""
    import contextlib

    import projloss.estimators as estimators

    real, memos = estimators.memoized_fits, []

    @contextlib.contextmanager
    def spy():
        with real() as memo:
            memos.append(memo)
            yield memo

    monkeypatch.setattr(estimators, "memoized_fits", spy)
    return memos


@pytest.fixture
def short_tmp() -> Iterator[Path]:
    """A short ``$TMPDIR`` for the preload servers' sockets (at most 108 bytes a path)."""
    path = Path(tempfile.mkdtemp(prefix="pl-", dir="/tmp"))
    try:
        yield path
    finally:
        shutil.rmtree(path, ignore_errors=True)
