"""A run of an experiment as a sweep over its splits: a plain run is a sweep of one.

Every run of a DVC experiment stage (:mod:`pipeline.runs.stages`) is a list of **units**:
the run on each split it is tuned, refitted and evaluated on. A plain run is one unit, the
run itself (split ``None``); a split sweep (``splits`` of the experiment, as ``ord-splits``:
paper Table 4 over the thirty orreview splits) is one unit per split
(:meth:`~pipeline.config.run.RunConfig.for_split`). The stages handle units only; what
differs between the two -- what is logged to the MLflow parent run, what the tuning JSON,
the models folder and ``results.json`` hold -- is the run's :class:`Shape`, data chosen
once per run (:func:`shape_of`):

- :data:`ONE` (a sweep of one): the unit logs itself, as ``python -m pipeline.train`` does
  (its lambda grid and best child runs, its metrics, files, figures and models),
  recorded in the worker and replayed by the stage
  (:class:`pipeline.runs.tracking.RecordingTracker`); its tuning and models are the unit's
  own;
- :data:`SPLITS` (a sweep of many): the units log nothing (thirty splits would make
  thousands of child runs); the parent run gets each split's chosen lambda, validation and
  test values as metric steps, the mean and std (ddof 0) of the test values, and one
  ``results.json`` with every split; the models of all the splits in one file
  (:func:`pipeline.runs.refit.save_splits`).

The tasks here run in the stages' worker processes (:mod:`pipeline.runs.parallel`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ..config.run import RunConfig

#: a unit's split: None for a plain run (its own data settings)
Split = int | None


class Shape:
    """What a sweep of one (:class:`One`) and a sweep of many (:class:`Splits`) do
    differently, as data: the stages call these methods and never ask which it is.

    ``record``: the units record what they log (replayed into the parent run) and the
    evaluation writes the unit's files (predictions, figures, ``results.json``) in the
    worker; otherwise the stage logs the sweep's summary."""

    record: bool

    def splits(self, run: RunConfig) -> tuple[Split, ...]:
        """The run's units, by split."""
        raise NotImplementedError

    def unit(self, run: RunConfig, split: Split) -> RunConfig:
        """The run of one unit."""
        raise NotImplementedError

    def tuning(self, per_split: Mapping[Split, Mapping[str, Any]]) -> dict[str, Any]:
        """The run's entry ``tune`` of the tuning JSON from its units' tunings."""
        raise NotImplementedError

    def unit_tuning(self, tuning: Mapping[str, Any], split: Split) -> Mapping[str, Any]:
        """A unit's tuning from the run's entry (:meth:`tuning`)."""
        raise NotImplementedError

    def save(self, refitted: Mapping[Split, Any], directory: Path) -> None:
        """Save the units' refitted models to the run's folder of ``models/``."""
        raise NotImplementedError

    def load(self, directory: Path) -> dict[Split, Any]:
        """The units' refitted models (:meth:`save`), by split."""
        raise NotImplementedError

    def log_tuned(self, per_split: Mapping[Split, tuple[dict, list | None]], tracker: Any) -> None:
        """Log the units' tuning (``(tuned, recorded calls)`` by split) to the run's
        parent run."""
        raise NotImplementedError

    def log_evaluated(
        self,
        run: RunConfig,
        per_split: Mapping[Split, tuple[dict, list | None]],
        tuning: Mapping[str, Any],
        record: Mapping[str, Any],
        out_dir: Path,
        tracker: Any,
    ) -> dict[str, Any]:
        """Log the units' test results (``(result, recorded calls)`` by split) to the
        run's parent run; the run's result (``headline``, ``lambda``; ``std`` and
        ``n_splits`` for a sweep of many)."""
        raise NotImplementedError


