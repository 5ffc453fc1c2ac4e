r"""The autograd Functions: the projection and the projection loss.

**Projection** :math:`u = P_C^\Psi(\theta) = \nabla\Omega^*(\theta)` with
:math:`\Omega = \Psi + I_C`. Its Jacobian is the Hessian of :math:`\Omega^*`, hence
symmetric: the Jacobian-vector product of the set
(:meth:`~projloss.sets.base.ConvexSet.xp_project_jvp`) is also the vector-Jacobian product
of the backward pass. The derivative is thus closed form (sort/threshold sets), by blocks
(the PAV sets) or by implicit differentiation of the optimality conditions (Birkhoff), as
each set writes it -- never autograd through solver iterations. Forward mode
(:func:`torch.func.jvp`, ``torch.autograd.forward_ad``) uses the same product, and
:func:`torch.func.vmap` maps a batch axis onto the sets' own batching.

**Projection loss** :math:`S(\theta, \varphi) = \Omega^*(\theta) + \Psi(\varphi) -
\langle\theta, \varphi\rangle`, whose gradient is :math:`u - \varphi` (Danskin): the
forward pass projects once and keeps :math:`u`; the backward pass multiplies
:math:`u - \varphi` by the incoming gradient, with no backward through the projection.
Second derivatives (``create_graph=True``, :func:`torch.func.hessian`) are
:math:`\nabla^2_\theta S = J_P(\theta)`: the projection's Jacobian-vector products at
the kept :math:`u`, without projecting again.

There is no gradient with respect to :math:`\varphi` (the encoded target) in reverse
mode: :func:`projloss.torch.projection_loss` refuses a ``phi`` that requires one. Forward
mode, which gives every input a tangent (zeros where none is asked for), includes the
directional derivative :math:`\langle\nabla\Psi(\varphi) - \theta, \dot\varphi\rangle`.

**The CPU fast path.** On the CPU the forward passes (the projection, the loss value,
and the MAP oracle of :func:`projloss.torch.argmax`) are computed by the NumPy/numba
engine (the kernels of :meth:`~projloss.sets.base.ConvexSet.project` and
:func:`projloss.losses.loss_from_projection`): torch's CPU sort is several times slower
than NumPy's, and the engine's kernels are compiled. A float64 tensor is handed to the
engine as a zero-copy view (``theta.numpy()``); a float32 tensor is computed in float64 by
the engine and the result cast back to float32 (more accurate than a float32
computation; one conversion each way). Results, errors and derivatives are those of the
array-API path, within rounding: the backward pass is still the set's Jacobian-vector
product (:meth:`~projloss.sets.base.ConvexSet.xp_project_jvp`) on tensors. Every other
device (CUDA, ...), and tensors wrapped by :mod:`torch.func` transforms (nested
``grad``), take the sets' array-API oracles
(:meth:`~projloss.sets.base.ConvexSet.xp_project`). :func:`set_cpu_backend` chooses the
CPU path: ``"engine"`` (the default) or ``"array_api"`` (the tensor algorithms, as on a
GPU: to test or time them on the CPU).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np
import torch

from .. import losses as _losses
from ..sets import ConvexSet
from ._validation import check_finite, check_finite_loss

# ---------------------------------------------------------------------- the CPU backend
#: The computations of CPU tensors: the NumPy/numba engine, or the sets' array-API oracles.
CPU_BACKENDS = ("engine", "array_api")
_cpu_backend = "engine"


def set_cpu_backend(backend: str) -> str:
    """Choose how CPU tensors are projected; returns the previous choice.

    Parameters
    ----------
    backend : {"engine", "array_api"}
        ``"engine"`` (the default): the forward passes on CPU tensors -- projection, loss
        value, MAP oracle -- are the NumPy/numba engine's (float64; float32 tensors are
        computed in float64 and cast back). ``"array_api"``: the sets' tensor algorithms,
        as on a GPU (float32 computed in float32). Either way the backward pass is the
        set's Jacobian-vector product on tensors, and tensors on other devices always take
        the tensor algorithms. A process-wide setting (not per thread).

    Returns
    -------
    str
        The backend in force before this call.

    Raises
    ------
    ValueError
        If ``backend`` is not ``"engine"`` or ``"array_api"`` (the setting is unchanged).

    Examples
    --------
    >>> import torch
    >>> import projloss.torch as pt
    >>> previous = pt.set_cpu_backend("array_api")  # the tensor algorithms on the CPU
    >>> print(pt.project(torch.tensor([0.5, 1.2, -1.0]), "simplex"))
    tensor([0.1500, 0.8500, 0.0000])
    >>> pt.set_cpu_backend(previous)
    'array_api'
    >>> pt.get_cpu_backend()
    'engine'
    """
    global _cpu_backend
    if backend not in CPU_BACKENDS:
        raise ValueError(f"unknown CPU backend {backend!r}; valid backends are {CPU_BACKENDS}")
    previous, _cpu_backend = _cpu_backend, backend
    return previous


def get_cpu_backend() -> str:
    """The current CPU backend, ``"engine"`` or ``"array_api"`` (see :func:`set_cpu_backend`).

    Returns
    -------
    str
        ``"engine"`` (the default) or ``"array_api"``.
    """
    return _cpu_backend


@contextmanager
def cpu_backend(backend: str) -> Iterator[None]:
    """:func:`set_cpu_backend` for the ``with`` block only (the previous choice restored).

    Parameters
    ----------
    backend : {"engine", "array_api"}
        The CPU backend inside the block.

    Yields
    ------
    None
        The block runs with ``backend``; the previous backend is restored on exit, also
        when the block raises.

    Raises
    ------
    ValueError
        If ``backend`` is unknown (raised on entering the block).

    Examples
    --------
    >>> import torch
    >>> import projloss.torch as pt
    >>> with pt.cpu_backend("array_api"):
    ...     print(pt.get_cpu_backend())
    array_api
    >>> pt.get_cpu_backend()
    'engine'
    """
    previous = set_cpu_backend(backend)
    try:
        yield
    finally:
        set_cpu_backend(previous)


def on_engine(*tensors: torch.Tensor) -> bool:
    """True when ``tensors`` go to the engine: the ``"engine"`` backend, plain strided CPU
    tensors (not a subclass such as a fake tensor, not a :mod:`torch.func` wrapper, whose
    data the host cannot read)."""
    return _cpu_backend == "engine" and all(
        type(t) is torch.Tensor
        and t.device.type == "cpu"
        and t.layout == torch.strided
        and not torch._C._functorch.is_functorch_wrapped_tensor(t)
        for t in tensors
    )


def host(x: torch.Tensor) -> np.ndarray:
    """A float64 NumPy array of the CPU tensor ``x``: a zero-copy view in float64, a
    float64 copy of a float32 tensor."""
    x = x.detach()
    if x.dtype != torch.float64:
        x = x.to(torch.float64)
    return x.numpy()


def from_host(a: np.ndarray, like: torch.Tensor) -> torch.Tensor:
    """The engine's array ``a`` as a tensor in ``like``'s dtype (zero-copy in float64)."""
    a = np.asarray(a)
    if not a.flags.writeable:
        a = a.copy()
    return torch.from_numpy(a).to(like.dtype)


def host_finite(theta: torch.Tensor, arr: np.ndarray) -> None:
    """:func:`~projloss.torch._validation.check_finite` of ``theta`` read on its host array
    ``arr`` (NumPy's check: a tenth of the time of torch's on one CPU thread)."""
    if not np.all(np.isfinite(arr)):
        check_finite(theta)  # raises projloss.torch's error


def engine_project(
    cset: ConvexSet, theta: torch.Tensor, geometry: str, arr: np.ndarray | None = None
) -> np.ndarray:
    """The engine's projection of the CPU tensor ``theta`` (``arr``: its host array, if
    made already), a float64 array.

    As :meth:`ConvexSet.project` on ``host(theta)``, with ``theta``'s own checks: its shape
    was checked by the caller, its entries are checked here with projloss.torch's error
    (in the projection's pass where the engine fuses the check)."""
    arr = host(theta) if arr is None else arr
    out = None
    if geometry in cset.fused_check:
        out = cset._project_fused(arr, geometry)  # None: some entry is not finite
    if out is None:
        host_finite(theta, arr)
        out = cset._project_euclidean(arr) if geometry == "euclidean" else cset._project_kl(arr)
    if np.may_share_memory(out, arr):  # never a view of the input
        out = out.copy()
    return out


def engine_argmax(cset: ConvexSet, theta: torch.Tensor) -> torch.Tensor:
    """The engine's MAP oracle of the CPU tensor ``theta`` (its entries checked here)."""
    arr = host(theta)
    host_finite(theta, arr)
    return from_host(cset._argmax(arr), theta)


def _to_front(x: torch.Tensor, dim: int | None, size: int) -> torch.Tensor:
    """The vmapped axis ``dim`` of ``x`` moved first (broadcast when ``x`` has none)."""
    if dim is None:
        return x.unsqueeze(0).expand(size, *x.shape)
    return x.movedim(dim, 0)


class ProjectFunction(torch.autograd.Function):
    """``u = P_C^Psi(theta)``: forward by the engine (CPU, see :func:`set_cpu_backend`) or
    the set's array-API projection, backward and forward-mode by its Jacobian-vector
    product (symmetric Jacobian).

    ``apply(theta, cset, geometry, u=None)``; a given ``u`` (the projection, computed
    already) is returned instead of projecting: the derivatives of the projection at no
    extra projection (the projection loss's second derivatives). The inputs are not
    validated here (:func:`projloss.torch.project` validates, then calls ``apply``).

    Parameters
    ----------
    *args, **kwargs
        Not used: a :class:`torch.autograd.Function` is not instantiated (torch's legacy
        signature); call ``ProjectFunction.apply(theta, cset, geometry, u=None)``.
    """

    @staticmethod
    def forward(
        theta: torch.Tensor, cset: ConvexSet, geometry: str, u: torch.Tensor | None = None
    ) -> torch.Tensor:
        r"""The projection (or ``u`` itself, when given), without a graph.

        Parameters
        ----------
        theta : torch.Tensor of shape (..., p) or (..., k, k)
            Scores, float32 or float64, of the set's shape (checked by the caller).
        cset : ConvexSet
            The set.
        geometry : {"euclidean", "kl"}
            The geometry (normalized by the caller).
        u : torch.Tensor or None, default=None
            The projection of ``theta``, computed already: returned (detached) instead
            of projecting.

        Returns
        -------
        torch.Tensor of shape theta.shape
            :math:`P_C^\Psi(\theta)`, in ``theta``'s dtype and on its device.

        Raises
        ------
        ValueError
            If ``theta`` has NaN or infinite entries (or from the set's projection, e.g. a
            KL projection onto :math:`\mathbb{R}^p_+` that overflows).
        """
        if u is not None:
            return u.detach()
        theta = theta.detach()  # (the sets see plain tensors)
        if on_engine(theta):
            return from_host(engine_project(cset, theta, geometry), theta)
        check_finite(theta)
        return cset.xp_project(theta, geometry)

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: torch.Tensor) -> None:
        """Save ``theta`` and ``u`` (and the set, the geometry) for the derivatives.

        Parameters
        ----------
        ctx : torch.autograd.function.FunctionCtx
            The context of this application.
        inputs : tuple
            The arguments of :meth:`forward`: ``(theta, cset, geometry[, u])``.
        output : torch.Tensor
            The projection ``u``.
        """
        theta, cset, geometry = inputs[:3]
        ctx.cset, ctx.geometry = cset, geometry
        ctx.save_for_backward(theta, output)
        ctx.save_for_forward(theta, output)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor, None, None, None]:
        r"""The vector-Jacobian product :math:`J_P(\theta)^\top g = J_P(\theta)\,g`.

        Parameters
        ----------
        ctx : torch.autograd.function.FunctionCtx
            The context saved by :meth:`setup_context`.
        grad : torch.Tensor of shape theta.shape
            The gradient :math:`g` with respect to ``u``.

        Returns
        -------
        tuple
            The gradient with respect to ``theta`` (the set's
            :meth:`~projloss.sets.base.ConvexSet.xp_project_jvp`), then ``None`` for
            ``cset``, ``geometry`` and ``u``.
        """
        theta, u = ctx.saved_tensors
        vjp = ctx.cset.xp_project_jvp(theta, u, grad.contiguous(), ctx.geometry)
        return vjp, None, None, None

    @staticmethod
    def jvp(ctx: Any, theta_t: torch.Tensor, *_: Any) -> torch.Tensor:
        r"""The forward-mode derivative :math:`J_P(\theta)\,\dot\theta`.

        Parameters
        ----------
        ctx : torch.autograd.function.FunctionCtx
            The context saved by :meth:`setup_context`.
        theta_t : torch.Tensor of shape theta.shape
            The tangent of ``theta``.
        *_ : Any
            The tangents of the other inputs (none: not differentiable).

        Returns
        -------
        torch.Tensor of shape theta.shape
            The tangent of ``u``.
        """
        theta, u = ctx.saved_tensors
        return ctx.cset.xp_project_jvp(theta, u, theta_t.contiguous(), ctx.geometry)

    @staticmethod
    def vmap(
        info: Any,
        in_dims: tuple[Any, ...],
        theta: torch.Tensor,
        cset: ConvexSet,
        geometry: str,
        u: torch.Tensor | None = None,
    ) -> tuple[torch.Tensor, int]:
        """The :func:`torch.func.vmap` rule: the mapped axis becomes a leading batch axis.

        Parameters
        ----------
        info : Any
            The vmap information of torch (``info.batch_size``).
        in_dims : tuple
            The mapped axis of each input (``None``: not mapped).
        theta : torch.Tensor
            The scores, with the mapped axis at ``in_dims[0]``.
        cset : ConvexSet
            The set.
        geometry : {"euclidean", "kl"}
            The geometry.
        u : torch.Tensor or None, default=None
            The projection, computed already, mapped at ``in_dims[3]``.

        Returns
        -------
        tuple of (torch.Tensor, int)
            The projections with the mapped axis first, and ``0`` (that axis).
        """
        # The sets batch over every leading axis: the mapped axis becomes one of them.
        theta = _to_front(theta, in_dims[0], info.batch_size)
        if u is not None:
            u = _to_front(u, in_dims[3], info.batch_size)
        return ProjectFunction.apply(theta, cset, geometry, u), 0


