"""The settings of a run, validated: the run config's keys (:func:`check_run_config`), the
lambda grid (:class:`LambdaGrid`), the model's settings and tracking
(:class:`TrackingSettings`). The data settings (``conf/data/``) are
:mod:`pipeline.data.settings`' (every module of the data folder takes them); a run
config's ``data`` node is checked with them. Each setting has one validator, here (or in
:mod:`pipeline.data.settings`): :class:`~pipeline.config.run.RunConfig` types what they
accept, and nothing checks a setting again.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

import numpy as np

# DataSettings and PROTOCOL_DEFAULTS stay importable from here (older imports)
from ..data.settings import PROTOCOL_DEFAULTS, DataSettings, data_settings  # noqa: F401
from ..errors import ConfigError
from ..plain import to_plain

# --------------------------------------------------------------------------- run config
#: the top-level keys of a run config (``conf/config.yaml`` composed; ``splits`` comes from
#: a DVC experiment item, ``experiments`` is the DVC experiment list, ``report`` the report
#: directory of that list (``conf/report_dir/``), ``hydra`` Hydra's own)
RUN_KEYS = (
    "data", "dataset", "datasets", "decoder", "experiments", "geometry", "hydra", "lambdas",
    "model", "n_jobs", "progress", "report", "seed", "set", "splits", "task", "tracking",
    "warm_start",
)  # fmt: skip
#: the keys of the groups of a run config that the pipeline reads (``dataset`` is the
#: registry's, ``set.params`` / ``decoder.params`` the engine's: they check their own)
GROUP_KEYS: dict[str, tuple[str, ...]] = {
    "lambdas": ("high", "low", "num", "ties"),
    "geometry": ("name",),
    "set": ("class", "name", "params"),
    "decoder": ("name", "params"),
    "task": ("datasets", "decoder", "metrics", "name", "select_by", "sweep", "target_loss"),
    "report": ("dir",),
}
#: the keys of each model (``conf/model/<name>.yaml``)
MODEL_KEYS: dict[str, tuple[str, ...]] = {
    "linear": ("fit_intercept", "max_iter", "name", "penalize_intercept", "tol"),
    "poly": ("coef0", "degree", "fit_intercept", "max_iter", "name", "penalize_intercept", "tol"),
    "mlp": (
        "activation", "batch_size", "device", "dropout", "dtype", "early_stopping",
        "hidden_layer_sizes", "learning_rate", "max_iter", "n_iter_no_change", "name", "seed",
        "tol", "validation_fraction",
    ),
    "median": ("name",),
}  # fmt: skip


#: valid values of ``lambdas.ties`` (:func:`pipeline.config.scoring.best_index`)
TIES = ("smallest", "largest")


def _bad(key: str, value: Any, valid: str) -> ConfigError:
    return ConfigError(f"{key}={value!r} is invalid: it must be {valid}")


def _is_number(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool)


def _unknown(key: str, node: Mapping[str, Any], valid: tuple[str, ...]) -> None:
    extra = sorted(set(node) - set(valid))
    if extra:
        names = ", ".join(f"{key}.{k}" for k in extra) if key else ", ".join(extra)
        raise ConfigError(
            f"unknown setting(s) {names}; valid keys{' of ' + key if key else ''}: "
            f"{', '.join(sorted(valid))} (check the spelling; `+key=value` adds a key that "
            "nothing reads)"
        )


def check_run_config(cfg: Mapping[str, Any]) -> None:
    """Check the settings of a run config before any work: unknown keys (top level and
    the groups the pipeline reads, :data:`GROUP_KEYS`, the model's keys and ``tracking``,
    ``data``) and the type and range of each value. Missing keys are left to their
    readers' defaults. Raises :class:`ConfigError` naming the key, the bad value and
    what is valid.

    Examples
    --------
    >>> check_run_config({"seed": 0, "lambdas": {"low": 1e-4, "high": 1e4, "num": 2}})
    >>> check_run_config({"seed": "abc"})
    Traceback (most recent call last):
    ...
    pipeline.errors.ConfigError: seed='abc' is invalid: it must be an integer >= 0 (e.g. seed=0)
    """
    cfg = to_plain(cfg)
    if not isinstance(cfg, Mapping):
        raise ConfigError(f"a run config must be a mapping, got {type(cfg).__name__}")
    _unknown("", cfg, RUN_KEYS)
    for group, valid in GROUP_KEYS.items():
        node = cfg.get(group)
        if node is not None and not isinstance(node, Mapping):
            raise _bad(group, node, f"a mapping with the keys {', '.join(valid)}")
        if node:
            _unknown(group, node, valid)
    if "seed" in cfg:
        seed = cfg["seed"]
        if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
            raise _bad("seed", seed, "an integer >= 0 (e.g. seed=0)")
    for key in ("warm_start", "progress"):
        if key in cfg and not isinstance(cfg[key], bool):
            raise _bad(key, cfg[key], "true or false")
    if "n_jobs" in cfg:
        n = cfg["n_jobs"]
        if isinstance(n, bool) or not isinstance(n, int) or n == 0:
            raise _bad("n_jobs", n, "a non-zero integer (-1: every core, 1: no workers)")
    if cfg.get("lambdas") is not None:
        LambdaGrid.from_config(cfg["lambdas"])
    _check_model(cfg.get("model"))
    if "tracking" in cfg:
        TrackingSettings.from_config(cfg["tracking"])
    if "data" in cfg and isinstance(cfg["data"], Mapping):
        data_settings(cfg["data"])


def _check_model(node: Any) -> None:
    if not isinstance(node, Mapping) or node.get("name") not in MODEL_KEYS:
        return  # composition.validate names the valid models
    _unknown("model", node, MODEL_KEYS[node["name"]])
    checks: dict[str, tuple[Any, str]] = {
        "max_iter": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                     "an integer >= 1"),
        "tol": (lambda v: _is_number(v) and v > 0, "a positive number (e.g. 1e-5)"),
        "degree": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                   "an integer >= 1"),
        "coef0": (lambda v: _is_number(v) and v >= 0, "a number >= 0"),
        "fit_intercept": (lambda v: isinstance(v, bool), "true or false"),
        "penalize_intercept": (lambda v: isinstance(v, bool), "true or false"),
        # the network (model=mlp)
        "hidden_layer_sizes": (lambda v: isinstance(v, list | tuple) and all(
            isinstance(s, int) and not isinstance(s, bool) and s >= 1 for s in v),
            "a list of integers >= 1 (e.g. [100], or [] for no hidden layer)"),
        "activation": (lambda v: v in ("relu", "tanh", "logistic", "identity"),
                       "relu, tanh, logistic or identity"),
        "dropout": (lambda v: _is_number(v) and 0 <= v < 1, "a number in [0, 1)"),
        "batch_size": (lambda v: v == "auto" or (isinstance(v, int) and not isinstance(v, bool)
                       and v >= 1), "an integer >= 1 or auto"),
        "learning_rate": (lambda v: _is_number(v) and v > 0, "a positive number (e.g. 1e-3)"),
        "early_stopping": (lambda v: isinstance(v, bool), "true or false"),
        "validation_fraction": (lambda v: _is_number(v) and 0 < v < 1, "a number in (0, 1)"),
        "n_iter_no_change": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1,
                             "an integer >= 1"),
        "device": (lambda v: v in ("auto", "cpu", "cuda"), "auto, cpu or cuda"),
        "dtype": (lambda v: v in ("float64", "float32"), "float64 or float32"),
        "seed": (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
                 "an integer >= 0"),
    }  # fmt: skip
    for key, (ok, valid) in checks.items():
        if key in node and not ok(node[key]):
            raise _bad(f"model.{key}", node[key], valid)


# --------------------------------------------------------------------------- lambdas
@dataclass(frozen=True)
class LambdaGrid:
    """``lambdas``: the ascending grid ``np.logspace(log10 low, log10 high, num)`` and the
    tie rule of the choice of lambda (:func:`pipeline.config.scoring.best_index`).

    Examples
    --------
    >>> LambdaGrid.from_config({"low": 1e-2, "high": 1.0, "num": 3}).values
    [0.01, 0.1, 1.0]
    >>> LambdaGrid.from_config({"low": 1e-2, "high": 1.0, "num": 3, "ties": "middle"})
    Traceback (most recent call last):
    ...
    pipeline.errors.ConfigError: lambdas.ties='middle' is invalid: it must be smallest or largest
    """

    low: float
    high: float
    num: int
    ties: str = "smallest"

    @classmethod
    def from_config(cls, node: Any) -> LambdaGrid:
        """Validate the ``lambdas`` node: the one check of the grid's settings (a
        :class:`ConfigError` names the key, the bad value and what is valid)."""
        if node is None:
            raise ConfigError("the config needs lambdas: {low: ..., high: ..., num: ...}")
        if not isinstance(node, Mapping):
            keys = ", ".join(GROUP_KEYS["lambdas"])
            raise _bad("lambdas", node, f"a mapping with the keys {keys}")
        for key in ("low", "high"):
            if not _is_number(node.get(key)) or not node[key] > 0:
                raise _bad(f"lambdas.{key}", node.get(key), "a positive number (e.g. 1e-4)")
        low, high, num = node["low"], node["high"], node.get("num")
        if low > high:
            raise ConfigError(
                f"lambdas.low={low!r} > lambdas.high={high!r}: the grid needs 0 < low <= high"
            )
        if isinstance(num, bool) or not isinstance(num, int) or num < 1:
            raise _bad("lambdas.num", num, "an integer >= 1 (the number of grid values)")
        ties = node.get("ties", "smallest")
        if ties not in TIES:
            raise _bad("lambdas.ties", ties, " or ".join(TIES))
        return cls(low=low, high=high, num=num, ties=str(ties))

    @property
    def values(self) -> list[float]:
        """The grid, ascending (floats)."""
        if self.num == 1:
            return [float(self.low)]
        return [float(v) for v in np.logspace(np.log10(self.low), np.log10(self.high), self.num)]


# --------------------------------------------------------------------------- tracking
@dataclass(frozen=True)
class TrackingSettings:
    """The ``tracking`` node of the config (see ``conf/config.yaml``)."""

    enabled: bool = True
    uri: str | None = None
    artifacts: str | None = None
    experiment_prefix: str = "projloss"
    log_models: bool = True
    figures: bool = True
    heatmap_samples: int = 3
    probe_timeout: float = 5.0
    group: str | None = None
    register: bool = False
    #: the lambdas of a tuned run logged as child runs: ``best-<k>`` (the k best by the
    #: run's selection metric, MLflow's ``max_tuning_runs`` convention; 3 by default, where
    #: MLflow takes 5: each child run is three store calls), ``all``, ``none``
    child_runs: str = "best-3"

    @classmethod
    def from_config(cls, node: Mapping[str, Any] | None) -> TrackingSettings:
        """Validate the ``tracking`` node (a :class:`ConfigError` names the bad key)."""
        plain = to_plain(node) or {}
        if not isinstance(plain, Mapping):
            raise ConfigError(f"tracking={plain!r} is invalid: it must be a mapping of settings")
        plain = dict(plain)
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(plain) - known)
        if unknown:
            raise ConfigError(
                f"unknown tracking setting(s) {[f'tracking.{k}' for k in unknown]}; "
                f"valid: {sorted(known)}"
            )
        for key, value in plain.items():
            _check_setting(key, value)
        return cls(**plain)


def _check_setting(key: str, value: Any) -> None:
    """Type and range of one tracking setting (:class:`ConfigError` otherwise)."""
    number = isinstance(value, int | float) and not isinstance(value, bool)
    if key in ("enabled", "log_models", "figures", "register"):
        ok, valid = isinstance(value, bool), "true or false"
    elif key == "probe_timeout":
        ok, valid = number and 0 < value < math.inf, "a positive number of seconds"
    elif key == "heatmap_samples":
        ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
        valid = "an integer >= 0"
    elif key == "child_runs":
        ok = isinstance(value, str) and re.fullmatch(r"all|none|best-[1-9]\d*", value) is not None
        valid = "best-<k> (k >= 1, e.g. best-5), all or none"
    elif key == "experiment_prefix":
        ok, valid = isinstance(value, str) and value.strip() != "", "a non-empty string"
    else:  # uri, artifacts, group
        ok, valid = value is None or isinstance(value, str), "a string or null"
    if not ok:
        raise ConfigError(f"tracking.{key}={value!r} is invalid: it must be {valid}")
