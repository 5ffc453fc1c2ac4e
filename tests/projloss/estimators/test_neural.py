"""The multilayer perceptrons (projloss.estimators.neural): against the linear engine on
iris label ranking, the scikit-learn API, CPU determinism, and the clean failures (NaN
loss, ``device="cuda"`` without a GPU, PyTorch missing)."""

from __future__ import annotations

import pickle
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from helpers import load_label_ranking, require_sets
from sklearn.base import clone
from sklearn.exceptions import ConvergenceWarning
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler
from sklearn.utils.estimator_checks import parametrize_with_checks

from projloss.estimators import (
    ProjectionClassifier,
    ProjectionLabelRanker,
    ProjectionMLPClassifier,
    ProjectionMLPLabelRanker,
    ProjectionMLPMultilabelClassifier,
    ProjectionMLPOrdinalRegressor,
)
from projloss.estimators.neural import NO_TORCH, TrainingDivergedError

torch = pytest.importorskip("torch")

SRC = Path(__file__).resolve().parents[3] / "src"
#: small and quick networks (CPU)
SMALL = {"hidden_layer_sizes": (8,), "max_iter": 30, "random_state": 0, "device": "cpu"}


def ranking_data(n=90, k=3, d=4, seed=0):
    rng = np.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    scores = X @ rng.standard_normal((d, k)) + 0.3 * rng.standard_normal((n, k))
    return X, np.argsort(-scores, axis=1)


def quiet_fit(model, X, y):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        return model.fit(X, y)


# ---------------------------------------------------------------- against the linear engine
def test_no_hidden_layer_matches_the_linear_model_on_iris():
    """A network without hidden layer is the linear model fitted by Adam: on iris (label
    ranking, Birkhoff polytope, the same lambda) its test accuracy is the linear one's
    within 2 points of 1 - Hamming, and its training objective within 2% of the optimum."""
    require_sets("birkhoff")
    X, y = load_label_ranking("iris")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.3, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    X_tr, X_te = scaler.transform(X_tr), scaler.transform(X_te)
    alpha = 1e-2
    linear = ProjectionLabelRanker(alpha=alpha, tol=1e-9).fit(X_tr, y_tr)
    net = ProjectionMLPLabelRanker(
        alpha=alpha,
        hidden_layer_sizes=(),
        learning_rate=3e-2,
        batch_size=len(X_tr),  # full batch: the same objective as L-BFGS's
        max_iter=1000,
        tol=1e-7,
        n_iter_no_change=20,
        random_state=0,
        device="cpu",
    ).fit(X_tr, y_tr)
    assert net.converged_ and len(net.coefs_) == 1 and net.coefs_[0].shape == (9, 4)
    assert net.objective_ == pytest.approx(linear.objective_, rel=0.02)
    assert net.objective_ >= linear.objective_ - 1e-9  # the linear fit is the optimum
    assert abs(net.score(X_te, y_te) - linear.score(X_te, y_te)) <= 0.02
    # one hidden layer does at least as well as chance by far (3 labels: 1 - H ~ 0.56)
    mlp = quiet_fit(ProjectionMLPLabelRanker(alpha=alpha, hidden_layer_sizes=(16,),
                                             learning_rate=1e-2, random_state=0,
                                             device="cpu"), X_tr, y_tr)  # fmt: skip
    assert mlp.score(X_te, y_te) >= linear.score(X_te, y_te) - 0.05


def test_decoding_is_the_linear_estimators():
    """theta from the network, then the engine's projection and calibrated decoding: the
    predictions are the linear estimator's predictions of the network's theta."""
    X, y = ranking_data()
    net = quiet_fit(ProjectionMLPLabelRanker(projection_set="reals", decoding_set="birkhoff",
                                             **SMALL), X, y)  # fmt: skip
    theta = net.decision_function(X)
    assert theta.shape == (len(X), 3, 3)
    u = net.project(X)
    np.testing.assert_array_equal(u, theta)  # reals: the identity projection
    vertices = net.decoding_set_.argmax(net.target_loss_.scores(u))
    np.testing.assert_array_equal(net.predict(X), net.decoding_set_.decode(vertices))
    # the numpy forward pass is the torch one
    t = torch.as_tensor(X)
    for i, (W, b) in enumerate(zip(net.coefs_, net.intercepts_, strict=True)):
        t = t @ torch.as_tensor(W).T + torch.as_tensor(b)
        if i < len(net.coefs_) - 1:
            t = torch.relu(t)
    np.testing.assert_allclose(theta.reshape(len(X), -1), t.numpy(), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("cls", "kwargs", "y"),
    [
        (ProjectionMLPClassifier, {}, np.arange(60) % 3),
        (ProjectionMLPOrdinalRegressor, {}, np.arange(60) % 4),
        (ProjectionMLPMultilabelClassifier, {"projection_set": "knapsack"},
         (np.arange(60)[:, None] >> np.arange(3)) % 2),
        (ProjectionMLPClassifier, {"geometry": "kl"}, np.arange(60) % 3),
    ],
)  # fmt: skip
def test_every_task(cls, kwargs, y):
    X = np.random.default_rng(1).standard_normal((60, 5)) + np.asarray(y).reshape(60, -1)[:, :1]
    model = quiet_fit(cls(**kwargs, **SMALL), X, y)
    pred = model.predict(X)
    assert pred.shape == np.asarray(y).shape
    assert len(model.history_["loss"]) == model.n_iter_ <= 30


