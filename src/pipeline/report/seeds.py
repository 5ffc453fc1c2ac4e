"""The repeated-split runs: which experiments hold seed ``s`` of a paper experiment
(the command is :mod:`pipeline.report.repeated`).

The list ``conf/experiments/paper-repeated.yaml`` holds the paper's experiments (seed 0:
``lr``, ``ml``, ``ml-tmc2007_500``; Table 4's thirty splits: ``ord-splits``) and, for
each seed ``s >= 1``, ``<key>-seed<s>``: the same runs with ``data: {seed: s}``.
:func:`seed_keys` reads that structure from the composed list (any experiment whose
``data.seed`` is set is a repeat of the experiment named before ``-seed``), so a user who
adds a dataset to ``lr`` (``conf/dataset/`` + the list) gets it in every repeat.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

#: the experiment list of the repeated splits (conf/experiments/)
LIST = "paper-repeated"
#: the default number of splits per dataset (seeds 0..R-1)
REPEATS = 10
#: the split sweeps of the list (every orreview split): reused as they are
SWEEPS = ("ord-splits",)
_SEEDED = re.compile(r"^(?P<base>.+)-seed(?P<seed>\d+)$")


def repeated_experiments(overrides: tuple[str, ...] = ()) -> dict[str, Any]:
    """The experiments of the list ``paper-repeated`` (composed as params.yaml would be)."""
    import yaml

    from ..config.experiments import compose_params

    params = yaml.safe_load(compose_params([f"experiments={LIST}", *overrides]))
    return dict(params.get("experiments") or {})


def seed_keys(experiments: Mapping[str, Any], repeats: int) -> dict[str, dict[int, str]]:
    """Base experiment -> seed -> the experiment key that runs it (seeds ``< repeats``).

    Seed 0 of a base is the base itself; ``<base>-seed<s>`` must set ``data.seed: s``."""
    out: dict[str, dict[int, str]] = {}
    for key, item in experiments.items():
        m = _SEEDED.match(key)
        if m is None:
            continue
        seed = int(m["seed"])
        data = (item or {}).get("data") or {}
        if data.get("seed") != seed:
            raise ValueError(
                f"experiment {key!r}: its data.seed is {data.get('seed')!r}, not {seed}; "
                f"a repeat <key>-seed<s> runs with data: {{seed: s}}"
            )
        base = m["base"]
        if base not in experiments:
            raise ValueError(f"experiment {key!r} repeats {base!r}, which is not in the list")
        if seed < repeats:
            out.setdefault(base, {0: base})[seed] = key
    return {b: dict(sorted(s.items())) for b, s in sorted(out.items())}


def targets(
    repeats: int = REPEATS, experiments: Mapping[str, Any] | None = None, only: str | None = None
) -> list[str]:
    """The DVC stages ``make repro-repeated`` reproduces: evaluate@<key> of every seed
    below ``repeats`` and of the split sweeps (dvc repro runs their upstream stages).
    ``only="paper"``: those of the paper's own experiments (seed 0, the sweeps), which
    ``make repro-repeated`` runs under the paper's params.yaml (their stages write their
    manifest to the paper's report directory: run under the repeated list, which has its
    own, they would run again); ``only="seeds"``: the others (seeds >= 1)."""
    experiments = repeated_experiments() if experiments is None else experiments
    keys = [
        (k, s == 0) for seeds in seed_keys(experiments, repeats).values() for s, k in seeds.items()
    ]
    keys += [(k, True) for k in SWEEPS if k in experiments]
    if only not in (None, "paper", "seeds"):
        raise ValueError(f"only={only!r}: None, 'paper' or 'seeds'")
    return [f"evaluate@{k}" for k, paper in keys if only is None or paper == (only == "paper")]