def event_dims(event_ndim: int) -> tuple[int, ...]:
    """The trailing axes of one point."""
    return tuple(range(-event_ndim, 0))


def loss_from_projection(
    theta: torch.Tensor, u: torch.Tensor, phi: torch.Tensor, geometry: str, event_ndim: int
) -> torch.Tensor:
    r""":math:`S_C^\Psi(\theta, \varphi)` given :math:`u = P_C^\Psi(\theta)`, one value per
    leading index, in the cancellation-free forms of
    :func:`projloss.losses.loss_from_projection`:

    - Euclidean: :math:`\langle u - \varphi, \theta - (u + \varphi)/2\rangle`;
    - KL: :math:`\langle\theta, u - \varphi\rangle - \langle u, \log u\rangle +
      \langle\varphi, \log\varphi\rangle` (:math:`0\log 0 = 0`, :func:`torch.xlogy`), and
      where a term overflows (huge :math:`u` on :math:`\mathbb{R}^p_+`),
      :math:`u(\theta - \log u) - \theta\varphi + \varphi\log\varphi` instead (selected
      elementwise, without a synchronization).
    """
    dims = event_dims(event_ndim)
    if geometry == "euclidean":
        return torch.sum((u - phi) * (theta - 0.5 * (u + phi)), dim=dims)
    plogp = torch.xlogy(phi, phi)
    terms = theta * (u - phi) - torch.xlogy(u, u) + plogp
    logu = torch.log(torch.where(u > 0, u, torch.ones_like(u)))
    safe = u * (theta - logu) - theta * phi + plogp
    return torch.sum(torch.where(torch.isfinite(terms), terms, safe), dim=dims)