# ---------------------------------------------------------------- scikit-learn API
DECISION = "decision_function returns theta (n, k), not scikit-learn's binary (n,) convention"


@parametrize_with_checks(
    [
        ProjectionMLPClassifier(
            hidden_layer_sizes=(8,), max_iter=50, learning_rate=1e-2, random_state=0, device="cpu"
        )
    ],
    expected_failed_checks=lambda e: {
        "check_classifiers_classes": DECISION,
        "check_classifiers_train": DECISION,
    },
)
def test_scikit_learn_estimator_checks(estimator, check):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ConvergenceWarning)
        check(estimator)


def test_clone_get_params_and_pickle():
    model = ProjectionMLPLabelRanker(alpha=0.5, hidden_layer_sizes=(4, 3), dropout=0.1)
    params = clone(model).get_params()
    assert params["alpha"] == 0.5 and params["hidden_layer_sizes"] == (4, 3)
    assert params["device"] == "auto" and params["random_state"] is None
    X, y = ranking_data()
    fitted = quiet_fit(clone(model).set_params(**SMALL), X, y)
    assert not hasattr(model, "coefs_")  # clone: unfitted
    again = pickle.loads(pickle.dumps(fitted))
    np.testing.assert_array_equal(again.predict(X), fitted.predict(X))
    assert fitted.device_ == "cpu" and fitted.torch_version_ == torch.__version__


def test_stopping_rules_history_and_convergence_warning():
    X, y = ranking_data()
    with pytest.warns(ConvergenceWarning, match="max_iter=3 epochs"):
        m = ProjectionMLPLabelRanker(**{**SMALL, "max_iter": 3}).fit(X, y)
    assert not m.converged_ and m.n_iter_ == 3 and len(m.history_["loss"]) == 3
    es = quiet_fit(ProjectionMLPLabelRanker(**{**SMALL, "max_iter": 200}, early_stopping=True,
                                            n_iter_no_change=3, validation_fraction=0.2),
                   X, y)  # fmt: skip
    assert es.converged_ and es.n_iter_ < 200
    scores = es.history_["val_score"]
    assert len(scores) == len(es.history_["loss"]) == es.n_iter_
    assert es.best_validation_score_ == max(scores)
    # the kept network is the best epoch's: its score on the held-out part is that best
    # (the held-out rows are those a seeded permutation left out)
    assert es.best_validation_score_ <= 1.0 and np.all(np.isfinite(es.history_["loss"]))


@pytest.mark.parametrize(
    ("param", "value", "match"),
    [
        ("hidden_layer_sizes", (0,), "hidden_layer_sizes"),
        ("activation", "gelu", "unknown activation"),
        ("dropout", 1.0, "dropout"),
        ("device", "tpu", "device must be one of"),
        ("learning_rate", 0.0, "learning_rate"),
        ("alpha", -1.0, "alpha"),
        ("dtype", "float16", "dtype"),
    ],
)
def test_bad_hyperparameters(param, value, match):
    X, y = ranking_data()
    with pytest.raises(ValueError, match=match):
        ProjectionMLPLabelRanker(**{**SMALL, param: value}).fit(X, y)


# ---------------------------------------------------------------- determinism
def test_same_seed_same_fit_bit_for_bit():
    X, y = ranking_data()
    params = {**SMALL, "dropout": 0.2, "early_stopping": True, "batch_size": 16}
    a = quiet_fit(ProjectionMLPLabelRanker(**params), X, y)
    b = quiet_fit(ProjectionMLPLabelRanker(**params), X, y)
    for u, v in zip([*a.coefs_, *a.intercepts_], [*b.coefs_, *b.intercepts_], strict=True):
        assert u.tobytes() == v.tobytes()
    assert a.history_ == b.history_
    assert a.decision_function(X).tobytes() == b.decision_function(X).tobytes()
    np.testing.assert_array_equal(a.predict(X), b.predict(X))
    c = quiet_fit(ProjectionMLPLabelRanker(**{**params, "random_state": 1}), X, y)
    assert not np.array_equal(a.coefs_[0], c.coefs_[0])  # the seed matters
    # the fit leaves PyTorch's global settings as it found them
    assert not torch.are_deterministic_algorithms_enabled()


