"""The "gpu" section: NOT MEASURED without a CUDA device, its checks, and a dry run of
its whole code path on the CPU at tiny sizes (``python -m benchmarks.gpu --device cpu``)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from benchmarks import gpu, gpu_jax  # noqa: E402
from benchmarks.registry import Context  # noqa: E402
from projloss import SETS  # noqa: E402


def test_not_measured_without_cuda(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    lines: list[str] = []
    res = gpu.run(Context(quick=True, log=lines.append))
    assert res.markdown.startswith("**Not measured: no CUDA device.**")
    assert "--device cpu" in res.markdown
    assert [c.status for c in res.checks] == ["NOT MEASURED"] * 3
    assert lines == ["  not measured: no CUDA device."]
    assert res.data == {}


def test_checks_from_ratios():
    checks = gpu.checks_of(
        {
            "peer": (1.2, "simplex/kl k=10 n=10000 vs torch.softmax"),
            "birkhoff_kl": (4.0, "k=11 n=100000"),
            "loss": (1.5, "simplex/kl k=10"),
        },
        "NVIDIA H100",
    )
    assert [c.status for c in checks] == ["PASS", "FAIL", "PASS"]
    assert checks[0].detail == "worst: simplex/kl k=10 n=10000 vs torch.softmax; NVIDIA H100"
    assert not checks[2].higher_is_better and checks[2].goal == 2.0
    assert checks[1].goal == 5.0


def test_dry_run_on_the_cpu(monkeypatch, tmp_path, capsys):
    """Every pair, its torch peers, the loss + backward and the engine, through the same
    code as on a GPU; the JAX child is stubbed (tested apart)."""
    seen = []

    def fake_jax(todo, device, dtype, seed, rounds, min_time, log):
        seen.append((device, dtype, [gpu.case_id(c) for c in todo]))
        return {"cases": {gpu.case_id(todo[0]): {"jax peer": [1e-3, "diff 0e+00"]}}}

    monkeypatch.setattr(gpu, "jax_peers", fake_jax)
    out = tmp_path / "gpu.md"
    assert gpu.main(["--device", "cpu", "--output", str(out)]) == 0
    md = out.read_text()
    assert "Device: the CPU (dry run)" in md
    for name, cls in SETS.items():
        for g in cls.geometries:
            assert f"| {name}/{g} |" in md
    assert "jax peer: " in md
    assert seen and seen[0][0] == "cpu" and seen[0][1] == "float64"
    assert all(c.split("/")[0] + "/" + c.split("/")[1] in gpu.JAX_KEYS for c in seen[0][2])
    assert "projloss CPU engine" in md and "POT bregman_log_projection_batch" in md
    assert md.count("NOT MEASURED") == 3  # a dry run never passes or fails the checks
    # the tensor algorithms ran (not the engine), and the backend is restored
    import projloss.torch as pt

    assert pt.get_cpu_backend() == "engine"


def test_cuda_requested_without_cuda(monkeypatch, capsys):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert gpu.main(["--device", "cuda"]) == 2
    assert gpu.NOT_MEASURED in capsys.readouterr().err


def test_jax_child_without_jax(tmp_path, monkeypatch):
    """The child process answers ``skipped`` when JAX is missing (CI), in-process here."""
    import sys

    monkeypatch.setitem(sys.modules, "jax", None)
    spec = {
        "device": "cpu",
        "dtype": "float64",
        "seed": 0,
        "rounds": 1,
        "min_time": 0.001,
        "diff_n": 10,
        "cases": [["simplex", "euclidean", 4, 16]],
    }
    (tmp_path / "spec.json").write_text(json.dumps(spec))
    assert gpu_jax.main([str(tmp_path / "spec.json"), str(tmp_path / "out.json")]) == 0
    out = json.loads((tmp_path / "out.json").read_text())
    assert out == {"skipped": "jax, jaxopt or optax not installed (the bench extra)"}


@pytest.mark.skipif(
    any(__import__("importlib").util.find_spec(m) is None for m in ("jax", "jaxopt", "optax")),
    reason="needs jax, jaxopt and optax (the bench extra)",
)
def test_jax_child_with_jax():
    todo = [gpu.Case("simplex", "euclidean", 4, 16), gpu.Case("birkhoff", "kl", 3, 8)]
    res = gpu.jax_peers(todo, "cpu", "float64", 0, 1, 0.001, lambda msg: None)
    assert set(res["cases"]) == {gpu.case_id(c) for c in todo}
    simplex = res["cases"][gpu.case_id(todo[0])]
    assert simplex["optax projection_simplex"][0] > 0
    assert simplex["optax projection_simplex"][1] in ("diff 0e+00", "diff 1e-16", "diff 2e-16")
    assert any(
        label.startswith("jaxopt kl_projection_birkhoff")
        for label in res["cases"][gpu.case_id(todo[1])]
    )
