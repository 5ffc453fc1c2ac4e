"""benchmarks.timing: the interleaved timer."""

from __future__ import annotations

from benchmarks.timing import compare


def test_every_callable_runs_in_every_place_of_the_round() -> None:
    """The order rotates: a fixed order would give one callable the cache state another
    leaves behind in every round (measured: 0.163 vs 0.210 ms for the same ``jnp.clip``)."""
    calls: list[str] = []
    fns = {name: (lambda name=name: calls.append(name)) for name in "abc"}
    out = compare(fns, repeat=6, min_time=0.0, budget=10.0)
    assert all(t.rounds == 6 for t in out.values())
    timed = calls[3:]  # after the first call of each (the warm-up estimate)
    batches = [timed[i : i + 3] for i in range(0, len(timed), 3)]
    assert len(batches) == 6
    assert all(sorted(b) == ["a", "b", "c"] for b in batches)  # each once per round
    for place in range(3):
        assert sorted(b[place] for b in batches) == ["a", "a", "b", "b", "c", "c"]


def test_the_best_round_is_reported() -> None:
    import time

    slow = iter([0.0, 0.02, 0.0, 0.0, 0.0])

    def fn() -> None:
        time.sleep(next(slow, 0.0))

    t = compare({"f": fn}, repeat=4, min_time=0.0, budget=10.0)["f"]
    assert t.best < 0.01  # the 20 ms round is not the one reported
    assert t.median >= t.best
