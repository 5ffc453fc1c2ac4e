"""The optional JAX section: skipped with one clear line when JAX is not installed (CI
does not install it), listed among the sections, and its jaxopt PAV workaround."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

from benchmarks import jax_baselines, run
from benchmarks.registry import Context


@pytest.mark.parametrize("missing", ["jax", "jaxopt", "optax"])
def test_section_is_skipped_with_one_line_without_jax(monkeypatch, missing):
    monkeypatch.setitem(sys.modules, missing, None)  # import of it raises ImportError
    for var in ("XLA_FLAGS", "JAX_PLATFORMS"):  # load_jax sets them: restored after
        monkeypatch.setenv(var, "")
    assert jax_baselines.load_jax() is None
    lines: list[str] = []
    res = jax_baselines.run(Context(quick=True, log=lines.append))
    assert res.markdown == jax_baselines.SKIP_LINE
    assert res.checks == [] and res.data == {}
    assert lines == ["  " + jax_baselines.SKIP_LINE]
    assert "JAX is not installed" in lines[0] and ".[bench]" in lines[0]


def test_section_is_registered(capsys, monkeypatch):
    for var in ("XLA_FLAGS", "JAX_PLATFORMS"):  # run.main sets them: restored after
        monkeypatch.setenv(var, "")
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    assert run.main(["--list"]) == 0
    assert "intra_op_parallelism_threads=1" in os.environ["XLA_FLAGS"]
    assert os.environ["PJRT_NPROC"] == "1"  # XLA's CPU thread pools: one thread
    assert any(line.startswith("jax ") for line in capsys.readouterr().out.splitlines())


def test_writable_pav_copies_read_only_input():
    calls = []

    class Module:
        @staticmethod
        def _isotonic_l2_pav_numba(y):
            calls.append(y.flags.writeable)
            y[0] = y[0]  # the numba kernel writes to (its copy of) y
            return y

    jax_baselines._writable_pav(Module)
    jax_baselines._writable_pav(Module)  # idempotent: one wrapper
    y = np.arange(3.0)
    y.flags.writeable = False
    np.testing.assert_array_equal(Module._isotonic_l2_pav_numba(y), [0.0, 1.0, 2.0])
    assert calls == [True]


@pytest.mark.skipif(
    not hasattr(os, "sched_getaffinity") or len(os.sched_getaffinity(0)) < 2,
    reason="needs a process that may run on two CPUs",
)
def test_pinned_pins_every_thread_and_restores_them():
    """A thread started before the block (as XLA's workers may be) is pinned too:
    ``os.sched_setaffinity(0, ...)`` alone would pin the calling thread only."""
    import threading

    saved = os.sched_getaffinity(0)
    started, stop = threading.Event(), threading.Event()
    ids: list[int] = []

    def worker() -> None:
        ids.append(threading.get_native_id())
        started.set()
        stop.wait(10)

    t = threading.Thread(target=worker)
    t.start()
    try:
        started.wait(10)
        assert os.sched_getaffinity(ids[0]) == saved
        with jax_baselines._Pinned():
            assert os.sched_getaffinity(0) == {min(saved)}
            assert os.sched_getaffinity(ids[0]) == {min(saved)}
        assert os.sched_getaffinity(0) == saved
        assert os.sched_getaffinity(ids[0]) == saved
    finally:
        stop.set()
        t.join()


def test_pairs_times_each_peer_with_ours_alone():
    """Each peer is timed in its own interleaved pair with ``ours``; a peer may carry
    any label (also one the pair uses inside)."""
    calls = {"ours": 0, "a": 0, "b": 0}

    def counting(name):
        def f():
            calls[name] += 1

        return f

    ctx = Context(quick=True)
    t = jax_baselines._pairs(ctx, counting("ours"), {"ours": counting("a"), "b": counting("b")})
    assert set(t) == {"ours", "b"}
    assert all(ours > 0 and peer > 0 for ours, peer in t.values())
    assert min(calls.values()) > 0  # each peer ran, under its own label
