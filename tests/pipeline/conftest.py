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

import csv
import socket
from pathlib import Path
from typing import Any

import pytest

from mirror import require_mirror
from pipeline.paths import project_root
from pipeline.readers import RawData
from pipeline.registry import DatasetSpec, get_spec, list_specs
from pipeline.settings import DataSettings, data_settings
from pipeline.stages import fetch
from pipeline.stages.preprocess import RawCache

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