# ---------------------------------------------------------------- clean failures
def test_nan_loss_names_lambda_and_the_remedy():
    X, y = ranking_data()
    model = ProjectionMLPLabelRanker(**{**SMALL, "learning_rate": 1e30, "dtype": "float32"},
                                     alpha=0.01)  # fmt: skip
    with pytest.raises(TrainingDivergedError) as info:
        model.fit(X, y)
    msg = str(info.value)
    assert "\n" not in msg and "alpha (lambda) = 0.01" in msg
    assert "lower the learning rate" in msg and "raise alpha" in msg
    assert not hasattr(model, "coefs_")  # no model


@pytest.mark.skipif(torch.cuda.is_available(), reason="a GPU is present")
def test_cuda_without_gpu_is_one_line():
    X, y = ranking_data()
    with pytest.raises(ValueError, match=r"^device='cuda' but PyTorch sees no CUDA GPU") as e:
        ProjectionMLPLabelRanker(**{**SMALL, "device": "cuda"}).fit(X, y)
    assert "\n" not in str(e.value)
    # "auto" falls back to the CPU
    m = quiet_fit(ProjectionMLPLabelRanker(**{**SMALL, "device": "auto"}), X, y)
    assert m.device_ == "cpu"


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no GPU")
def test_cuda_fit_matches_cpu_up_to_rounding():
    X, y = ranking_data()
    cpu = quiet_fit(ProjectionMLPLabelRanker(**SMALL), X, y)
    gpu = quiet_fit(ProjectionMLPLabelRanker(**{**SMALL, "device": "cuda"}), X, y)
    assert gpu.device_ == "cuda"
    np.testing.assert_allclose(gpu.decision_function(X), cpu.decision_function(X), atol=1e-6)


NO_TORCH_SCRIPT = f"""
import sys
sys.path.insert(0, {str(SRC)!r})


class NoTorch:  # a finder hiding PyTorch: import torch raises ImportError
    def find_spec(self, name, path=None, target=None):
        if name == "torch" or name.startswith("torch."):
            raise ModuleNotFoundError(f"No module named {{name!r}}")


sys.meta_path.insert(0, NoTorch())
import pickle
import numpy as np
from projloss.estimators import ProjectionMLPLabelRanker, ProjectionLabelRanker
X = np.random.default_rng(0).standard_normal((20, 3))
y = np.argsort(-X, axis=1)
ProjectionLabelRanker(projection_set="permutahedron").fit(X, y)  # the engine needs no torch
try:
    ProjectionMLPLabelRanker(projection_set="permutahedron").fit(X, y)
except ImportError as exc:
    print("IMPORTERROR:" + str(exc))
# a network fitted where PyTorch is installed predicts here (NumPy arrays)
m = pickle.loads(open(sys.argv[1], "rb").read())
print(m.predict(np.load(sys.argv[2])).tolist())
assert "torch" not in sys.modules
"""


def test_without_torch_fit_fails_in_one_line_and_fitted_networks_predict(tmp_path):
    X, y = ranking_data()
    model = quiet_fit(ProjectionMLPLabelRanker(projection_set="permutahedron", **SMALL), X, y)
    path = tmp_path / "model.pkl"
    path.write_bytes(pickle.dumps(model))
    np.save(tmp_path / "X.npy", X)
    out = subprocess.run(
        [sys.executable, "-c", NO_TORCH_SCRIPT, str(path), str(tmp_path / "X.npy")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    error, predicted = out.stdout.strip().splitlines()[-2:]
    assert error == "IMPORTERROR:" + NO_TORCH
    assert "pip install 'projloss[torch]'" in NO_TORCH
    assert predicted == str(model.predict(X).tolist())


def test_linear_estimators_unchanged_by_the_shared_fit_start():
    """``_prepare_fit`` (shared with the networks) leaves the linear fit as it was."""
    X, y = np.random.default_rng(0).standard_normal((40, 3)), np.arange(40) % 3
    m = ProjectionClassifier(alpha=0.1).fit(X, y)
    assert m.coef_.shape == (3, 3) and m.composition_.projection_set == "simplex"
    assert m.event_shape_ == (3,)
