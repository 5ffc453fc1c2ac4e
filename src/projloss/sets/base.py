r"""The interface every convex set implements.

A set :math:`C \subseteq \mathbb{R}^p` (or :math:`\mathbb{R}^{k\times k}`) comes with

- ``project(theta, geometry)``: the Bregman projection
  :math:`P_C^\Psi(\theta) = \operatorname{argmin}_{u\in C} D_\Psi(u, \nabla\Psi^*(\theta))`
  (paper eq. 3), for ``geometry`` in ``{"euclidean", "kl"}``;
- ``argmax(theta)``: a maximizing vertex
  :math:`\operatorname{argmax}_{v \in C}\langle\theta, v\rangle`
  (the MAP / linear maximization oracle, paper eq. 2);
- ``encode(y)`` / ``decode(v)``: the encoding :math:`\varphi` from structures to vectors and
  its inverse on vertices;
- ``vertices(k)``: all vertices for a small size ``k`` (used by the tests).

Every oracle is batched over any leading axes: ``theta`` has shape ``(..., p)`` for vector
sets and ``(..., k, k)`` for matrix sets (``matrix = True``).

The same oracles on arrays of any array-API library (PyTorch tensors on the CPU or a GPU,
float32 or float64; NumPy arrays), written once per set in the set's own module
(:mod:`projloss._xp`):

- ``xp_project(theta, geometry)``: the projection, on ``theta``'s device and in its dtype;
- ``xp_project_jvp(theta, u, tangent, geometry)``: the Jacobian-vector product
  :math:`J_P(\theta)\,t` at ``u = xp_project(theta, geometry)``. A Bregman projection is
  the gradient of the conjugate :math:`\Omega^* = (\Psi + I_C)^*`, so its Jacobian is the
  Hessian of :math:`\Omega^*`: symmetric, and the same function is the vector-Jacobian
  product of a backward pass (:mod:`projloss.torch`);
- ``xp_argmax(theta)``: the MAP oracle, equal to :meth:`ConvexSet.argmax`.

A set implements ``_xp_project``, ``_xp_project_jvp``, ``_xp_argmax`` and ``_xp_decode``;
the public methods check the shape and geometry first. ``projloss.torch`` is the
user-facing face (functions, ``nn.Module`` losses, autograd).

What the rest of projloss (and the pipeline) needs to know about a set, it asks the set
(no list of set classes anywhere else):

- the solver: :meth:`ConvexSet.projection_jacobians` (the Jacobians of the projection
  for the Newton method, :mod:`projloss.sets.jacobians`; ``None``: finite differences),
  :meth:`ConvexSet.cheap_jacobians`, :attr:`ConvexSet.separable`,
  :attr:`ConvexSet.exact_projection`, :attr:`ConvexSet.newton_first`;
- the task validation (:mod:`projloss.tasks`): :attr:`ConvexSet.encodings` (the label
  encodings whose labels the set contains: a valid projection set),
  :attr:`ConvexSet.decodes` (those whose structures its vertices are: a valid decoding
  set), :attr:`ConvexSet.target_losses`;
- the estimators and the pipeline: :attr:`ConvexSet.estimator_params` (parameters the
  estimators take as their own), :meth:`ConvexSet.run_params` (the MLflow view),
  :attr:`ConvexSet.permutation_outputs`.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import Any, ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from .._params import ParamsMixin
from .._validation import check_array, check_geometry
from .jacobians import Jacobians


class ConvexSet(ParamsMixin, ABC):
    """Base class of the convex sets (see the module docstring for the contract).

    ``repr``, ``==`` and ``hash`` follow from :meth:`get_params`
    (:class:`~projloss._params.ParamsMixin`)."""

    #: Registry name, also the Hydra ``set/`` option.
    name: ClassVar[str]
    #: True when points are ``k x k`` matrices (trailing shape ``(k, k)``).
    matrix: ClassVar[bool] = False
    #: Geometries with a well-defined projection.
    geometries: ClassVar[tuple[str, ...]] = ("euclidean", "kl")
    #: Smallest admissible size of the trailing axis.
    min_size: ClassVar[int] = 1
    #: Appended to the error raised for an unsupported geometry (what to use instead).
    geometry_hint: ClassVar[str] = ""
    #: Geometries whose projection kernel checks that theta is finite in the same pass
    #: as it projects (:meth:`_project_fused`), instead of a separate pass of validation.
    fused_check: ClassVar[tuple[str, ...]] = ()
    #: True when the projection is computed exactly (a finite algorithm, to rounding);
    #: False for an iterative solver stopped at a tolerance (the Birkhoff polytope), whose
    #: differences are too noisy for a Newton method's Jacobians.
    exact_projection: ClassVar[bool] = True
    #: True when the projection acts on each coordinate alone (the box, the orthant,
    #: :math:`\mathbb{R}^p`): its Jacobians are diagonal. Without
    #: :meth:`projection_jacobians` the Newton solver then takes one forward and one
    #: backward difference of all coordinates at once, instead of ``p`` of each.
    separable: ClassVar[bool] = False
    #: Whether the Newton method may start a fit with dense features (False: its steps
    #: stall at the kinks of the projection, e.g. the knapsack polytope's, where the
    #: Jacobians of the samples whose budget is active couple the outputs: L-BFGS first,
    #: then the Newton method to finish; :func:`projloss.estimators._solver.newton_first_pays`).
    newton_first: ClassVar[bool] = True

    # The task validation (projloss.tasks): the names of the label encodings
    # (``projloss.tasks.ENCODINGS``: permutation_matrix, permutahedron, cumulative,
    # indicator, one_hot) the set serves.
    #: Encodings whose encoded labels :math:`\varphi(y)` lie in the set: it is a valid
    #: projection set for them (a superset of their marginal polytope, paper §3).
    encodings: ClassVar[tuple[str, ...]] = ()
    #: Encodings whose structures the set's vertices encode: a valid decoding set.
    decodes: ClassVar[tuple[str, ...]] = ()
    #: Target losses (registry names) that decompose over the set's vertices, beyond those
    #: that name the set in their own ``TargetLoss.decoders`` (the built-in sets).
    target_losses: ClassVar[tuple[str, ...]] = ()

    # The estimators and the pipeline.
    #: Constructor parameters that the estimators take as their own arguments (they
    #: depend on the data, e.g. the knapsack's ``upper="auto"`` from the labels), as
    #: ``{parameter: (estimator argument, its default)}``.
    estimator_params: ClassVar[dict[str, tuple[str, Any]]] = {}
    #: True when every vertex decodes to a permutation (label ranking: a prediction that
    #: is not one is a defect, not a 0/1 matrix of the cube).
    permutation_outputs: ClassVar[bool] = False

    @property
    def event_ndim(self) -> int:
        """Number of trailing axes forming one point (1 for vectors, 2 for matrices)."""
        return 2 if self.matrix else 1

    # ------------------------------------------------------------------ validation
    def _check_theta(
        self, theta: ArrayLike, name: str = "theta", finite: bool = True
    ) -> NDArray[np.float64]:
        arr = check_array(
            theta, name=name, matrix=self.matrix, min_size=self.min_size, finite=finite
        )
        self._check_size(arr.shape[-1])
        return arr

    def _check_size(self, k: int) -> None:
        """Hook for sets whose parameters constrain the size (e.g. knapsack bounds)."""

    def _check_geometry(self, geometry: str) -> str:
        g = check_geometry(geometry)
        if g not in self.geometries:
            raise ValueError(
                f"the {g!r} geometry is not defined for the set {self.name!r}; "
                f"valid geometries for it are {self.geometries}{self.geometry_hint}"
            )
        return g

    # ------------------------------------------------------------------ oracles
    def project(self, theta: ArrayLike, geometry: str = "euclidean") -> NDArray[np.float64]:
        r"""Bregman projection :math:`P_C^\Psi(\theta)`, batched over leading axes.

        Parameters
        ----------
        theta : array-like of shape (..., p) or (..., k, k)
            Scores, one point per trailing ``(p,)`` vector (``(k, k)`` matrix for a
            :attr:`matrix` set); any leading axes are a batch. Converted to float64.
        geometry : {"euclidean", "kl"}, default="euclidean"
            The Bregman geometry :math:`\Psi`: the squared Euclidean norm, or the
            negative entropy (KL projection, of :math:`\nabla\Psi^*(\theta) =
            e^{\theta - 1}`), case-insensitive.

        Returns
        -------
        ndarray of shape theta.shape, dtype float64
            The projections :math:`P_C^\Psi(\theta)`, one per point of the batch.

        Raises
        ------
        ValueError
            If ``geometry`` is unknown or not in :attr:`geometries` for this set; if
            ``theta`` is not a numeric array of the set's shape, has fewer than
            :attr:`min_size` entries on its last axis or a size the set's parameters
            exclude (a knapsack bound above it, a permutahedron's ``w`` of another
            length), or has NaN or infinite entries; or where the set itself refuses
            (the KL projection onto :math:`\mathbb{R}^p_+` overflowing float64, a
            permutahedron's KL projection with non-positive weights).
        """
        g = self._check_geometry(geometry)
        if g in self.fused_check:
            out = self._project_fused(self._check_theta(theta, finite=False), g)
            if out is not None:
                return out
            # Some entry is not finite: the full validation below raises the usual error.
        theta = self._check_theta(theta)
        if g == "euclidean":
            return self._project_euclidean(theta)
        return self._project_kl(theta)

    def argmax(self, theta: ArrayLike) -> NDArray[np.float64]:
        r"""A vertex maximizing :math:`\langle\theta, v\rangle` over the set, batched.

        Parameters
        ----------
        theta : array-like of shape (..., p) or (..., k, k)
            Scores, one point per trailing vector (matrix for a :attr:`matrix` set).

        Returns
        -------
        ndarray of shape theta.shape, dtype float64
            A maximizing vertex per point of the batch (ties broken by the set's oracle).

        Raises
        ------
        ValueError
            If ``theta`` is not a numeric array of the set's shape (or of a size its
            parameters exclude) or has NaN or infinite entries, or if the set has no
            maximizer (:math:`\mathbb{R}^p`, :math:`\mathbb{R}^p_+`: unbounded).
        """
        return self._argmax(self._check_theta(theta))

    @abstractmethod
    def _project_euclidean(self, theta: NDArray[np.float64]) -> NDArray[np.float64]: ...

    def _project_kl(self, theta: NDArray[np.float64]) -> NDArray[np.float64]:
        raise ValueError(f"the 'kl' geometry is not defined for the set {self.name!r}")

    def _project_fused(self, theta: NDArray[np.float64], geometry: str) -> NDArray | None:
        """The projection of a validated ``theta`` whose entries may not be finite, or
        ``None`` if some entry is not (for the geometries in :attr:`fused_check`)."""
        raise NotImplementedError

    @abstractmethod
    def _argmax(self, theta: NDArray[np.float64]) -> NDArray[np.float64]: ...

    # ------------------------------------------------------------------ array-API oracles
    def _xp_check(self, theta: Any, name: str = "theta") -> None:
        """Shape checks of an array-API ``theta`` (no copy, no device synchronization)."""
        shape = tuple(theta.shape)
        nd = self.event_ndim
        if len(shape) < nd:
            raise ValueError(
                f"{name} must have at least {nd} dimension(s) for the set {self.name!r} "
                f"(a batch of shape (..., {'k, k' if self.matrix else 'p'})), got shape {shape}"
            )
        if self.matrix and shape[-1] != shape[-2]:
            raise ValueError(f"{name} must be a batch of square k x k matrices, got shape {shape}")
        if shape[-1] < self.min_size:
            raise ValueError(
                f"{name}: the set {self.name!r} needs at least {self.min_size} entries on its "
                f"last axis, got shape {shape}"
            )
        self._check_size(shape[-1])

    def xp_project(self, theta: Any, geometry: str = "euclidean") -> Any:
        r""":math:`P_C^\Psi(\theta)` for an array of any array-API library (on its device,
        in its floating dtype), batched over the leading axes.

        Parameters
        ----------
        theta : array of shape (..., p) or (..., k, k)
            Scores of an array-API library (a PyTorch tensor on any device, a NumPy
            array), of a floating dtype (float32 or float64). Not copied, not checked for
            finiteness.
        geometry : {"euclidean", "kl"}, default="euclidean"
            The Bregman geometry, as in :meth:`project`.

        Returns
        -------
        array of shape theta.shape
            The projections, of ``theta``'s library, device and dtype.

        Raises
        ------
        ValueError
            If ``geometry`` is unknown or not in :attr:`geometries`, or if ``theta`` has
            too few axes, non-square trailing axes (a matrix set) or fewer than
            :attr:`min_size` entries on its last axis.
        NotImplementedError
            If the set has no array-API projection.
        """
        from .._xp import namespace

        g = self._check_geometry(geometry)
        self._xp_check(theta)
        return self._xp_project(theta, g, namespace(theta))

    def xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str = "euclidean") -> Any:
        r""":math:`J_P(\theta)\,t` at ``u = xp_project(theta, geometry)`` (the Jacobian is
        symmetric: this is also the vector-Jacobian product). At a kink (ties at the
        boundary of a face) it is the Jacobian of the face that ``u`` lies on.

        Parameters
        ----------
        theta : array of shape (..., p) or (..., k, k)
            The scores at which the Jacobian is taken (array-API, floating dtype).
        u : array of shape theta.shape
            Their projections ``xp_project(theta, geometry)`` (not recomputed).
        tangent : array of shape theta.shape
            The tangent :math:`t`, one per point of the batch.
        geometry : {"euclidean", "kl"}, default="euclidean"
            The geometry ``u`` was projected in.

        Returns
        -------
        array of shape theta.shape
            :math:`J_P(\theta)\,t` per point, of ``theta``'s library, device and dtype.

        Raises
        ------
        ValueError
            If ``geometry`` is unknown or not in :attr:`geometries`, or if ``theta`` does
            not have the set's shape.
        NotImplementedError
            If the set has no array-API Jacobian-vector product.
        """
        from .._xp import namespace

        g = self._check_geometry(geometry)
        self._xp_check(theta)
        return self._xp_project_jvp(theta, u, tangent, g, namespace(theta, u, tangent))

    def xp_argmax(self, theta: Any) -> Any:
        r"""The MAP oracle :meth:`argmax` for an array of any array-API library.

        Parameters
        ----------
        theta : array of shape (..., p) or (..., k, k)
            Scores of an array-API library (any device, floating dtype).

        Returns
        -------
        array of shape theta.shape
            A maximizing vertex per point, of ``theta``'s library, device and dtype.

        Raises
        ------
        ValueError
            If ``theta`` does not have the set's shape (too few axes, non-square trailing
            axes, fewer than :attr:`min_size` entries on its last axis), or if the set
            has no maximizer (:math:`\mathbb{R}^p`, :math:`\mathbb{R}^p_+`).
        NotImplementedError
            If the set has no array-API MAP oracle.
        """
        from .._xp import namespace

        self._xp_check(theta)
        return self._xp_argmax(theta, namespace(theta))

    def xp_decode(self, v: Any) -> Any:
        r"""The structures :math:`\varphi^{-1}(v)` of vertices ``v`` of any array-API library
        (on ``v``'s device, without validation: ``v`` comes from :meth:`xp_argmax`), equal
        to :meth:`decode`.

        Parameters
        ----------
        v : array of shape (..., p) or (..., k, k)
            Vertices of the set, of an array-API library (e.g. from :meth:`xp_argmax`).

        Returns
        -------
        array
            The structures, as :meth:`decode` returns them (e.g. labels of shape ``(...,)``
            or permutations of shape ``(..., k)``), on ``v``'s device.

        Raises
        ------
        NotImplementedError
            If the set has no array-API decoding, or if a subclass redefines
            :meth:`decode` without it (the caller then decodes on the host).
        """
        from .._xp import namespace

        if not _defined_with(type(self), "_xp_decode", "decode"):
            raise NotImplementedError(
                f"{type(self).__qualname__} redefines decode without _xp_decode"
            )
        return self._xp_decode(v, namespace(v))

    def _xp_decode(self, v: Any, xp: Any) -> Any:
        raise NotImplementedError(f"the set {self.name!r} has no array-API decoding")

    def _xp_project(self, theta: Any, geometry: str, xp: Any) -> Any:
        raise NotImplementedError(f"the set {self.name!r} has no array-API projection")

    def _xp_project_jvp(self, theta: Any, u: Any, tangent: Any, geometry: str, xp: Any) -> Any:
        raise NotImplementedError(f"the set {self.name!r} has no array-API projection JVP")

    def _xp_argmax(self, theta: Any, xp: Any) -> Any:
        raise NotImplementedError(f"the set {self.name!r} has no array-API MAP oracle")

    # ------------------------------------------------------------------ Jacobians
    def projection_jacobians(
        self,
        theta: NDArray[np.float64],
        u: NDArray[np.float64],
        geometry: str,
        event_shape: tuple[int, ...],
    ) -> Jacobians | None:
        r"""The Jacobians :math:`J_P(\theta_i)` of the projection at the ``(n, p)`` rows
        ``theta`` (points of shape ``event_shape``, flattened) and their projections ``u``,
        in the cheapest exact layout of :mod:`projloss.sets.jacobians`, or ``None`` (the
        default) when the set has no closed form for ``geometry``: the Newton solver then
        takes finite differences of :meth:`project` (``p`` pairs of projections and an
        eigendecomposition per sample; one pair for a :attr:`separable` set). At a kink,
        the element of the generalized Jacobian with the largest rank.

        Parameters
        ----------
        theta : ndarray of shape (n, p), dtype float64
            The scores, one flattened point per row (``p = prod(event_shape)``).
        u : ndarray of shape (n, p), dtype float64
            Their projections ``project(theta, geometry)``, flattened the same way.
        geometry : {"euclidean", "kl"}
            The geometry of the projection.
        event_shape : tuple of int
            The shape of one point before flattening (``(p,)`` or ``(k, k)``).

        Returns
        -------
        Jacobians or None
            The ``n`` Jacobians (:data:`projloss.sets.jacobians.Jacobians`: a diagonal
            array of shape ``(n, p)``, a
            :class:`~projloss.sets.jacobians.DiagonalMinusRankOne` or dense blocks of
            shape ``(n, p, p)``), or ``None`` here: no closed form.
        """
        return None

    def cheap_jacobians(self, geometry: str) -> bool:
        """Whether the Jacobians cost ``O(p)`` per sample whatever the number ``p`` of
        outputs (diagonal, or :class:`~projloss.sets.jacobians.DiagonalMinusRankOne`):
        the Newton method then pays at any ``p`` (else up to
        ``projloss.estimators._newton.MAX_COUPLED_OUTPUTS``).

        Parameters
        ----------
        geometry : {"euclidean", "kl"}
            The geometry of the projection.

        Returns
        -------
        bool
            Here :attr:`separable` (diagonal Jacobians); sets with a
            :class:`~projloss.sets.jacobians.DiagonalMinusRankOne` form say so themselves.
        """
        return self.separable

    # ------------------------------------------------------------------ pipeline view
    @classmethod
    def run_params(cls, params: dict[str, Any]) -> dict[str, str]:
        """The parameters the experiment pipeline shows for this set in its runs (MLflow
        params), from the set's configured ``params`` (``conf/set/<name>.yaml``); none by
        default.

        Parameters
        ----------
        params : dict of str to Any
            The set's configured constructor parameters.

        Returns
        -------
        dict of str to str
            The parameters to log, by MLflow parameter name (empty here).
        """
        return {}

    # ------------------------------------------------------------------ encoding
    @abstractmethod
    def encode(self, y: ArrayLike, k: int | None = None) -> NDArray[np.float64]:
        r"""The encoding :math:`\varphi(y)` of structures ``y`` (batched).

        Parameters
        ----------
        y : array-like
            Structures, batched over leading axes (labels, 0/1 indicators, permutations:
            the set says which).
        k : int or None, default=None
            The size ``k`` of the encoding, where it is not implied by ``y`` (e.g. the
            number of classes of integer labels); ``None``: inferred from ``y``.

        Returns
        -------
        ndarray of shape (..., ``*event_shape(k)``), dtype float64
            The encoded structures, vertices of the set.
        """

    @abstractmethod
    def decode(self, v: ArrayLike) -> NDArray[Any]:
        r"""The inverse encoding :math:`\varphi^{-1}` on vertices (batched).

        Parameters
        ----------
        v : array-like of shape (..., p) or (..., k, k)
            Vertices of the set (e.g. from :meth:`argmax`).

        Returns
        -------
        ndarray
            The structures they encode, batched over the leading axes of ``v``.
        """

    @abstractmethod
    def vertices(self, k: int) -> NDArray[np.float64]:
        """All vertices for size ``k``, shape ``(n_vertices, *event_shape(k))``.

        Parameters
        ----------
        k : int
            The size of the set (the number of entries of a vector, the side of a matrix).

        Returns
        -------
        ndarray of shape (n_vertices, ``*event_shape(k)``), dtype float64
            Every vertex once (exponentially many for some sets: small ``k`` only).
        """

    def event_shape(self, k: int) -> tuple[int, ...]:
        """Shape of one point of the set for size ``k``.

        Parameters
        ----------
        k : int
            The size of the set.

        Returns
        -------
        tuple of int
            ``(k, k)`` for a :attr:`matrix` set, else ``(k,)``.
        """
        return (k, k) if self.matrix else (k,)

    def contains(self, u: ArrayLike, atol: float = 1e-9) -> NDArray[np.bool_]:
        """Whether each point of the batch ``u`` lies in the set, up to ``atol``.

        Parameters
        ----------
        u : array-like of shape (..., p) or (..., k, k)
            Points, batched over leading axes.
        atol : float, default=1e-9
            Absolute tolerance of each constraint.

        Returns
        -------
        ndarray of shape u.shape[:-event_ndim], dtype bool
            True where the point satisfies every constraint up to ``atol``.

        Raises
        ------
        ValueError
            If ``u`` is not a finite numeric array of the set's shape.
        """
        u = check_array(u, name="u", matrix=self.matrix, min_size=self.min_size)
        return self._contains(u, atol)

    @abstractmethod
    def _contains(self, u: NDArray[np.float64], atol: float) -> NDArray[np.bool_]: ...


def _defined_with(cls: type, method: str, other: str) -> bool:
    """Whether the class that defines ``method`` for ``cls`` (the first in its MRO) is the
    one that defines ``other``, or a subclass of it: a subclass that redefines ``other``
    alone must not use an inherited ``method`` written for the parent's ``other``."""
    owner = next(c for c in cls.__mro__ if method in vars(c))
    other_owner = next(c for c in cls.__mro__ if other in vars(c))
    return issubclass(owner, other_owner)


def event_axes(matrix: bool) -> tuple[int, ...]:
    """Trailing axes of one point: ``(-1,)`` or ``(-2, -1)``."""
    return (-2, -1) if matrix else (-1,)


def check_binary(y: ArrayLike, name: str = "y") -> NDArray[np.float64]:
    """Validate a 0/1 array and return it as float64."""
    arr = np.asarray(y)
    if arr.ndim < 1:
        raise ValueError(f"{name} must be an array of 0/1 indicators, got a scalar")
    arr = arr.astype(np.float64)
    if not np.all((arr == 0) | (arr == 1)):
        raise ValueError(f"{name} must contain only 0/1 indicators")
    return arr
