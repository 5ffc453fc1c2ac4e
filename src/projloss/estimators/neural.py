r"""Neural models with projection losses: a multilayer perceptron whose output layer gives
:math:`\theta`, trained on the Fenchel-Young projection loss with PyTorch.

The network :math:`g_w(x)` replaces the linear model :math:`Wx + b` of the other estimators;
everything else is theirs: the composition (projection set :math:`C`, geometry
:math:`\Psi`, decoding set :math:`D`, target loss :math:`L`), the label encodings and the
calibrated decoding :math:`\hat y = \mathrm{MAP}_D(-Vu - b_L)`,
:math:`u = P_C^\Psi(g_w(x))` (paper eq. 9), so a network and a linear model of one
composition differ only in :math:`\theta`. The fit minimizes

.. math::
    \frac1n\sum_i S_C^\Psi(g_w(x_i), \varphi(y_i)) + \frac\alpha2\sum_l\|W_l\|_F^2

by Adam on mini-batches (:class:`projloss.torch.ProjectionLoss`: one projection per batch,
its gradient :math:`P_C^\Psi(\theta) - \varphi`), :math:`\alpha` (:math:`\lambda`, the
parameter the pipeline tunes) being the L2 penalty of the weight matrices (not of the
biases), as :math:`\lambda` penalizes :math:`W` in the linear model: a network without
hidden layer (``hidden_layer_sizes=()``) is the linear model, fitted by Adam.

The fitted network is stored as NumPy arrays (``coefs_``, ``intercepts_``, as
scikit-learn's ``MLPClassifier``): predicting needs neither PyTorch nor a GPU, and the
fitted estimator pickles and serializes (skops, MLflow) as the linear ones do.

**Stopping** (scikit-learn's ``MLPClassifier`` conventions): at most ``max_iter`` epochs;
training stops earlier when the training objective has not decreased by ``tol`` for
``n_iter_no_change`` epochs, or, with ``early_stopping=True``, when the validation score
(the estimator's :meth:`score` on a held-out ``validation_fraction`` of the training data)
has not increased by ``tol`` for ``n_iter_no_change`` epochs, the network then being the
one of the best validation epoch. Reaching ``max_iter`` first emits a
``ConvergenceWarning`` (``converged_ = False``). ``history_`` records per epoch the
training objective (``"loss"``) and, with early stopping, the validation score
(``"val_score"``).

**Determinism.** With an integer ``random_state`` the initialization, the shuffling and
the dropout masks come from seeded ``torch.Generator`` objects; on the CPU the fit runs
under ``torch.use_deterministic_algorithms(True)`` with one PyTorch thread: two fits give
bit-identical networks (and predictions). On a GPU the projections are the sets' tensor
algorithms, whose reductions, like cuBLAS's (unless the caller sets
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` and ``torch.use_deterministic_algorithms(True)``
before CUDA starts), may differ in the last bits from run to run: the same seed gives the
same fit up to rounding, not bit for bit.

Requires PyTorch (``pip install 'projloss[torch]'``) to fit, not to predict.

Examples
--------
>>> import numpy as np
>>> from projloss.estimators import ProjectionMLPLabelRanker
>>> rng = np.random.default_rng(0)
>>> X = rng.standard_normal((60, 3))
>>> y = np.argsort(-(X @ rng.standard_normal((3, 4))), axis=1)  # y[i, rank] = label
>>> model = ProjectionMLPLabelRanker(
...     projection_set="permutahedron", hidden_layer_sizes=(16,), learning_rate=1e-2,
...     max_iter=500, random_state=0, device="cpu",
... ).fit(X, y)
>>> model.predict(X[:2]).shape
(2, 4)
>>> model.score(X, y) > 0.9  # 1 - Hamming loss between permutation matrices
True
>>> [w.shape for w in model.coefs_], model.device_
([(16, 3), (4, 16)], 'cpu')
"""

from __future__ import annotations

import contextlib
import itertools
import numbers
import warnings
from collections.abc import Iterator, Sequence
from typing import Any

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike, NDArray
from sklearn.exceptions import ConvergenceWarning
from sklearn.utils import check_random_state
from sklearn.utils._indexing import _safe_indexing
from sklearn.utils.extmath import safe_sparse_dot
from sklearn.utils.validation import check_is_fitted