class One(Shape):
    """A plain run: a sweep of one unit, the run itself, which logs itself (recorded in
    its worker, replayed by the stage); its tuning and models are the unit's own."""

    record = True

    def splits(self, run: RunConfig) -> tuple[Split, ...]:
        return (None,)

    def unit(self, run: RunConfig, split: Split) -> RunConfig:
        return run

    def tuning(self, per_split: Mapping[Split, Mapping[str, Any]]) -> dict[str, Any]:
        return per_split[None]

    def unit_tuning(self, tuning: Mapping[str, Any], split: Split) -> Mapping[str, Any]:
        return tuning

    def save(self, refitted: Mapping[Split, Any], directory: Path) -> None:
        from . import refit

        refit.save(refitted[None], directory)

    def load(self, directory: Path) -> dict[Split, Any]:
        from . import refit

        return {None: refit.load(directory)}

    def log_tuned(self, per_split: Mapping[Split, tuple[dict, list | None]], tracker: Any) -> None:
        """The unit's recorded calls: its lambda grid (and best child runs), the selection."""
        from .tracking import RecordingTracker

        RecordingTracker.replay(per_split[None][1], tracker)

    def log_evaluated(
        self,
        run: RunConfig,
        per_split: Mapping[Split, tuple[dict, list | None]],
        tuning: Mapping[str, Any],
        record: Mapping[str, Any],
        out_dir: Path,
        tracker: Any,
    ) -> dict[str, Any]:
        """The unit's recorded calls (its files are written already)."""
        from .tracking import RecordingTracker

        result, calls = per_split[None]
        RecordingTracker.replay(calls, tracker)
        return result


class Splits(Shape):
    """A split sweep: one unit per split, which log nothing (thirty splits would make
    thousands of child runs); the stage logs the sweep's summary to the parent run, the
    tuning JSON keeps every split's validation curve, the models of all the splits are
    one file (:func:`pipeline.runs.refit.save_splits`)."""

    record = False

    def splits(self, run: RunConfig) -> tuple[Split, ...]:
        return tuple(run.splits or ())

    def unit(self, run: RunConfig, split: Split) -> RunConfig:
        return run.for_split(split)

    def tuning(self, per_split: Mapping[Split, Mapping[str, Any]]) -> dict[str, Any]:
        tuned = {str(s): t for s, t in per_split.items()}
        return {"splits": tuned, "seconds": sum(t["seconds"] for t in tuned.values())}

    def unit_tuning(self, tuning: Mapping[str, Any], split: Split) -> Mapping[str, Any]:
        return tuning["splits"][str(split)]

    def save(self, refitted: Mapping[Split, Any], directory: Path) -> None:
        from . import refit

        refit.save_splits(refitted, directory)

    def load(self, directory: Path) -> dict[Split, Any]:
        from . import refit

        return dict(refit.load_splits(directory))

    def log_tuned(self, per_split: Mapping[Split, tuple[dict, list | None]], tracker: Any) -> None:
        """Each split's chosen lambda and validation value as metric steps (one write)."""
        steps = []
        for split, (t, _) in per_split.items():
            step = {f"val.{m}": sel["value"] for m, sel in t["selected"].items()}
            step.update({f"lambda.{m}": sel["lambda"] for m, sel in t["selected"].items()})
            steps.append(({k: v for k, v in step.items() if v is not None}, int(split)))
        tracker.log_batch(steps)

    def log_evaluated(
        self,
        run: RunConfig,
        per_split: Mapping[Split, tuple[dict, list | None]],
        tuning: Mapping[str, Any],
        record: Mapping[str, Any],
        out_dir: Path,
        tracker: Any,
    ) -> dict[str, Any]:
        """Each split's test values and lambdas as metric steps, their mean and std
        (ddof 0), in one write; one ``results.json`` with every split (no models,
        predictions or figures per split: thirty of each)."""
        import numpy as np

        from .index import write_json  # the run id: in the index, not the output
        from .mlflow_view import lambda_params

        results = {  # a split's time is not a result (the same on every run)
            str(s): {k: v for k, v in r.items() if k != "seconds"}
            for s, (r, _) in per_split.items()
        }
        steps = []
        for split, res in results.items():
            step = {f"test.{m}.split": v for m, v in res["headline"].items()}
            step.update({f"lambda.{m}.split": v for m, v in res["lambda"].items() if v is not None})
            steps.append((step, int(split)))
        first = next(iter(results.values()))
        values = {
            m: np.array([r["headline"][m] for r in results.values()]) for m in first["headline"]
        }
        mean = {m: float(v.mean()) for m, v in values.items()}
        std = {m: float(v.std()) for m, v in values.items()}
        summary = {f"test.{m}": v for m, v in mean.items()}
        summary.update({f"test.{m}.std": v for m, v in std.items()})
        summary["n_splits"] = float(len(results))
        tracker.log_batch([*steps, (summary, None)], params=lambda_params(tuning))
        result = {
            "headline": mean,
            "std": std,
            "lambda": {m: None for m in first["lambda"]},
            "n_splits": len(results),
            "composition": run.composition.tags(),
        }
        write_json(
            out_dir / "results.json",
            {**record, **result, "splits": results, "tune": dict(tuning)},
        )
        return result


