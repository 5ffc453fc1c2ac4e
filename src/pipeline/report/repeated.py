"""``python -m pipeline.report.repeated targets|report [--repeats R]``: the repeated splits.

``targets`` prints the DVC stages ``make repro-repeated`` reproduces (:func:`targets`);
``report`` builds ``reports/repeated/`` from their results
(:mod:`pipeline.report.repeated_report`), or with ``--from-splits reports/repeated/splits.csv``
from the committed per-split values alone. The runs of each seed: :mod:`.seeds`.
"""

from __future__ import annotations

from .seeds import LIST, REPEATS, SWEEPS, repeated_experiments, seed_keys, targets

__all__ = ["LIST", "REPEATS", "SWEEPS", "main", "repeated_experiments", "seed_keys", "targets"]


def main(argv: list[str] | None = None) -> None:
    """``python -m pipeline.report.repeated targets|report [--repeats R]``."""
    import argparse

    parser = argparse.ArgumentParser(prog="python -m pipeline.report.repeated")
    parser.add_argument("command", choices=("targets", "report"))
    parser.add_argument("--repeats", type=int, default=REPEATS, help="splits per dataset")
    parser.add_argument(
        "--only", choices=("paper", "seeds"), help="targets: the paper's experiments, or the seeds"
    )
    parser.add_argument("--no-tracking", action="store_true", help="do not log to MLflow")
    parser.add_argument(
        "--from-splits",
        metavar="CSV",
        help="build reports/repeated/ from this splits.csv alone (no tracked results read)",
    )
    args = parser.parse_args(argv)
    if args.command == "targets":
        print(" ".join(targets(args.repeats, only=args.only)))
        return
    from ..lifecycle import command
    from .repeated_report import cli_report

    with command("python -m pipeline.report.repeated"):  # a bad PROJLOSS_ROOT: one line
        cli_report(args.repeats, tracking=not args.no_tracking, from_splits=args.from_splits)


if __name__ == "__main__":
    main()
