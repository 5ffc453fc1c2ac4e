"""Plain containers: the one conversion of a config (OmegaConf or mapping) to dict/list."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def to_plain(obj: Any) -> Any:
    """A plain ``dict``/``list`` copy of ``obj`` (OmegaConf containers resolved).

    >>> to_plain({"a": (1, 2), "b": {"c": None}})
    {'a': [1, 2], 'b': {'c': None}}
    """
    if type(obj).__module__.startswith("omegaconf"):  # DictConfig / ListConfig
        from omegaconf import OmegaConf

        return OmegaConf.to_container(obj, resolve=True)
    if isinstance(obj, Mapping):
        return {k: to_plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [to_plain(v) for v in obj]
    return obj