#: a plain run: a sweep of one unit, which logs itself
ONE: Shape = One()
#: a split sweep: one unit per split, the stage logs the sweep
SPLITS: Shape = Splits()


def shape_of(run: RunConfig) -> Shape:
    """:data:`SPLITS` for a run with ``splits``, else :data:`ONE` (the one place that
    tells them apart)."""
    return ONE if run.splits is None else SPLITS


def tune_units(units: Sequence[tuple[RunConfig, bool]]) -> list[tuple[dict[str, Any], list | None]]:
    """Tune units that fit the same models (:func:`pipeline.runs.parallel.fit_group_key`;
    one unit alone too), each fit solved once (:func:`projloss.estimators.memoized_fits`:
    the same results, to the last bit, as separate tasks): ``(tuned, recorded calls)``
    per unit (``(run, record)``; calls None when not recorded)."""
    from projloss.estimators import memoized_fits

    from . import parallel

    with memoized_fits():
        return [
            parallel.tune_recorded_task(run) if record else (parallel.tune_task(run), None)
            for run, record in units
        ]


def refit_runs(members: Sequence[tuple[RunConfig, Mapping[str, Any], Path]]) -> None:
    """Refit every unit of each ``(run, tuning entry, models folder)`` of runs that fit
    the same models (:func:`pipeline.runs.parallel.group_by_fit`: a refit at the same
    lambda is solved once) on train + validation, and save each run's models."""
    from projloss.estimators import memoized_fits

    from . import parallel, refit

    with memoized_fits():
        for run, tuning, directory in members:
            shape = shape_of(run)
            refitted = {}
            for split in shape.splits(run):
                unit = shape.unit(run, split)
                refitted[split] = refit.run(
                    unit, parallel.load(unit), shape.unit_tuning(tuning, split)
                )
            shape.save(refitted, directory)


def evaluate_run(
    run: RunConfig,
    tuning: Mapping[str, Any],
    models_dir: Path,
    out_dir: Path,
    record: Mapping[str, Any],
    settings: Any,
) -> dict[Split, tuple[dict[str, Any], list | None]]:
    """Score every unit of a run with its saved models (loaded once) on its test split:
    split -> ``(result, recorded calls)``. A recording unit (:attr:`Shape.record`) writes
    its files to ``out_dir`` with ``record`` (the extra entries of ``results.json``) and
    records what it logs with the tracking ``settings``; the others only score."""
    from . import evaluate, parallel
    from .tracking import RecordingTracker

    shape = shape_of(run)
    models = shape.load(models_dir)
    out: dict[Split, tuple[dict[str, Any], list | None]] = {}
    for split in shape.splits(run):
        unit = shape.unit(run, split)
        recorder = RecordingTracker(settings) if shape.record else None
        result = evaluate.run(
            unit,
            parallel.load(unit),
            shape.unit_tuning(tuning, split),
            models[split],
            recorder,
            out_dir=out_dir if shape.record else None,
            record=record if shape.record else None,
        )
        out[split] = (result, recorder.calls if recorder is not None else None)
    return out
