"""``python -m pipeline.report``: build ``reports/`` and log it to MLflow.

Reads the evaluate stage's results under ``data/eval/`` (and one saved model for Figure
3), writes the tables, figures and README into ``reports/`` (``--out``), and logs the
files as the artifacts of one run of the MLflow experiment ``<prefix>/report`` (tracking
settings from params.yaml; ``--no-tracking`` to skip). The DVC stage ``report`` runs it.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from collections.abc import Sequence
from pathlib import Path

log = logging.getLogger("pipeline.report")


def main(argv: Sequence[str] | None = None) -> None:
    from ..paths import project_root

    parser = argparse.ArgumentParser(prog="python -m pipeline.report", description=__doc__)
    parser.add_argument(
        "--out", type=Path, default=None, help="default: params.yaml report.dir (reports)"
    )
    parser.add_argument("--no-tracking", action="store_true", help="do not log to MLflow")
    parser.add_argument("--no-figures", action="store_true", help="tables and README only")
    if argv is None:  # the command line: in a child of the preload server if there is one
        from ..preload import delegate

        status = delegate(target="pipeline.report.__main__:main")
        if status is not None:
            sys.exit(status)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s", stream=sys.stdout)
    from .._hydra import expected_errors
    from .build import build_report

    start = time.perf_counter()
    try:
        root = project_root()  # a bad PROJLOSS_ROOT: one line too
        out, experiments = _destination(root, args.out)
        _note_stale_inputs(out, experiments)
        report = build_report(
            root,
            out,
            figures=not args.no_figures,
            experiments=experiments,
            tracking_uri=_tracking_uri(),
        )
        for f in report.findings:
            holds = {True: "holds", False: "DOES NOT HOLD", None: "not run"}[f["holds"]]
            log.info("%s: %s (%s)", f["claim"], holds, f["evidence"])
        log.info(
            "wrote %d files to %s in %.1f s", len(report.files), out, time.perf_counter() - start
        )
        if not args.no_tracking:
            _log(report.files, report.findings)
    except expected_errors() as exc:
        log.error("error: %s", exc)
        sys.exit(1)


def _destination(root: Path, out: Path | None) -> tuple[Path, list[str] | None]:
    """The report directory (``--out``, else params.yaml ``report.dir``: each experiment
    list chooses its own, ``reports`` for the paper's) and the experiment keys of
    params.yaml (None without a params.yaml)."""
    from ..config.experiments import load_params, params_path
    from ..paths import resolve

    if not params_path().is_file():
        return out or root / "reports", None
    params = load_params()
    experiments = list(params.get("experiments") or {}) or None
    if out is None:
        out = resolve((params.get("report") or {}).get("dir", "reports"), root)
    return out, experiments


def stale_inputs(out: Path, experiments: Sequence[str]) -> list[str]:
    """The manifests in the report directory ``out``'s ``inputs/`` (the report stage's
    dependency: one per experiment of the list, written by ``evaluate@<key>``,
    :mod:`pipeline.runs.manifest`) of experiments that ``experiments`` does not name: left
    by an experiment since removed from the list. The report does not read them, but the
    stage depends on the whole folder."""
    from ..runs.manifest import INPUTS

    folder = out / INPUTS
    if not folder.is_dir():
        return []
    keys = set(experiments)
    return [
        str(p.relative_to(out))
        for p in sorted(folder.glob("*.json"))
        if p.is_file() and p.stem not in keys
    ]


def _note_stale_inputs(out: Path, experiments: Sequence[str] | None) -> None:
    """One warning line naming :func:`stale_inputs` and the remedy."""
    stale = stale_inputs(out, experiments) if experiments else []
    if stale:
        shown = ", ".join(stale[:6]) + (f" and {len(stale) - 6} more" if len(stale) > 6 else "")
        log.warning(
            "warning: manifests of experiments that params.yaml does not list in %s: %s; "
            "the report does not read them, but its DVC stage depends on that folder: "
            "delete them",
            out,
            shown,
        )


def _tracking_uri() -> str | bool | None:
    """The tracking store the report's runs.csv reads run names from: params.yaml
    ``tracking.uri`` (None: the default store), False when tracking is off."""
    from ..config.experiments import load_params, params_path

    if not params_path().is_file():
        return None
    tracking = load_params().get("tracking") or {}
    return tracking.get("uri") if tracking.get("enabled", True) else False


def _log(files: list[Path], findings: list[dict]) -> None:
    """One run of ``<prefix>/report`` with the report files as artifacts."""
    from ..config.experiments import load_params
    from ..runs.mlflow_tracker import make_tracker

    params = load_params()
    tracker = make_tracker(params.get("tracking"))
    if not tracker.enabled:
        return
    metrics = {
        f"finding.{i}": float(f["holds"]) for i, f in enumerate(findings) if f["holds"] is not None
    }
    with tracker.parent_run(task="report", name="paper report", tags={"entry_point": "report"}):
        tracker.log_metrics(metrics)
        for path in files:
            tracker.log_artifact(path, "reports")
    log.info("logged the report to MLflow (%s)", tracker.uri)


if __name__ == "__main__":
    main()
