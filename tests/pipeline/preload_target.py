"""A stand-in stage for ``test_preload.py`` (run in a child of the preload server):
prints ``ready <pid> <ppid>``, then sleeps until a signal: SIGINT (``KeyboardInterrupt``)
prints ``interrupted`` and exits 130; SIGTERM writes the file named by ``$MARKER`` and
exits 143. With an argument ``exit:N`` it prints its argv, directory, ``$PRELOAD_TEST`` and
parent PID and exits N at once; with ``kernels`` it prints how many of the engine's compiled
kernels the process has loaded (``kernels N``), with ``skops`` whether it has imported
``skops.io`` (``skops 0|1``), and exits 0."""

from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path


def loaded_kernels() -> int:
    """The engine's numba dispatchers in this process with a compiled signature."""
    if "numba" not in sys.modules:
        return 0
    from numba.core.dispatcher import Dispatcher

    found = {
        id(value)
        for name, module in list(sys.modules.items())
        if name.startswith("projloss") and module is not None
        for value in vars(module).values()
        if isinstance(value, Dispatcher) and value.signatures
    }
    return len(found)


def main() -> None:
    if sys.argv[1:] == ["kernels"]:
        print("kernels", loaded_kernels(), flush=True)
        return
    if sys.argv[1:] == ["skops"]:
        print("skops", int("skops.io" in sys.modules), flush=True)
        return
    if sys.argv[1:] and sys.argv[1].startswith("exit:"):
        env = os.environ.get("PRELOAD_TEST")
        print("argv", *sys.argv[1:], "cwd", os.getcwd(), "env", env, "ppid", os.getppid())
        sys.exit(int(sys.argv[1].split(":")[1]))

    def terminated(signum: int, frame: object) -> None:
        Path(os.environ["MARKER"]).write_text("terminated", encoding="utf-8")
        os._exit(143)

    signal.signal(signal.SIGTERM, terminated)
    try:
        print("ready", os.getpid(), os.getppid(), flush=True)
        time.sleep(120)
    except KeyboardInterrupt:
        print("interrupted", flush=True)
        sys.exit(130)
