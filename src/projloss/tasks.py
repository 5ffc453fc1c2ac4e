r"""The tasks of the paper and the compositions that make sense for each.

A composition is (projection set :math:`C`, geometry :math:`\Psi`, decoding set :math:`D`,
target loss :math:`L`). It is valid for a task when

- :math:`D` is one of the task's decoding sets, i.e. its vertices are valid outputs
  (for label ranking this includes the paper's cube and row-stochastic decoders, whose
  outputs are 0/1 matrices rather than permutations, evaluated entrywise);
- :math:`C` contains the encoded labels :math:`\varphi(\mathcal{Y})` in the same space as
  :math:`D` (a superset of the task's marginal polytope, paper §3);
- :math:`\Psi` is defined on :math:`C` (no KL onto :math:`\mathbb{R}^p`);
- :math:`L` decomposes with :math:`\psi` = the vertices of :math:`D`.

:func:`check_composition` validates one up front and names the problem with the valid
choices. The estimators (:mod:`projloss.estimators`) and the experiment pipeline use it.
"""

from __future__ import annotations

from dataclasses import dataclass

from ._validation import check_geometry
from .sets import SETS, ConvexSet
from .target_losses import TARGET_LOSSES, TargetLoss


@dataclass(frozen=True)
class Encoding:
    """One label encoding of a task: the space the projection and decoding sets live in.

    ``marginal`` is the registry name of the marginal polytope (the set whose ``encode``
    gives :math:`\\varphi`); ``target_losses`` the target losses (first = default). The
    valid projection and decoding sets are the registered sets that say so
    (:attr:`ConvexSet.encodings`, :attr:`ConvexSet.decodes`), in registry order: a set
    added with :func:`projloss.sets.register_set` joins the tasks it declares.

    Parameters
    ----------
    name : str
        The encoding's name (a key of :data:`ENCODINGS`, the name the sets declare).
    marginal : str
        Registry name of the marginal polytope, whose ``encode`` gives :math:`\\varphi`.
    target_losses : tuple of str
        Registry names of the target losses that decompose in this encoding (the first is
        the default).

    Examples
    --------
    >>> from projloss.tasks import ENCODINGS
    >>> enc = ENCODINGS["cumulative"]
    >>> enc.marginal, enc.target_losses, enc.event_shape(5)
    ('order_simplex', ('absolute',), (4,))
    """

    name: str
    marginal: str
    target_losses: tuple[str, ...]

    @property
    def matrix(self) -> bool:
        """Whether the encoded labels are ``k x k`` matrices (the marginal polytope's)."""
        return SETS[self.marginal].matrix

    @property
    def projection_sets(self) -> tuple[str, ...]:
        """The registered sets that contain the encoded labels.

        Supersets of the marginal polytope in the same space.
        """
        return tuple(n for n, cls in SETS.items() if self.name in cls.encodings)

    @property
    def decoders(self) -> tuple[str, ...]:
        """The registered sets whose vertices encode valid outputs.

        The marginal polytope first (the paper's decoder).
        """
        names = [n for n, cls in SETS.items() if self.name in cls.decodes]
        return tuple(sorted(names, key=lambda n: n != self.marginal))

    def event_shape(self, k: int) -> tuple[int, ...]:
        """Shape of one encoded label for ``k`` classes / labels.

        A point of the marginal polytope (:meth:`ConvexSet.event_shape`: ``(k, k)`` for
        permutation matrices, ``(k - 1,)`` for the order simplex's cumulative encoding).

        Parameters
        ----------
        k : int
            Number of classes (or labels).

        Returns
        -------
        shape : tuple of int
            The shape of one encoded label.
        """
        return SETS[self.marginal]().event_shape(k)


@dataclass(frozen=True)
class Task:
    """A task: its encodings (one per family of decoding sets) and its metric.

    Parameters
    ----------
    name : str
        The task's name (a key of :data:`TASKS`).
    encodings : tuple of Encoding
        Its label encodings, one per family of decoding sets.
    default_decoder : str or None, default=None
        The decoding set used when the projection set cannot decode (None: the decoding
        set must then be given).

    Examples
    --------
    >>> from projloss.tasks import get_task
    >>> task = get_task("ordinal")
    >>> task.decoders, task.encoding_of("order_simplex").name
    (('order_simplex',), 'cumulative')
    """

    name: str
    encodings: tuple[Encoding, ...]
    default_decoder: str | None = None

    @property
    def decoders(self) -> tuple[str, ...]:
        """The decoding sets of all the task's encodings, in encoding order."""
        return tuple(d for e in self.encodings for d in e.decoders)

    @property
    def projection_sets(self) -> tuple[str, ...]:
        """The projection sets of all the task's encodings (without repeats), in order."""
        seen: dict[str, None] = {}
        for e in self.encodings:
            seen.update(dict.fromkeys(e.projection_sets))
        return tuple(seen)

    def encoding_of(self, decoder: str) -> Encoding:
        """The encoding whose outputs the decoding set ``decoder`` produces.

        Parameters
        ----------
        decoder : str
            Registry name of a decoding set.

        Returns
        -------
        encoding : Encoding
            The first of the task's encodings that lists ``decoder`` among its decoders.

        Raises
        ------
        ValueError
            If no encoding of the task has ``decoder`` as a decoding set.
        """
        for e in self.encodings:
            if decoder in e.decoders:
                return e
        raise ValueError(
            f"the decoding set {decoder!r} cannot produce outputs for the {self.name} task; "
            f"valid decoding sets are {list(self.decoders)}"
        )