from ..sets import ConvexSet
from ..target_losses import TargetLoss
from .label_ranking import ProjectionLabelRanker
from .multiclass import ProjectionClassifier
from .multilabel import ProjectionMultilabelClassifier
from .ordinal import ProjectionOrdinalRegressor

#: the hidden layers' activations (scikit-learn's ``MLPClassifier`` names)
ACTIVATIONS = ("relu", "tanh", "logistic", "identity")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("float32", "float64")

#: the one line of a fit without PyTorch
NO_TORCH = "the neural models (model=mlp) need PyTorch, which is not installed: " + (
    "pip install 'projloss[torch]'"
)


class TrainingDivergedError(FloatingPointError):
    """The training loss of a network became NaN or infinite (a learning rate too large
    for the regularization): the message names ``alpha`` and the remedy."""


def _import_torch() -> Any:
    """``torch`` (imported here, at fit time: projloss imports without it)."""
    try:
        import torch
    except ImportError:
        raise ImportError(NO_TORCH) from None
    return torch


def resolve_device(device: str) -> str:
    """``"cpu"`` or ``"cuda"`` for ``device`` (``"auto"``: a GPU when PyTorch sees one).

    Parameters
    ----------
    device : {"auto", "cpu", "cuda"}
        The requested device.

    Returns
    -------
    device : {"cpu", "cuda"}
        The device the network will train on.

    Raises
    ------
    ValueError
        If ``device`` is not one of ``DEVICES``, or is ``"cuda"`` without a GPU (one line).
    ImportError
        If PyTorch is not installed.
    """
    if device not in DEVICES:
        raise ValueError(f"device must be one of {list(DEVICES)}, got {device!r}")
    torch = _import_torch()
    if device == "cpu":
        return "cpu"
    has_gpu = bool(torch.cuda.is_available())
    if device == "cuda" and not has_gpu:
        raise ValueError(
            "device='cuda' but PyTorch sees no CUDA GPU here (torch.cuda.is_available() is "
            f"False; torch {torch.__version__}): use device='auto' or 'cpu'"
        )
    return "cuda" if has_gpu else "cpu"


def _activation_np(name: str, h: NDArray[np.float64]) -> NDArray[np.float64]:
    if name == "relu":
        return np.maximum(h, 0.0)
    if name == "tanh":
        return np.tanh(h)
    if name == "logistic":
        from scipy.special import expit

        return expit(h)
    return h


def _activation_torch(name: str, h: Any) -> Any:
    torch = _import_torch()
    if name == "relu":
        return torch.relu(h)
    if name == "tanh":
        return torch.tanh(h)
    if name == "logistic":
        return torch.sigmoid(h)
    return h


@contextlib.contextmanager
def _deterministic(torch: Any, device: str) -> Iterator[None]:
    """On the CPU: ``torch.use_deterministic_algorithms(True)`` and one PyTorch thread for
    the fit, both restored after it (one thread as the linear fits use one BLAS thread: the
    results do not depend on the machine's cores, and small networks train several times
    faster -- measured: 8x on iris, 2 busy cores -- without threads that spin-wait). On a
    GPU nothing is changed: deterministic cuBLAS needs ``CUBLAS_WORKSPACE_CONFIG`` set
    before CUDA starts, which a library cannot do for its caller (see the module
    docstring)."""
    if device != "cpu":
        yield
        return
    before = torch.are_deterministic_algorithms_enabled()
    warn_only = torch.is_deterministic_algorithms_warn_only_enabled()
    threads = torch.get_num_threads()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before, warn_only=warn_only)
        torch.set_num_threads(threads)


