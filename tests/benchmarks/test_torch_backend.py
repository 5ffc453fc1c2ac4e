"""The "torch" section (projloss.torch on the CPU against the engine and the torch
peers) at tiny sizes: every set x geometry timed, the checks, the skip without torch."""

from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch")

from benchmarks import run, torch_backend  # noqa: E402
from benchmarks.registry import Context  # noqa: E402
from projloss import SETS  # noqa: E402

TINY = {
    "n": 200,
    "n_tensor": 40,
    "vector_k": (4,),
    "matrix_k": (3,),
    "birkhoff_k": (3,),
    "birkhoff_n": 20,
}


def _ctx(lines: list[str], **kw) -> Context:
    return Context(quick=True, repeat=1, min_time=0.001, log=lines.append, **kw)


def test_cases_cover_every_pair():
    keys = {c.key for c in torch_backend.cases(10)}
    assert keys == {f"{n}/{g}" for n, cls in SETS.items() for g in cls.geometries}
    assert len(keys) == 19
    assert {c.k for c in torch_backend.cases(10) if c.name == "birkhoff"} == {11}
    knap = torch_backend.make_set("knapsack", 100)
    assert (knap.lower, knap.upper) == (20, 20)  # the capped simplex, as the jax section


def test_section_at_tiny_sizes():
    lines: list[str] = []
    res = torch_backend.measure(_ctx(lines), TINY)
    md = res.markdown
    assert "### projloss.torch (engine path) against the engine, n = 200" in md
    assert "### The tensor algorithms on the CPU, n = 40" in md
    for name, cls in SETS.items():
        for g in cls.geometries:
            assert f"| {name}/{g} |" in md
            assert (
                res.data[
                    f"torch/{name}/{g}/k={3 if cls.matrix else 4}/n="
                    f"{20 if name == 'birkhoff' else 200}/torch"
                ]
                > 0
            )
    assert [c.status in ("PASS", "FAIL") for c in res.checks] == [True, True]
    assert all(c.value > 0 and not c.higher_is_better for c in res.checks)
    assert "CPU time / wall time" in md
    P = torch_backend.peers_available()
    if P["entmax"] is not None:
        assert "entmax.sparsemax" in md and "F.cross_entropy + backward" in md
    if P["torchsort"] is not None:
        assert "torchsort.soft_rank (l2) + backward" in md
    if P["entmax"] is None and P["torchsort"] is None:
        assert "not measured" in md
    assert torch.get_num_threads() >= 1  # restored after the section


def test_only_sets_and_missing_peers(monkeypatch):
    monkeypatch.setitem(sys.modules, "entmax", None)
    monkeypatch.setitem(sys.modules, "torchsort", None)
    P = torch_backend.peers_available()
    assert P["entmax"] is None and "Error: " in P["entmax_why"]
    lines: list[str] = []
    res = torch_backend.measure(_ctx(lines, only_sets=("simplex",)), TINY)
    assert "| simplex/euclidean |" in res.markdown and "| knapsack/" not in res.markdown
    assert "`entmax` not measured (ModuleNotFoundError" in res.markdown
    assert "torch.softmax" in res.markdown  # the built-in peers stay


def test_section_is_skipped_without_torch(monkeypatch):
    monkeypatch.setitem(sys.modules, "torch", None)
    lines: list[str] = []
    res = torch_backend.run(_ctx(lines))
    assert res.markdown == torch_backend.SKIP_TORCH and res.checks == []
    assert lines == ["  " + torch_backend.SKIP_TORCH]


def test_sections_are_registered(capsys, monkeypatch):
    for var in ("XLA_FLAGS", "JAX_PLATFORMS"):  # run.main sets them: restored after
        monkeypatch.setenv(var, "")
    monkeypatch.delenv("PJRT_NPROC", raising=False)
    assert run.main(["--list"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines() if line]
    assert "torch" in names and "gpu" in names
