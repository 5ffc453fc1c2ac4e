"""Fixtures of the projloss.torch tests: the devices (the CPU, and CUDA where present),
and the two CPU paths (the engine, the tensor algorithms).

Without PyTorch the test modules are not collected (except ``test_import.py``, which
checks that ``projloss`` imports without it and that ``projloss.torch`` names the
install). NB: this folder is named ``torch``; with ``tests/projloss`` on ``sys.path`` it
would be imported as a namespace package ``torch`` when PyTorch is missing, so the check
looks for a real module (an origin), not just a name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

HERE = Path(__file__).parent
sys.path.insert(0, str(HERE))  # torch_cases.py


def _torch_installed() -> bool:
    spec = importlib.util.find_spec("torch")
    return spec is not None and spec.origin is not None


if _torch_installed():
    import torch

    # One intra-op thread: the tests share 2 cores between 2 workers (make test's -n 2),
    # where torch's own threads oversubscribe them (7x slower on small tensors); a fixed
    # thread count also keeps the CPU reductions bit-reproducible.
    torch.set_num_threads(1)

    DEVICES = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])

    @pytest.fixture(params=DEVICES)
    def device(request: pytest.FixtureRequest) -> torch.device:
        """Each test runs on the CPU, and on CUDA where a GPU is present."""
        return torch.device(request.param)

    @pytest.fixture(params=["engine", "array_api"])
    def backend(request: pytest.FixtureRequest):
        """Both CPU paths (projloss.torch.set_cpu_backend): the NumPy/numba engine and the
        sets' tensor algorithms. With the ``device`` fixture on CUDA, where only the tensor
        algorithms run, the ``"engine"`` case is skipped (it would repeat the other)."""
        import projloss.torch as pt

        if (
            request.param == "engine"
            and "device" in request.fixturenames
            and request.getfixturevalue("device").type != "cpu"
        ):
            pytest.skip("the engine path is CPU-only")
        with pt.cpu_backend(request.param):
            yield request.param

else:
    collect_ignore = [p.name for p in HERE.glob("test_*.py") if p.name != "test_import.py"]
