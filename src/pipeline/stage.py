"""``python -m pipeline.stage <stage> [experiment]``: the commands of ``dvc.yaml``.

Every setting comes from ``params.yaml`` (DVC's params file: the composition of
``conf/config.yaml``, see :mod:`pipeline.params`), never from the command line, so that
what DVC tracks is what runs::

    python -m pipeline.stage fetch              # params: datasets -> data/raw/
    python -m pipeline.stage preprocess         # params: datasets, data.* -> data/prepared/
    python -m pipeline.stage tune t1-iris       # -> data/tuning/t1-iris.json
    python -m pipeline.stage refit t1-iris      # -> models/t1-iris/<run>/
    python -m pipeline.stage evaluate t1-iris   # -> metrics/t1-iris.json, data/eval/t1-iris/,
                                                #    <report.dir>/inputs/t1-iris.json

The command only: the stages are in :mod:`pipeline.runs` (``data_stages``, ``stages``: a
plain run is a sweep of one). Errors are one line and exit status 1; a stage
gets SIGTERM when its parent (``dvc``) dies (:mod:`pipeline.lifecycle`).
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

log = logging.getLogger("pipeline.stage")

STAGES = ("fetch", "preprocess", "tune", "refit", "evaluate")
EXPERIMENT_STAGES = ("tune", "refit", "evaluate")
#: the stages that run in their own process while the preload server is still importing
#: (they need little of what it imports; the others wait for it)
LIGHT_STAGES = ("fetch", "preprocess")


def stage_data(params: Mapping[str, Any]) -> dict[str, Any]:
    """:func:`pipeline.runs.data_stages.stage_data`."""
    from .runs.data_stages import stage_data as core

    return core(params)


def fetch(params: Mapping[str, Any]) -> None:
    """Fetch the ``datasets`` selection (:func:`pipeline.runs.data_stages.fetch`)."""
    from .runs.data_stages import fetch as core

    core(params)


def preprocess(params: Mapping[str, Any]) -> None:
    """Prepare it (:func:`pipeline.runs.data_stages.preprocess`)."""
    from .runs.data_stages import preprocess as core

    core(params)


def tune(params: Mapping[str, Any], key: str) -> Path:
    """Tune every run of ``key`` (:func:`pipeline.runs.stages.tune`)."""
    from .runs.stages import tune as core

    return core(params, key)


def refit(params: Mapping[str, Any], key: str) -> Path:
    """Refit every run of ``key`` (:func:`pipeline.runs.stages.refit`)."""
    from .runs.stages import refit as core

    return core(params, key)


def evaluate(params: Mapping[str, Any], key: str) -> Path:
    """Evaluate every run of ``key`` (:func:`pipeline.runs.stages.evaluate`)."""
    from .runs.stages import evaluate as core

    return core(params, key)


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        prog="python -m pipeline.stage", description="Run one DVC stage from params.yaml."
    )
    parser.add_argument("stage", choices=STAGES)
    parser.add_argument("experiment", nargs="?", help="experiment key (tune/refit/evaluate)")
    parser.add_argument("--params", type=Path, default=None, help="default: <root>/params.yaml")
    if argv is None:  # the command line: in a child of the preload server if there is one
        from .preload import delegate

        status = delegate(wait=not set(sys.argv[1:2]) & set(LIGHT_STAGES))
        if status is not None:
            sys.exit(status)
    args = parser.parse_args(argv)
    if args.stage in EXPERIMENT_STAGES and not args.experiment:
        parser.error(f"the {args.stage} stage needs an experiment key")
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    start = time.perf_counter()
    # One BLAS thread for the whole stage: the fits are small, and on a busy machine a
    # multi-threaded OpenBLAS spin-waits (measured: polynomial-kernel fits 10x slower on
    # a 2-core machine with one core taken). The solver limits its own loop already.
    from threadpoolctl import threadpool_limits

    from .lifecycle import (
        command,
        die_with_parent,
        keep_freed_memory,
        mark_done,
        register_exit_handler,
    )

    if argv is None:  # the command line (not an in-process call)
        die_with_parent()  # a stage never outlives its dvc process
        keep_freed_memory()  # this process and its forked workers
        register_exit_handler()  # before the stage's imports: the last exit handler to run
    name = f"stage {args.stage}" + (f"@{args.experiment}" if args.experiment else "")
    resume = "dvc repro resumes the DVC pipeline"
    with command(name, resume), threadpool_limits(limits=1, user_api="blas"):
        _run_stage(args)
    from . import preload

    how = "in the preload server's fork" if preload.IN_CHILD else "imports included"
    log.info("%s done in %.1f s (%s)", name, time.perf_counter() - start, how)
    mark_done()


def _run_stage(args: argparse.Namespace) -> None:
    from .config.experiments import load_params

    params = load_params(args.params)
    if args.stage == "fetch":
        fetch(params)
    elif args.stage == "preprocess":
        preprocess(params)
    else:
        stage = {"tune": tune, "refit": refit, "evaluate": evaluate}[args.stage]
        stage(params, args.experiment)


if __name__ == "__main__":
    main()