class _NeuralMixin:
    """The network, its fit and its forward pass; the rest (targets, sets, decoding,
    ``predict``, ``score``) is the task estimator's (the class after this one in the MRO)."""

    # ------------------------------------------------------------------ checks
    def _check_hyperparameters(self) -> None:
        def number(name: str, value: Any, low: float, strict: bool, integer: bool = False):
            kind = numbers.Integral if integer else numbers.Real
            ok = isinstance(value, kind) and not isinstance(value, bool) and np.isfinite(value)
            ok = ok and (value > low if strict else value >= low)
            if not ok:
                what = "an integer" if integer else "a finite number"
                raise ValueError(
                    f"{name} must be {what} {'>' if strict else '>='} {low}, got {value!r}"
                )

        number("alpha", self.alpha, 0, strict=False)
        number("max_iter", self.max_iter, 0, strict=True, integer=True)
        number("tol", self.tol, 0, strict=False)
        number("learning_rate", self.learning_rate, 0, strict=True)
        number("n_iter_no_change", self.n_iter_no_change, 0, strict=True, integer=True)
        if not (isinstance(self.dropout, numbers.Real) and 0 <= self.dropout < 1):
            raise ValueError(f"dropout must be a number in [0, 1), got {self.dropout!r}")
        vf = self.validation_fraction
        if self.early_stopping and not (isinstance(vf, numbers.Real) and 0 < vf < 1):
            raise ValueError(f"validation_fraction must be in (0, 1), got {vf!r}")
        if self.batch_size != "auto":
            number("batch_size", self.batch_size, 0, strict=True, integer=True)
        sizes = self.hidden_layer_sizes
        if isinstance(sizes, numbers.Integral) and not isinstance(sizes, bool):
            sizes = (sizes,)
        if not isinstance(sizes, Sequence) or not all(
            isinstance(s, numbers.Integral) and not isinstance(s, bool) and s > 0 for s in sizes
        ):
            raise ValueError(
                f"hidden_layer_sizes must be a sequence of integers > 0 (() for no hidden "
                f"layer), got {self.hidden_layer_sizes!r}"
            )
        if self.activation not in ACTIVATIONS:
            raise ValueError(f"unknown activation {self.activation!r}; valid: {list(ACTIVATIONS)}")
        if self.device not in DEVICES:
            raise ValueError(f"device must be one of {list(DEVICES)}, got {self.device!r}")
        if self.dtype not in DTYPES:
            raise ValueError(f"dtype must be one of {list(DTYPES)}, got {self.dtype!r}")

    def _hidden(self) -> tuple[int, ...]:
        sizes = self.hidden_layer_sizes
        if isinstance(sizes, numbers.Integral):
            return (int(sizes),)
        return tuple(int(s) for s in sizes)

    # ------------------------------------------------------------------ fit
    def fit(self, X: Any, y: Any) -> Any:
        """Fit the network on the projection loss (Adam on mini-batches, PyTorch).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Training inputs; sparse inputs are densified for the network.
        y : array-like
            Labels in the task's natural form (see the task estimator's docstring, e.g.
            :meth:`ProjectionLabelRanker.fit <projloss.estimators.ProjectionLabelRanker.fit>`).

        Returns
        -------
        self : object
            Fitted estimator.

        Raises
        ------
        ImportError
            PyTorch is not installed (one line naming ``pip install 'projloss[torch]'``).
        ValueError
            ``device="cuda"`` without a GPU, a bad hyperparameter, bad labels, or
            ``early_stopping`` with a ``validation_fraction`` that leaves no training
            sample.
        TrainingDivergedError
            The training loss became NaN or infinite (names ``alpha`` and the remedy).
        """
        self._check_hyperparameters()
        torch = _import_torch()
        import projloss.torch as pt

        device = resolve_device(self.device)
        X, phi = self._prepare_fit(X, y)
        if sp.issparse(X):
            X = X.toarray()
        n = X.shape[0]
        rng = check_random_state(self.random_state)
        seed = int(rng.randint(np.iinfo(np.int32).max))
        val_idx = None
        train_idx = np.arange(n)
        if self.early_stopping:
            n_val = max(1, round(float(self.validation_fraction) * n))
            if n - n_val < 1:
                raise ValueError(
                    f"early_stopping with validation_fraction={self.validation_fraction} "
                    f"leaves no training sample of {n}: lower validation_fraction"
                )
            perm = np.random.default_rng(seed).permutation(n)
            val_idx, train_idx = np.sort(perm[:n_val]), np.sort(perm[n_val:])
            X_val, y_val = X[val_idx], _safe_indexing(y, val_idx)

        dtype = getattr(torch, self.dtype)
        p = int(np.prod(self.event_shape_))
        sizes = [X.shape[1], *self._hidden(), p]
        gen = torch.Generator().manual_seed(seed)  # init, shuffling (CPU)
        drop_gen = torch.Generator(device=device).manual_seed(seed + 1)  # dropout masks
        warm = (
            self.warm_start
            and getattr(self, "coefs_", None) is not None
            and [c.shape for c in self.coefs_] == [(b, a) for a, b in itertools.pairwise(sizes)]
        )
        params = []
        for layer, (fan_in, fan_out) in enumerate(itertools.pairwise(sizes)):
            if warm:
                W = torch.as_tensor(self.coefs_[layer], dtype=dtype)
                b = torch.as_tensor(self.intercepts_[layer], dtype=dtype)
            else:  # PyTorch's nn.Linear initialization, U(-1/sqrt(fan_in), 1/sqrt(fan_in))
                bound = 1.0 / np.sqrt(fan_in)
                W = (torch.rand(fan_out, fan_in, generator=gen, dtype=dtype) * 2 - 1) * bound
                b = (torch.rand(fan_out, generator=gen, dtype=dtype) * 2 - 1) * bound
            params += [W.to(device).requires_grad_(), b.to(device).requires_grad_()]
        weights = params[0::2]

        Xt = torch.as_tensor(np.ascontiguousarray(X[train_idx]), dtype=dtype, device=device)
        Pt = torch.as_tensor(np.ascontiguousarray(phi[train_idx]), dtype=dtype, device=device)
        n_train = Xt.shape[0]
        batch = min(200, n_train) if self.batch_size == "auto" else min(self.batch_size, n_train)
        loss_fn = pt.ProjectionLoss(
            self.projection_set_, self.composition_.geometry, event_ndim=len(self.event_shape_)
        )
        optimizer = torch.optim.Adam(params, lr=float(self.learning_rate))
        alpha = float(self.alpha)
        act, drop = self.activation, float(self.dropout)

        def forward(h: Any, train: bool) -> Any:
            for i in range(0, len(params), 2):
                h = h @ params[i].T + params[i + 1]
                if i + 2 < len(params):
                    h = _activation_torch(act, h)
                    if train and drop > 0:
                        keep = torch.rand(h.shape, generator=drop_gen, device=device, dtype=dtype)
                        h = h * (keep >= drop) / (1.0 - drop)
            return h

        history: dict[str, list[float]] = {"loss": []}
        if self.early_stopping:
            history["val_score"] = []
        best_loss, best_score, best_params = np.inf, -np.inf, None
        no_change, converged, epoch = 0, False, 0
        with _deterministic(torch, device):
            for epoch in range(1, int(self.max_iter) + 1):
                order = torch.randperm(n_train, generator=gen).to(device)
                total = 0.0
                for start in range(0, n_train, batch):
                    idx = order[start : start + batch]
                    theta = forward(Xt[idx], train=True).reshape(-1, *self.event_shape_)
                    if not bool(torch.isfinite(theta).all()):
                        raise self._diverged(epoch)
                    try:
                        loss = loss_fn(theta, Pt[idx])
                    except ValueError as exc:  # the loss value overflowed the dtype
                        if "overflows" in str(exc):
                            raise self._diverged(epoch) from None
                        raise
                    if alpha > 0:
                        loss = loss + 0.5 * alpha * sum((W * W).sum() for W in weights)
                    optimizer.zero_grad(set_to_none=True)
                    loss.backward()
                    optimizer.step()
                    value = float(loss.detach())
                    if not np.isfinite(value):
                        raise self._diverged(epoch)
                    total += value * idx.shape[0]
                epoch_loss = total / n_train
                history["loss"].append(epoch_loss)
                if self.early_stopping:
                    self._store(params)
                    score = float(self.score(X_val, y_val))
                    history["val_score"].append(score)
                    if score > best_score + self.tol:
                        no_change = 0
                    else:
                        no_change += 1
                    if score > best_score:
                        best_score = score
                        best_params = [a.copy() for a in (*self.coefs_, *self.intercepts_)]
                else:
                    no_change = no_change + 1 if epoch_loss > best_loss - self.tol else 0
                    best_loss = min(best_loss, epoch_loss)
                if no_change >= self.n_iter_no_change:
                    converged = True
                    break
        self._store(params)
        if self.early_stopping and best_params is not None:
            k = len(self.coefs_)
            self.coefs_, self.intercepts_ = best_params[:k], best_params[k:]
            self.best_validation_score_ = best_score
        self.history_ = history
        self.n_iter_ = epoch
        self.converged_ = converged
        self.objective_ = history["loss"][-1] if history["loss"] else float("nan")
        self.device_ = device
        self.torch_version_ = str(torch.__version__)
        if not converged:
            warnings.warn(
                f"the network's training stopped at max_iter={self.max_iter} epochs before "
                f"its stopping rule (tol={self.tol}, n_iter_no_change="
                f"{self.n_iter_no_change}); raise max_iter",
                ConvergenceWarning,
                stacklevel=2,
            )
        return self

    def _diverged(self, epoch: int) -> TrainingDivergedError:
        lr = float(self.learning_rate)
        return TrainingDivergedError(
            f"the network's training loss became NaN or infinite at epoch {epoch} with "
            f"alpha (lambda) = {float(self.alpha):.3g} and learning_rate = {lr:.3g}: lower "
            f"the learning rate (e.g. learning_rate={lr / 10:.3g}) or raise alpha (lambda)"
        )

    def _store(self, params: list[Any]) -> None:
        """The network's tensors as float64 NumPy arrays (the fitted attributes)."""
        arrays = [np.asarray(t.detach().cpu().double().numpy()) for t in params]
        self.coefs_, self.intercepts_ = arrays[0::2], arrays[1::2]

    # ------------------------------------------------------------------ predict
    def decision_function(self, X: Any) -> NDArray[np.float64]:
        r"""Network outputs :math:`\theta = g_w(x)` (NumPy, float64: no PyTorch needed).

        Parameters
        ----------
        X : {array-like, sparse matrix} of shape (n_samples, n_features)
            Input samples.

        Returns
        -------
        theta : ndarray of shape (n_samples, ``*event_shape_``)
            The network's outputs, the input of the projection.

        Raises
        ------
        sklearn.exceptions.NotFittedError
            If the estimator is not fitted.
        """
        check_is_fitted(self, "coefs_")
        X = self._validate_X(X, reset=False)
        h = X
        last = len(self.coefs_) - 1
        for i, (W, b) in enumerate(zip(self.coefs_, self.intercepts_, strict=True)):
            h = safe_sparse_dot(h, W.T, dense_output=True) + b
            if i < last:
                h = _activation_np(self.activation, h)
        return np.asarray(h).reshape(X.shape[0], *self.event_shape_)


