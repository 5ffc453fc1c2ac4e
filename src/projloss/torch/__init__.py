r"""PyTorch face of projloss: the oracles, projection losses and calibrated decoding on
tensors, on the CPU or a GPU, differentiable.

For every set of :data:`projloss.SETS` and every geometry it supports:

- :func:`project` -- the Bregman projection :math:`P_C^\Psi(\theta) =
  \operatorname{argmin}_{u\in C} D_\Psi(u, \nabla\Psi^*(\theta))` (paper eq. 3; Euclidean:
  :math:`\operatorname{argmin}_{u\in C}\tfrac12\|u - \theta\|^2`, KL:
  :math:`\operatorname{argmin}_{u\in C}\mathrm{KL}(u, e^{\theta - 1})`), differentiable:
  its Jacobian is the Hessian of :math:`\Omega^* = (\Psi + I_C)^*`, symmetric, and the
  backward pass is the set's Jacobian-vector product (closed form, by blocks, or implicit
  differentiation for the Birkhoff polytope; never autograd through solver iterations);
- :func:`argmax` -- the MAP oracle :math:`\operatorname{argmax}_{v\in C}\langle\theta,
  v\rangle` (paper eq. 2), as the engine's (same tie-breaking);
- :func:`projection_loss` / :class:`ProjectionLoss` -- the Fenchel-Young projection loss
  :math:`S_C^\Psi(\theta, \varphi) = \Omega^*(\theta) + \Psi(\varphi) - \langle\theta,
  \varphi\rangle` (paper eqs. 4-5), gradient :math:`P_C^\Psi(\theta) - \varphi` from one
  projection;
- :func:`calibrated_decode`, :func:`calibrated_vertices`, :func:`decode_scores`,
  :func:`scores` -- calibrated decoding :math:`\hat y_L(u) = \mathrm{MAP}_D(-Vu - b)`
  (paper eq. 9) for the target losses of :mod:`projloss.target_losses`;
- :func:`encode` / :func:`decode` -- the encodings :math:`\varphi` and
  :math:`\varphi^{-1}` (targets in, structures out).

The algorithms are the sets' own array-API oracles
(:meth:`~projloss.sets.base.ConvexSet.xp_project`, ``xp_project_jvp``, ``xp_argmax``,
written once per set in its module, :mod:`projloss._xp`); this package is their
user-facing face: validation, autograd, ``nn.Module``.

**Devices and dtypes.** ``theta`` is a float32 or float64 tensor on any device; every
result has its dtype and device, and nothing is copied to the host inside a projection
(one synchronization per call checks that ``theta`` is finite, one more per loss call
that the value did not overflow; the Birkhoff polytope's MAP oracle may solve its
assignments on the host). Tensors combined in one call (``theta`` and ``phi``) must share
the device and the dtype: there is no implicit transfer or promotion. Other dtypes
(float16, bfloat16, integers) are refused: cast to float32 (under autocast, cast the
model's output). Batched over every leading axis; points are the trailing axis (vector
sets) or the two trailing axes (matrix sets: ``"birkhoff"``, ``"row_simplex"``,
``"cube"``).

**The CPU fast path.** On the CPU the forward passes (projection, loss value, MAP
oracle) are the NumPy/numba engine's -- the fastest CPU code of the package; float32
tensors are computed in float64 and cast back -- and the backward passes the sets'
tensor Jacobian-vector products; :func:`set_cpu_backend` (``"engine"``, the default, or
``"array_api"``) or the context manager :func:`cpu_backend` choose the sets' tensor
algorithms instead (those run on every other device).

**Errors** are one line, naming the remedy: ``TypeError`` for a non-tensor or an
unsupported dtype; ``ValueError`` for mixed devices or dtypes, shapes (the set's checks),
NaN or infinite ``theta``, an unknown set, geometry or reduction (the engine's
messages), and a ``phi`` that requires grad (``phi`` is a target: no gradient is given
with respect to it).

Requires PyTorch: ``pip install 'projloss[torch]'``.

References
----------
M. Blondel. *Structured Prediction with Projection Oracles.* NeurIPS 2019.
M. Blondel, A. F. T. Martins, V. Niculae. *Learning with Fenchel-Young Losses.* JMLR 2020.

Examples
--------
>>> import torch
>>> import projloss.torch as pt
>>> theta = torch.tensor([[0.5, 1.2, -1.0], [0.0, 0.0, 3.0]], requires_grad=True)
>>> print(pt.project(theta, "simplex").detach())  # sparsemax
tensor([[0.1500, 0.8500, 0.0000],
        [0.0000, 0.0000, 1.0000]])
>>> phi = pt.encode([1, 2], "simplex", k=3)  # one-hot targets
>>> loss = pt.ProjectionLoss("simplex")(theta, phi)  # mean over the batch
>>> loss.backward()
>>> print(theta.grad)  # (sparsemax(theta) - phi) / 2
tensor([[ 0.0750, -0.0750,  0.0000],
        [ 0.0000,  0.0000,  0.0000]])
>>> print(pt.calibrated_decode(pt.project(theta, "simplex"), "zero_one", "simplex"))
tensor([1, 2])
"""

try:
    from torch import Tensor as _Tensor  # noqa: F401  (ImportError without PyTorch)
except ImportError:
    raise ImportError(
        "projloss.torch needs PyTorch, which is not installed: pip install 'projloss[torch]'"
    ) from None

from ._autograd import (
    ProjectFunction,
    ProjectionLossFunction,
    cpu_backend,
    get_cpu_backend,
    set_cpu_backend,
)
from ._decoding import calibrated_decode, calibrated_vertices, decode_scores, scores
from ._encoding import decode, encode
from ._loss import ProjectionLoss, projection_loss
from ._oracles import argmax, project

__all__ = [
    "ProjectFunction",
    "ProjectionLoss",
    "ProjectionLossFunction",
    "argmax",
    "calibrated_decode",
    "calibrated_vertices",
    "cpu_backend",
    "decode",
    "decode_scores",
    "encode",
    "get_cpu_backend",
    "project",
    "projection_loss",
    "scores",
    "set_cpu_backend",
]
