"""A robust timer for side-by-side measurements on a shared, possibly loaded machine.

:func:`compare` times several callables *interleaved*: each round runs every callable once
(each batched into enough calls to last ``min_time``), so load changes hit all of them
alike. The order rotates from round to round: where a callable runs in the round decides
the state of the caches it starts with (a memory-bound call that comes right after
another has freed a buffer of its size gets that buffer back, still in cache: measured
on the unit cube at n = 10^4, k = 100, 0.163 ms against 0.210 ms for the same
``jnp.clip``), so no callable keeps the best or the worst place. The best round
estimates the cost without interference (the figure reported), the median shows how
noisy the run was. ``time.perf_counter`` throughout.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass
class Timing:
    """Seconds per call: best and median over the rounds."""

    best: float
    median: float
    calls: int  #: calls per round
    rounds: int


def _once(fn: Callable[[], Any], number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def compare(
    fns: dict[str, Callable[[], Any]],
    *,
    repeat: int = 5,
    min_time: float = 0.05,
    budget: float = 20.0,
) -> dict[str, Timing]:
    """Time each callable (seconds per call), interleaving the rounds.

    A first call of each callable warms it up and estimates its cost; calls are then
    grouped so that one round lasts about ``min_time``; rounds stop after ``repeat`` or
    once ``budget`` seconds are spent (at least one timed round each).
    """
    est = {}
    for name, fn in fns.items():
        est[name] = _once(fn, 1)
    number = {n: max(1, int(min_time / max(t, 1e-9))) for n, t in est.items()}
    per_round = sum(number[n] * est[n] for n in fns)
    rounds = max(1, min(repeat, int(budget / max(per_round, 1e-9))))
    samples: dict[str, list[float]] = {n: [] for n in fns}
    names = list(fns)
    for r in range(rounds):
        # each round starts one callable later: every callable runs in every place of the
        # round (after each of the others) as often as the others do
        for name in names[r % len(names) :] + names[: r % len(names)]:
            samples[name].append(_once(fns[name], number[name]))
    out = {}
    for name, xs in samples.items():
        xs = sorted(xs)
        # A single slow call is its own warm-up: keep the better of it and the round.
        best = min(xs[0], est[name]) if number[name] == 1 else xs[0]
        out[name] = Timing(best, xs[len(xs) // 2], number[name], rounds)
    return out


def best_of(
    fn: Callable[[], Any], repeat: int, clock: Callable[[], float] = time.perf_counter
) -> tuple[float, Any]:
    """The shortest of ``repeat`` calls of ``fn`` (seconds of ``clock``) and the last
    call's result: for slow calls timed one at a time (:func:`compare` batches and
    interleaves fast ones).

    Examples
    --------
    >>> seconds, out = best_of(lambda: sum(range(1000)), repeat=3, clock=time.process_time)
    >>> out, seconds >= 0
    (499500, True)
    """
    best, out = float("inf"), None
    for _ in range(repeat):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
    return best, out


def wait_for_load(max_load: float, timeout: float, log: Callable[[str], None]) -> float:
    """Sleep (up to ``timeout`` s) until the 1-minute load average is below ``max_load``."""
    import os

    t0 = time.perf_counter()
    load = os.getloadavg()[0]
    while load > max_load and time.perf_counter() - t0 < timeout:
        log(f"  load average {load:.2f} > {max_load:g}: waiting...")
        time.sleep(min(15.0, timeout))
        load = os.getloadavg()[0]
    return load