PERMUTATION_MATRIX = Encoding(
    name="permutation_matrix",
    marginal="birkhoff",
    target_losses=("hamming", "hamming_ranking"),
)
PERMUTAHEDRON = Encoding(
    name="permutahedron",
    marginal="permutahedron",
    target_losses=("spearman",),
)
CUMULATIVE = Encoding(
    name="cumulative",
    marginal="order_simplex",
    target_losses=("absolute",),
)
INDICATOR = Encoding(
    name="indicator",
    marginal="unit_cube",
    target_losses=("hamming",),
)
ONE_HOT = Encoding(
    name="one_hot",
    marginal="simplex",
    target_losses=("zero_one", "loss_matrix"),
)

#: The label encodings by name (the names a set lists in ``ConvexSet.encodings`` and
#: ``ConvexSet.decodes``).
ENCODINGS: dict[str, Encoding] = {
    e.name: e for e in (PERMUTATION_MATRIX, PERMUTAHEDRON, CUMULATIVE, INDICATOR, ONE_HOT)
}

TASKS: dict[str, Task] = {
    t.name: t
    for t in (
        Task("label_ranking", (PERMUTATION_MATRIX, PERMUTAHEDRON)),
        Task("ordinal", (CUMULATIVE,), default_decoder="order_simplex"),
        Task("multilabel", (INDICATOR,)),
        Task("multiclass", (ONE_HOT,), default_decoder="simplex"),
    )
}


def _known_sets() -> set[str]:
    """Registered sets plus every set a task refers to (some may land later)."""
    names = set(SETS)
    for t in TASKS.values():
        names.update(t.projection_sets, t.decoders)
    return names


@dataclass(frozen=True)
class Composition:
    """A validated composition (names), with the encoding it uses.

    Built by :func:`check_composition`.

    Parameters
    ----------
    task : str
        The task's name.
    projection_set : str
        Registry name of the projection set :math:`C`.
    geometry : str
        The geometry :math:`\\Psi` (``"euclidean"`` or ``"kl"``).
    decoding_set : str
        Registry name of the decoding set :math:`D`.
    target_loss : str
        Registry name of the target loss :math:`L`.
    encoding : Encoding
        The label encoding shared by :math:`C` and :math:`D`.
    """

    task: str
    projection_set: str
    geometry: str
    decoding_set: str
    target_loss: str
    encoding: Encoding


def _name(obj: str | ConvexSet | TargetLoss | None, kind: str) -> str | None:
    if obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, ConvexSet | TargetLoss):
        return obj.name
    raise ValueError(f"{kind} must be a name or an instance, got {type(obj).__name__}")


def get_task(task: str) -> Task:
    """The task registered as ``task``.

    Parameters
    ----------
    task : str
        A key of :data:`TASKS`: ``"label_ranking"``, ``"ordinal"``, ``"multilabel"`` or
        ``"multiclass"``.

    Returns
    -------
    task : Task
        The task.

    Raises
    ------
    ValueError
        If ``task`` is not a registered task.
    """
    try:
        return TASKS[task]
    except (KeyError, TypeError):
        raise ValueError(f"unknown task {task!r}; valid tasks are {sorted(TASKS)}") from None