#: the class docstring of the networks, ``%``-formatted with each one's composition
#: defaults and its task's extra parameters
_NEURAL_DOC = r"""
    Parameters
    ----------
    projection_set : str or ConvexSet, default=%(projection_set)s
        The set :math:`C` of the loss :math:`S_C^\Psi` (a registry name or an instance).
    geometry : {"euclidean", "kl"}, default="euclidean"
        The geometry :math:`\Psi` of the projection.
    decoding_set : str or ConvexSet, default=None
        The set :math:`D` of the calibrated decoding; ``None`` means %(decoding_set)s.
    target_loss : str or TargetLoss, default=None
        The target loss :math:`L`; ``None`` means %(target_loss)s.
    alpha : float, default=1e-4
        :math:`\lambda`: the L2 penalty :math:`\frac\alpha2\sum_l\|W_l\|_F^2` of the weight
        matrices (not of the biases).
    hidden_layer_sizes : sequence of int, default=(100,)
        The hidden layers' widths; ``()``: no hidden layer (the linear model).
    activation : {"relu", "tanh", "logistic", "identity"}, default="relu"
        The hidden layers' activation (scikit-learn's ``MLPClassifier`` names).
    dropout : float, default=0.0
        Dropout rate of the hidden layers during training.
    max_iter : int, default=200
        Maximum number of epochs.
    batch_size : int or "auto", default="auto"
        ``min(200, n_samples)`` for ``"auto"``.
    learning_rate : float, default=1e-3
        Adam's step size.
    early_stopping : bool, default=False
        Hold out ``validation_fraction`` of the training data; stop when its score has not
        improved by ``tol`` for ``n_iter_no_change`` epochs; keep the best epoch's network.
    validation_fraction : float, default=0.1
        The fraction of the training data held out for early stopping, in ``(0, 1)``.
    n_iter_no_change : int, default=10
        Number of epochs without an improvement by ``tol`` (of the training objective, or
        with early stopping of the validation score) after which training stops.
    tol : float, default=1e-4
        The improvement that counts for ``n_iter_no_change``.
    device : {"auto", "cpu", "cuda"}, default="auto"
        Where the network trains (``"auto"``: a GPU when PyTorch sees one).
    dtype : {"float64", "float32"}, default="float64"
        The training dtype (float32 is the GPUs' common one).
    random_state : int, RandomState or None, default=None
        Seeds the initialization, shuffling, the validation part and dropout.
    warm_start : bool, default=False
        Start from the previous fit's network (same architecture).
%(extra)s
    Attributes
    ----------
    coefs_ : list of ndarray
        The layers' weights, of shape ``(fan_out, fan_in)``, float64.
    intercepts_ : list of ndarray
        The layers' biases, of shape ``(fan_out,)``, float64.
    history_ : dict
        Per epoch: ``"loss"`` (training objective) and, with early stopping,
        ``"val_score"`` (validation score).
    n_iter_ : int
        Epochs run.
    converged_ : bool
        Whether the stopping rule ended the training (False: it reached ``max_iter``; a
        ``ConvergenceWarning`` was emitted).
    objective_ : float
        The last epoch's training objective.
    device_ : str
        ``"cpu"`` or ``"cuda"``: where the network trained.
    torch_version_ : str
        The PyTorch version of the fit.
    best_validation_score_ : float
        The best validation score (with early stopping).
    projection_set_, decoding_set_, target_loss_, composition_ : object
        The resolved composition, as for the linear estimator.
    event_shape_ : tuple of int
        The shape of one encoded label (of the network's output).

    See Also
    --------
    %(linear)s : The linear (and kernel) model of the same task.
"""

