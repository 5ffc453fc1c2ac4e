"""projloss imports without PyTorch; projloss.torch then raises ImportError naming the
install (checked in a subprocess where ``import torch`` fails)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[3] / "src"

NO_TORCH = f"""
import sys
sys.path.insert(0, {str(SRC)!r})


class NoTorch:  # a finder hiding PyTorch: import torch raises ImportError
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {{name!r}}")


sys.meta_path.insert(0, NoTorch())
import numpy as np
import projloss
from projloss import decoding, losses, target_losses
u = projloss.get_set("simplex").project(np.array([0.5, 1.2, -1.0]))
assert np.allclose(u, [0.15, 0.85, 0.0])
assert np.allclose(losses.projection_loss(u, u, "simplex"), 0.0)
assert "torch" not in sys.modules
try:
    import projloss.torch
except ImportError as exc:
    print("IMPORTERROR:" + str(exc))
"""


def test_projloss_without_torch():
    out = subprocess.run(
        [sys.executable, "-c", NO_TORCH], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0, out.stderr
    line = out.stdout.strip().splitlines()[-1]
    assert line == (
        "IMPORTERROR:projloss.torch needs PyTorch, which is not installed: "
        "pip install 'projloss[torch]'"
    )