def _expand_events(g: torch.Tensor, event_ndim: int) -> torch.Tensor:
    return g.reshape(*g.shape, *([1] * event_ndim))


class ProjectionLossFunction(torch.autograd.Function):
    r"""Per-sample :math:`S_C^\Psi(\theta, \varphi)`, and the projection :math:`u` (the
    second output is not differentiable: it is kept for the gradient :math:`u - \varphi`).

    ``apply(theta, phi, cset, geometry, event_ndim)``; the inputs are validated by
    :func:`projloss.torch.projection_loss`, which calls it.

    Parameters
    ----------
    *args, **kwargs
        Not used: a :class:`torch.autograd.Function` is not instantiated (torch's legacy
        signature); call ``ProjectionLossFunction.apply``.
    """

    @staticmethod
    def forward(
        theta: torch.Tensor, phi: torch.Tensor, cset: ConvexSet, geometry: str, event_ndim: int
    ) -> tuple[torch.Tensor, torch.Tensor]:
        r"""The per-sample loss values and the projection, without a graph.

        Parameters
        ----------
        theta : torch.Tensor of shape (..., ``*event_shape``)
            Scores, float32 or float64.
        phi : torch.Tensor of shape theta.shape
            Encoded targets, on ``theta``'s device and in its dtype.
        cset : ConvexSet
            The set.
        geometry : {"euclidean", "kl"}
            The geometry (normalized by the caller).
        event_ndim : int
            The number of trailing axes forming one point (summed over).

        Returns
        -------
        values : torch.Tensor of shape theta.shape[:-event_ndim]
            :math:`S_C^\Psi(\theta, \varphi)` per point.
        u : torch.Tensor of shape theta.shape
            The projection :math:`P_C^\Psi(\theta)` (not differentiable).

        Raises
        ------
        ValueError
            If ``theta`` has NaN or infinite entries, or a loss value overflows its dtype.
        """
        theta, phi = theta.detach(), phi.detach()
        if on_engine(theta, phi):
            t, f = host(theta), host(phi)
            u64 = engine_project(cset, theta, geometry, t)
            with np.errstate(over="ignore", invalid="ignore"):  # overflow: refused below
                values = _losses.loss_from_projection(t, u64, f, geometry, event_ndim)
            values = from_host(values, theta)
            u = from_host(u64, theta)
        else:
            check_finite(theta)
            u = cset.xp_project(theta, geometry)
            values = loss_from_projection(theta, u, phi, geometry, event_ndim)
        check_finite_loss(values, theta)
        return values, u

    @staticmethod
    def setup_context(ctx: Any, inputs: tuple[Any, ...], output: tuple[torch.Tensor, ...]) -> None:
        """Save ``theta``, ``phi`` and ``u`` for the derivatives; ``u`` is marked not
        differentiable.

        Parameters
        ----------
        ctx : torch.autograd.function.FunctionCtx
            The context of this application.
        inputs : tuple
            The arguments of :meth:`forward`: ``(theta, phi, cset, geometry, event_ndim)``.
        output : tuple of torch.Tensor
            ``(values, u)``.
        """
        theta, phi, cset, geometry, event_ndim = inputs
        _, u = output
        ctx.mark_non_differentiable(u)
        ctx.set_materialize_grads(False)  # no zeros the size of u for its unused gradient
        ctx.cset, ctx.geometry, ctx.event_ndim = cset, geometry, event_ndim
        ctx.save_for_backward(theta, phi, u)
        ctx.save_for_forward(theta, phi, u)

    @staticmethod
    def backward(
        ctx: Any, grad: torch.Tensor, _grad_u: torch.Tensor | None
    ) -> tuple[torch.Tensor | None, None, None, None, None]:
        r"""The gradient :math:`g\,(u - \varphi)` with respect to ``theta`` (Danskin).

        Under grad mode (``create_graph=True``, :mod:`torch.func`) :math:`u` goes through
        :class:`ProjectFunction` with the kept projection, so that the gradient has a
        graph (second derivatives :math:`J_P(\theta)`) without projecting again.

        Parameters
        ----------
        ctx : torch.autograd.function.FunctionCtx
            The context saved by :meth:`setup_context`.
        grad : torch.Tensor of shape theta.shape[:-event_ndim] or None
            The gradient with respect to the values (``None``: not materialized).
        _grad_u : torch.Tensor or None
            The gradient with respect to ``u`` (not differentiable: ignored).

        Returns
        -------
        tuple
            The gradient with respect to ``theta`` (``None`` without ``grad``), then
            ``None`` for ``phi``, ``cset``, ``geometry`` and ``event_ndim``.

        Raises
        ------
        ValueError
            If a gradient with respect to ``phi`` is asked for (the target: none given).
        """
        theta, phi, u = ctx.saved_tensors
        if ctx.needs_input_grad[1]:
            raise ValueError(_PHI_GRAD)
        if grad is None:  # (not materialized: only u's, which is not differentiable, came)
            return None, None, None, None, None
        if torch.is_grad_enabled():
            # A graph of the gradient (create_graph=True, torch.func): d(u - phi)/dtheta =
            # J_P, through the projection's derivatives at the u computed (no projection).
            u = ProjectFunction.apply(theta, ctx.cset, ctx.geometry, u)
            return _expand_events(grad, ctx.event_ndim) * (u - phi), None, None, None, None
        # no graph: one temporary, scaled in place
        return (u - phi).mul_(_expand_events(grad, ctx.event_ndim)), None, None, None, None

    @staticmethod
    def jvp(
        ctx: Any, theta_t: torch.Tensor | None, phi_t: torch.Tensor | None, *_: None
    ) -> tuple[torch.Tensor, None]:
        r"""The forward-mode derivative of the values, in ``theta`` and in ``phi``.

        Parameters
        ----------
        ctx : torch.autograd.function.FunctionCtx
            The context saved by :meth:`setup_context`.
        theta_t : torch.Tensor of shape theta.shape or None
            The tangent of ``theta``.
        phi_t : torch.Tensor of shape theta.shape or None
            The tangent of ``phi`` (forward mode gives every input one, zeros by default).
        *_ : None
            The tangents of the non-tensor inputs.

        Returns
        -------
        tuple of (torch.Tensor, None)
            :math:`\langle u - \varphi, \dot\theta\rangle + \langle\nabla\Psi(\varphi) -
            \theta, \dot\varphi\rangle` per point, and ``None`` for ``u``.
        """
        # <u - phi, theta_t> + <grad Psi(phi) - theta, phi_t>: forward mode materializes
        # a tangent (zeros) for phi too, so its term is computed rather than refused.
        theta, phi, u = ctx.saved_tensors
        dims = event_dims(ctx.event_ndim)
        out = torch.zeros((), dtype=u.dtype, device=u.device)
        if theta_t is not None:
            out = out + torch.sum((u - phi) * theta_t, dim=dims)
        if phi_t is not None:
            if ctx.geometry == "euclidean":
                dphi = (phi - theta) * phi_t
            else:  # d/dphi [phi log phi] = log phi + 1 (-inf at 0: only where phi_t != 0)
                dphi = torch.where(phi_t != 0, (torch.log(phi) + 1.0 - theta) * phi_t, 0.0)
            out = out + torch.sum(dphi, dim=dims)
        return out, None

    @staticmethod
    def vmap(
        info: Any,
        in_dims: tuple[Any, ...],
        theta: torch.Tensor,
        phi: torch.Tensor,
        cset: ConvexSet,
        geometry: str,
        event_ndim: int,
    ) -> tuple[tuple[torch.Tensor, torch.Tensor], tuple[int, int]]:
        """The :func:`torch.func.vmap` rule: the mapped axis becomes a leading batch axis.

        Parameters
        ----------
        info : Any
            The vmap information of torch (``info.batch_size``).
        in_dims : tuple
            The mapped axis of each input (``None``: not mapped).
        theta : torch.Tensor
            The scores, mapped at ``in_dims[0]``.
        phi : torch.Tensor
            The encoded targets, mapped at ``in_dims[1]``.
        cset : ConvexSet
            The set.
        geometry : {"euclidean", "kl"}
            The geometry.
        event_ndim : int
            The number of trailing axes forming one point.

        Returns
        -------
        tuple
            ``(values, u)`` with the mapped axis first, and ``(0, 0)``.
        """
        theta = _to_front(theta, in_dims[0], info.batch_size)
        phi = _to_front(phi, in_dims[1], info.batch_size)
        return ProjectionLossFunction.apply(theta, phi, cset, geometry, event_ndim), (0, 0)


_PHI_GRAD = (
    "phi requires grad, but the projection loss gives no gradient with respect to phi "
    "(the encoded target): pass phi.detach()"
)