def check_composition(
    task: str,
    projection_set: str | ConvexSet,
    geometry: str = "euclidean",
    decoding_set: str | ConvexSet | None = None,
    target_loss: str | TargetLoss | None = None,
) -> Composition:
    """Validate a composition for ``task`` and fill in the defaults.

    ``decoding_set=None`` means the projection set when it is a valid decoder for the task,
    else the task's only decoder (ordinal: order simplex; multiclass: simplex); otherwise
    (e.g. label ranking projected on ``reals``) it must be given. ``target_loss=None`` means
    the encoding's default target loss.

    Parameters
    ----------
    task : str
        The task's name (see :func:`get_task`).
    projection_set : str or ConvexSet
        The projection set :math:`C` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\\Psi`.
    decoding_set : str or ConvexSet or None, default=None
        The decoding set :math:`D`; None for the default described above.
    target_loss : str or TargetLoss or None, default=None
        The target loss :math:`L`; None for the encoding's default.

    Returns
    -------
    composition : Composition
        The validated composition, as names, with the defaults filled in.

    Raises
    ------
    ValueError
        Naming the problem and the valid choices: if the task, a set, the geometry or the
        target loss is unknown; the projection set does not contain the task's encoded
        labels; no decoding set is given where the projection set cannot decode; the two
        sets live in different encodings; the geometry is not defined on the projection
        set; or the target loss does not decompose over the decoding set's vertices.

    Examples
    --------
    >>> from projloss.tasks import check_composition
    >>> c = check_composition("ordinal", "reals")  # decoded on the order simplex
    >>> c.decoding_set, c.target_loss, c.encoding.name
    ('order_simplex', 'absolute', 'cumulative')
    """
    t = get_task(task)
    proj = _name(projection_set, "projection_set")
    dec = _name(decoding_set, "decoding_set")
    tl = _name(target_loss, "target_loss")
    if proj not in _known_sets():
        raise ValueError(
            f"unknown projection set {proj!r}; valid projection sets for the {t.name} task "
            f"are {list(t.projection_sets)}"
        )
    if proj not in t.projection_sets:
        raise ValueError(
            f"the projection set {proj!r} does not contain the encoded labels of the {t.name} "
            f"task; valid projection sets are {list(t.projection_sets)}"
        )
    if dec is None:
        if proj in t.decoders:
            dec = proj
        elif t.default_decoder is not None:
            dec = t.default_decoder
        else:
            candidates = [d for e in t.encodings if proj in e.projection_sets for d in e.decoders]
            raise ValueError(
                f"the projection set {proj!r} cannot decode (it is unbounded or produces no "
                f"valid {t.name} output): give a decoding set, one of {candidates}"
            )
    if dec not in _known_sets():
        raise ValueError(
            f"unknown decoding set {dec!r}; valid decoding sets for the {t.name} task are "
            f"{list(t.decoders)}"
        )
    enc = t.encoding_of(dec)
    if proj not in enc.projection_sets:
        raise ValueError(
            f"the projection set {proj!r} and the decoding set {dec!r} live in different spaces "
            f"(encoding {enc.name!r}); with the decoding set {dec!r} the projection set must be "
            f"one of {list(enc.projection_sets)}"
        )
    g = check_geometry(geometry)
    set_cls = SETS.get(proj)
    valid_geoms = set_cls.geometries if set_cls is not None else ("euclidean", "kl")
    if g not in valid_geoms:
        hint = set_cls.geometry_hint if set_cls is not None else ""
        raise ValueError(
            f"the {g!r} geometry is not defined for the projection set {proj!r}; valid "
            f"geometries for it are {valid_geoms}{hint}"
        )
    if tl is None:
        tl = enc.target_losses[0]
    if tl not in TARGET_LOSSES:
        raise ValueError(
            f"unknown target loss {tl!r}; valid target losses for the {t.name} task with the "
            f"decoding set {dec!r} are {[n for n in enc.target_losses if _decodes(n, dec)]}"
        )
    if tl not in enc.target_losses or not _decodes(tl, dec):
        raise ValueError(
            f"the target loss {tl!r} does not decompose over the outputs of the decoding set "
            f"{dec!r} for the {t.name} task; valid target losses are "
            f"{[n for n in enc.target_losses if _decodes(n, dec)]}"
        )
    return Composition(t.name, proj, g, dec, tl, enc)


def _decodes(target_loss: str, decoder: str) -> bool:
    """Whether ``target_loss`` decomposes over the vertices of ``decoder``: the loss names
    the set (``TargetLoss.decoders``) or the set names the loss
    (:attr:`ConvexSet.target_losses`, a set registered later)."""
    cls = SETS.get(decoder)
    own = cls.target_losses if cls is not None else ()
    return decoder in TARGET_LOSSES[target_loss].decoders or target_loss in own


def valid_compositions(task: str) -> list[tuple[str, str, str, str]]:
    """Every valid (projection set, geometry, decoding set, target loss) for ``task``.

    As names, among the sets that are registered; ``loss_matrix`` is left out (it needs a
    matrix, so it is not composable by name).

    Parameters
    ----------
    task : str
        The task's name (see :func:`get_task`).

    Returns
    -------
    compositions : list of tuple of str
        The ``(projection_set, geometry, decoding_set, target_loss)`` tuples that
        :func:`check_composition` accepts.

    Raises
    ------
    ValueError
        If ``task`` is not a registered task.
    """
    t = get_task(task)
    out = []
    for enc in t.encodings:
        for proj in (p for p in enc.projection_sets if p in SETS):
            for dec in (d for d in enc.decoders if d in SETS):
                for g in ("euclidean", "kl"):
                    for tl in enc.target_losses:
                        if tl == "loss_matrix":
                            continue  # needs a matrix: not composable by name
                        try:
                            check_composition(task, proj, g, dec, tl)
                        except ValueError:
                            continue
                        out.append((proj, g, dec, tl))
    return out


__all__ = [
    "ENCODINGS",
    "TASKS",
    "Composition",
    "Encoding",
    "Task",
    "check_composition",
    "get_task",
    "valid_compositions",
]
