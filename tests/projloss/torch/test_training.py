"""A small network trained with projloss.torch: a torch.nn.Linear and the projection loss
on iris label ranking (the paper's Table 1 data) reaches the engine's linear model
(projloss.estimators.ProjectionLabelRanker, same split, same objective), deterministically
on the CPU; and the PyTorch example of the guide (docs/guide/pytorch.md) runs."""

from __future__ import annotations

import re

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from helpers import load_label_ranking  # noqa: E402

import projloss.torch as pt  # noqa: E402
from docs_pages import page  # noqa: E402
from projloss.estimators import ProjectionLabelRanker  # noqa: E402
from projloss.metrics import ranking_hamming_loss  # noqa: E402


def _iris():
    from sklearn.model_selection import train_test_split
    from sklearn.preprocessing import StandardScaler

    X, y = load_label_ranking("iris")
    X_tr, X_te, y_tr, y_te = train_test_split(X, y, test_size=0.2, random_state=0)
    scaler = StandardScaler().fit(X_tr)
    return scaler.transform(X_tr), y_tr, scaler.transform(X_te), y_te


def _train(set_name, geometry, alpha, X, y, seed=0):
    """min_W,b mean S(W x + b, phi(y)) + alpha/2 ||W||^2 (the engine's objective) by
    full-batch L-BFGS in float64, from torch's default initialization under ``seed``."""
    torch.manual_seed(seed)
    k = y.shape[1]
    matrix = set_name == "birkhoff"
    X = torch.as_tensor(X)
    phi = pt.encode(y, set_name, dtype=torch.float64)
    model = torch.nn.Linear(X.shape[1], k * k if matrix else k).double()
    loss_fn = pt.ProjectionLoss(set_name, geometry)
    opt = torch.optim.LBFGS(
        model.parameters(),
        max_iter=500,
        tolerance_grad=1e-9,
        tolerance_change=1e-14,
        history_size=20,
        line_search_fn="strong_wolfe",
    )

    def closure():
        opt.zero_grad()
        theta = model(X)
        loss = loss_fn(theta.view(-1, k, k) if matrix else theta, phi)
        loss = loss + alpha / 2 * model.weight.square().sum()
        loss.backward()
        return loss

    opt.step(closure)
    return model


def _predict(model, set_name, geometry, target_loss, X, k):
    with torch.no_grad():
        theta = model(torch.as_tensor(X))
        if set_name == "birkhoff":
            theta = theta.view(-1, k, k)
        return pt.decode_scores(theta, set_name, geometry, target_loss, set_name).numpy()


@pytest.mark.parametrize(
    ("set_name", "geometry", "alpha", "target_loss"),
    [("permutahedron", "euclidean", 0.1, "spearman"), ("birkhoff", "euclidean", 0.01, "hamming")],
)
def test_iris_linear_model_reaches_the_engine(set_name, geometry, alpha, target_loss):
    """The same convex objective as the engine's estimator: the same weights (to the
    solvers' tolerance; the intercept is determined only up to the set's invariances),
    the same test predictions, hence the same test Hamming loss (Birkhoff: the paper's
    2.96 %)."""
    X_tr, y_tr, X_te, y_te = _iris()
    engine = ProjectionLabelRanker(projection_set=set_name, geometry=geometry, alpha=alpha)
    engine.fit(X_tr, y_tr)
    expected = ranking_hamming_loss(y_te, engine.predict(X_te))

    model = _train(set_name, geometry, alpha, X_tr, y_tr)
    pred = _predict(model, set_name, geometry, target_loss, X_te, 3)
    np.testing.assert_allclose(model.weight.detach().numpy(), engine.coef_, atol=2e-3)
    np.testing.assert_array_equal(pred, engine.predict(X_te))
    assert ranking_hamming_loss(y_te, pred) == expected
    print(f"iris {set_name}/{geometry}: test Hamming {expected:.2f}% (torch and engine)")


def test_training_is_deterministic_on_the_cpu():
    """Two runs with the same seed: bit-identical parameters."""
    X_tr, y_tr, _, _ = _iris()
    a = _train("permutahedron", "kl", 0.01, X_tr, y_tr, seed=3)
    b = _train("permutahedron", "kl", 0.01, X_tr, y_tr, seed=3)
    for p, q in zip(a.parameters(), b.parameters(), strict=True):
        assert torch.equal(p, q)
    c = _train("permutahedron", "kl", 0.01, X_tr[:-1], y_tr[:-1], seed=3)
    assert not torch.equal(a.weight, c.weight)  # (the check can fail)


def test_readme_example_runs(capsys):
    """The example of the guide's PyTorch page (``docs/guide/pytorch.md``) as written."""
    blocks = re.findall(r"```python\n(.*?)```", page("pytorch.md"), flags=re.S)
    assert blocks, "no python block in docs/guide/pytorch.md"
    source = blocks[0]
    namespace: dict = {}
    exec(compile(source, "docs/guide/pytorch.md", "exec"), namespace)
    out = capsys.readouterr().out
    accuracy = float(re.search(r"exact rankings: ([0-9.]+)", out).group(1))
    assert accuracy >= 0.9
    assert namespace["pred"].dtype == torch.int64 and namespace["pred"].shape == (512, 4)