_W_DOC = r"""    w : array-like of shape (k,), default=None
        Weights of the permutahedron (descending, finite, distinct); ``None`` means
        ``(k, ..., 1)``. Only for the permutahedron encoding.
"""

_KNAPSACK_DOC = r"""    knapsack_lower : int, default=0
        Lower bound :math:`l` on the number of labels (knapsack sets given by name).
    knapsack_upper : int, "auto", "auto_round" or None, default="auto"
        Upper bound :math:`u` on the number of labels, as for
        :class:`~projloss.estimators.ProjectionMultilabelClassifier`.
"""


def _common(self: Any, **kwargs: Any) -> None:
    for name, value in kwargs.items():
        setattr(self, name, value)


class ProjectionMLPLabelRanker(_NeuralMixin, ProjectionLabelRanker):
    __doc__ = (
        "Label ranking with a multilayer perceptron, a projection loss and calibrated "
        "decoding (see :mod:`projloss.estimators.neural` and "
        ":class:`~projloss.estimators.ProjectionLabelRanker`: the same targets, "
        "compositions and outputs).\n"
        + _NEURAL_DOC
        % {
            "projection_set": '"birkhoff"',
            "decoding_set": "the projection set",
            "target_loss": "the encoding's default",
            "extra": _W_DOC,
            "linear": "ProjectionLabelRanker",
        }
    )

    def __init__(
        self,
        projection_set: str | ConvexSet = "birkhoff",
        geometry: str = "euclidean",
        decoding_set: str | ConvexSet | None = None,
        target_loss: str | TargetLoss | None = None,
        alpha: float = 1e-4,
        hidden_layer_sizes: Sequence[int] = (100,),
        activation: str = "relu",
        dropout: float = 0.0,
        max_iter: int = 200,
        batch_size: int | str = "auto",
        learning_rate: float = 1e-3,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 10,
        tol: float = 1e-4,
        device: str = "auto",
        dtype: str = "float64",
        random_state: Any = None,
        warm_start: bool = False,
        w: ArrayLike | None = None,
    ) -> None:
        _common(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class ProjectionMLPOrdinalRegressor(_NeuralMixin, ProjectionOrdinalRegressor):
    __doc__ = (
        "Ordinal regression with a multilayer perceptron, a projection loss and calibrated "
        "decoding (see :mod:`projloss.estimators.neural` and "
        ":class:`~projloss.estimators.ProjectionOrdinalRegressor`).\n"
        + _NEURAL_DOC
        % {
            "projection_set": '"order_simplex"',
            "decoding_set": "the order simplex",
            "target_loss": '``"absolute"``',
            "extra": "",
            "linear": "ProjectionOrdinalRegressor",
        }
    )

    def __init__(
        self,
        projection_set: str | ConvexSet = "order_simplex",
        geometry: str = "euclidean",
        decoding_set: str | ConvexSet | None = None,
        target_loss: str | TargetLoss | None = None,
        alpha: float = 1e-4,
        hidden_layer_sizes: Sequence[int] = (100,),
        activation: str = "relu",
        dropout: float = 0.0,
        max_iter: int = 200,
        batch_size: int | str = "auto",
        learning_rate: float = 1e-3,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 10,
        tol: float = 1e-4,
        device: str = "auto",
        dtype: str = "float64",
        random_state: Any = None,
        warm_start: bool = False,
    ) -> None:
        _common(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class ProjectionMLPMultilabelClassifier(_NeuralMixin, ProjectionMultilabelClassifier):
    __doc__ = (
        "Multilabel classification with a multilayer perceptron, a projection loss and "
        "calibrated decoding (see :mod:`projloss.estimators.neural` and "
        ":class:`~projloss.estimators.ProjectionMultilabelClassifier`).\n"
        + _NEURAL_DOC
        % {
            "projection_set": '"unit_cube"',
            "decoding_set": 'the projection set (required for ``"reals"``/``"nonneg"``)',
            "target_loss": '``"hamming"``',
            "extra": _KNAPSACK_DOC,
            "linear": "ProjectionMultilabelClassifier",
        }
    )

    def __init__(
        self,
        projection_set: str | ConvexSet = "unit_cube",
        geometry: str = "euclidean",
        decoding_set: str | ConvexSet | None = None,
        target_loss: str | TargetLoss | None = None,
        alpha: float = 1e-4,
        hidden_layer_sizes: Sequence[int] = (100,),
        activation: str = "relu",
        dropout: float = 0.0,
        max_iter: int = 200,
        batch_size: int | str = "auto",
        learning_rate: float = 1e-3,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 10,
        tol: float = 1e-4,
        device: str = "auto",
        dtype: str = "float64",
        random_state: Any = None,
        warm_start: bool = False,
        knapsack_lower: int = 0,
        knapsack_upper: int | str | None = "auto",
    ) -> None:
        _common(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


class ProjectionMLPClassifier(_NeuralMixin, ProjectionClassifier):
    __doc__ = (
        "Multiclass classification with a multilayer perceptron, a projection loss and "
        "calibrated decoding (see :mod:`projloss.estimators.neural` and "
        ":class:`~projloss.estimators.ProjectionClassifier`).\n"
        + _NEURAL_DOC
        % {
            "projection_set": '"simplex"',
            "decoding_set": "the simplex",
            "target_loss": '``"zero_one"``',
            "extra": "",
            "linear": "ProjectionClassifier",
        }
    )

    def __init__(
        self,
        projection_set: str | ConvexSet = "simplex",
        geometry: str = "euclidean",
        decoding_set: str | ConvexSet | None = None,
        target_loss: str | TargetLoss | None = None,
        alpha: float = 1e-4,
        hidden_layer_sizes: Sequence[int] = (100,),
        activation: str = "relu",
        dropout: float = 0.0,
        max_iter: int = 200,
        batch_size: int | str = "auto",
        learning_rate: float = 1e-3,
        early_stopping: bool = False,
        validation_fraction: float = 0.1,
        n_iter_no_change: int = 10,
        tol: float = 1e-4,
        device: str = "auto",
        dtype: str = "float64",
        random_state: Any = None,
        warm_start: bool = False,
    ) -> None:
        _common(self, **{k: v for k, v in locals().items() if k not in ("self", "__class__")})


#: the network estimator of each task
MLP_ESTIMATORS = {
    "label_ranking": ProjectionMLPLabelRanker,
    "ordinal": ProjectionMLPOrdinalRegressor,
    "multilabel": ProjectionMLPMultilabelClassifier,
    "multiclass": ProjectionMLPClassifier,
}
