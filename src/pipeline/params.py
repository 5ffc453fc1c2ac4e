"""``python -m pipeline.params [--check] [override ...]``: regenerate ``params.yaml``.

``params.yaml`` (DVC's params file) is the composition of ``conf/config.yaml``, resolved
and without the ``hydra`` node: exactly what ``dvc exp run -S key=value`` writes with its
Hydra integration (``.dvc/config``: ``[hydra] enabled = true``), so the two never differ.
``make params`` runs this; ``--check`` only compares and exits 1 when the file is stale.

``$PROJLOSS_MIRROR`` is ignored while composing, so the committed file records the default
mirror on every machine (the DVC stages still honour the variable, see
:func:`pipeline.config.experiments.data_node`).
"""

from __future__ import annotations

import argparse
import difflib
import sys
from collections.abc import Sequence
from pathlib import Path

from .config.experiments import compose_params, params_path

__all__ = ["compose_params", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(prog="python -m pipeline.params", description=__doc__)
    parser.add_argument("overrides", nargs="*", help="Hydra overrides, e.g. experiments=smoke")
    parser.add_argument("--check", action="store_true", help="compare only; exit 1 if stale")
    parser.add_argument("--output", type=Path, default=None, help="default: <root>/params.yaml")
    args = parser.parse_args(argv)
    from .lifecycle import command

    with command("python -m pipeline.params"):  # a bad PROJLOSS_ROOT, ...: one line
        path = args.output or params_path()
        text = compose_params(args.overrides)
    current = path.read_text(encoding="utf-8") if path.is_file() else ""
    if args.check:
        if current != text:
            diff = difflib.unified_diff(
                current.splitlines(), text.splitlines(), str(path), "composition", lineterm=""
            )
            print("\n".join(diff))
            print(f"{path} is stale: run `make params` (python -m pipeline.params)")
            sys.exit(1)
        print(f"{path} is up to date")
        return
    if current != text:
        from .fileio import write_text

        write_text(path, text)
        print(f"wrote {path}")
    else:
        print(f"{path} is up to date")


if __name__ == "__main__":
    main()
