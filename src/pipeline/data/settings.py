"""The data settings (Hydra group ``conf/data/``), validated: a frozen dataclass.

The same settings drive fetch, preprocess and :func:`pipeline.data.load_prepared`.  Their
defaults live in one place, ``conf/data/default.yaml``; :func:`data_settings` reads that
file (with OmegaConf, so ``${oc.env:...}`` interpolations work) when no config is given,
so the Python API needs no Hydra.  Every path is resolved against the project root
(:mod:`pipeline.paths`), never against the working directory. They live with the data
(not in :mod:`pipeline.config`) because every module of :mod:`pipeline.data` takes them;
the run config (:mod:`pipeline.config.settings`) checks its ``data`` node with them.

Examples
--------
>>> s = data_settings(seed=3)
>>> s.seed, s.replace(seed=4).seed, s.raw_dir.is_absolute()
(3, 4, True)
>>> data_settings(test_size=2)
Traceback (most recent call last):
...
pipeline.errors.ConfigError: data.test_size must be a fraction strictly between 0 and 1, got 2
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import ConfigError
from ..paths import conf_dir, project_root, resolve
from ..plain import to_plain

#: The paper's protocol (GUIDE §3): prepared-data variants are named relative to these.
PROTOCOL_DEFAULTS: dict[str, Any] = {
    "seed": 0,
    "test_size": 0.2,
    "val_size": 0.25,
    "ordinal_split": 0,
    "drop_empty": False,
}


def load_default_data_config() -> dict[str, Any]:
    """``conf/data/default.yaml`` as a plain dict (interpolations resolved)."""
    from omegaconf import OmegaConf

    return to_plain(OmegaConf.load(conf_dir() / "data" / "default.yaml"))


@dataclass(frozen=True)
class DataSettings:
    """Validated data settings; see ``conf/data/default.yaml`` for each field's meaning."""

    mirror: Path | None
    raw_dir: Path
    prepared_dir: Path
    reports_dir: Path
    dataset_dirs: tuple[Path, ...]
    seed: int = 0
    test_size: float = 0.2
    val_size: float = 0.25
    ordinal_split: int | str | tuple[int, ...] = 0
    drop_empty: bool = False
    timeout: float = 30.0
    progress: bool = True
    force: bool = False

    def replace(self, **changes: Any) -> DataSettings:
        """A copy with some fields changed (validated again)."""
        return DataSettings.from_mapping({**self.as_dict(), **changes}, base=None)

    def as_dict(self) -> dict[str, Any]:
        """The fields as a plain dict (paths as strings)."""
        out: dict[str, Any] = {}
        for f in dataclasses.fields(self):
            v = getattr(self, f.name)
            if isinstance(v, Path):
                v = str(v)
            elif f.name == "dataset_dirs":
                v = [str(p) for p in v]
            elif isinstance(v, tuple):
                v = list(v)
            out[f.name] = v
        return out

    @classmethod
    def from_mapping(
        cls, mapping: Mapping[str, Any] | None, base: Mapping[str, Any] | None = None
    ) -> DataSettings:
        """Validate ``mapping`` (over ``base``, by default ``conf/data/default.yaml``)."""
        if base is None and mapping is not None and _is_complete(mapping):
            merged = dict(to_plain(mapping))
        else:
            merged = {**(load_default_data_config() if base is None else dict(base))}
            merged.update(to_plain(mapping) or {})
        names = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(merged) - names)
        if unknown:
            raise ConfigError(
                f"unknown data setting(s) {[f'data.{k}' for k in unknown]}; valid: {sorted(names)}"
            )
        root = project_root()
        mirror = merged.get("mirror")
        values: dict[str, Any] = {
            "mirror": resolve(mirror, root) if mirror not in (None, "", False) else None,
            "raw_dir": resolve(_required(merged, "raw_dir"), root),
            "prepared_dir": resolve(_required(merged, "prepared_dir"), root),
            "reports_dir": resolve(_required(merged, "reports_dir"), root),
        }
        dirs = _required(merged, "dataset_dirs")
        if isinstance(dirs, str):
            dirs = [dirs]
        values["dataset_dirs"] = tuple(resolve(d, root) for d in dirs)
        values["seed"] = _int(merged.get("seed", 0), "seed")
        values["test_size"] = _fraction(merged.get("test_size", 0.2), "test_size")
        values["val_size"] = _fraction(merged.get("val_size", 0.25), "val_size")
        values["ordinal_split"] = _split_selector(merged.get("ordinal_split", 0))
        values["drop_empty"] = _bool(merged.get("drop_empty", False), "drop_empty")
        timeout = merged.get("timeout", 30.0)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout <= 0:
            raise ConfigError(f"data.timeout must be a positive number of seconds, got {timeout!r}")
        values["timeout"] = float(timeout)
        values["progress"] = _bool(merged.get("progress", True), "progress")
        values["force"] = _bool(merged.get("force", False), "force")
        return cls(**values)


def data_settings(
    cfg: DataSettings | Mapping[str, Any] | None = None, **overrides: Any
) -> DataSettings:
    """Data settings from a stage config (its ``data`` node) or the defaults, plus overrides.

    ``cfg`` may be a whole stage config (with a ``data`` key), the ``data`` node itself,
    ``None`` (``conf/data/default.yaml``), or settings already validated (returned as they
    are, or a copy with the overrides: they are not validated again).
    """
    if isinstance(cfg, DataSettings):
        return cfg.replace(**overrides) if overrides else cfg
    node: Any = {} if cfg is None else to_plain(cfg)
    if isinstance(node, Mapping) and "data" in node and isinstance(node["data"], Mapping):
        node = node["data"]
    return DataSettings.from_mapping({**node, **overrides})


def _is_complete(mapping: Mapping[str, Any]) -> bool:
    return all(k in mapping for k in ("raw_dir", "prepared_dir", "reports_dir", "dataset_dirs"))


def _required(m: Mapping[str, Any], key: str) -> Any:
    if m.get(key) in (None, ""):
        raise ConfigError(f"data setting data.{key} is required (a path)")
    return m[key]


def _int(v: Any, name: str) -> int:
    if isinstance(v, bool) or not isinstance(v, int):
        raise ConfigError(f"data.{name} must be an integer, got {v!r}")
    return v


def _bool(v: Any, name: str) -> bool:
    if not isinstance(v, bool):
        raise ConfigError(f"data.{name} must be true or false, got {v!r}")
    return v


def _fraction(v: Any, name: str) -> float:
    if isinstance(v, bool) or not isinstance(v, int | float) or not 0.0 < v < 1.0:
        raise ConfigError(f"data.{name} must be a fraction strictly between 0 and 1, got {v!r}")
    return float(v)


def _split_selector(v: Any) -> int | str | tuple[int, ...]:
    if v == "all":
        return "all"
    if isinstance(v, list | tuple):
        return tuple(_nonneg(x, "ordinal_split") for x in v)
    return _nonneg(v, "ordinal_split")


def _nonneg(v: Any, name: str) -> int:
    v = _int(v, name)
    if v < 0:
        raise ConfigError(f'data.{name} must be >= 0 (or "all", or a list), got {v}')
    return v
