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
    assert run.main(["--list"]) == 0
    assert "intra_op_parallelism_threads=1" in os.environ["XLA_FLAGS"]
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
