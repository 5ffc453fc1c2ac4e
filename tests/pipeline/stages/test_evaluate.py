"""Evaluate stage: test scores, predictions, models and figures."""

from __future__ import annotations

import json

import numpy as np
import pytest

from pipeline.config.run import RunConfig
from pipeline.data.api import load_prepared
from pipeline.runs import evaluate, refit, tune

from ..conftest import RecordingTracker, run_config

PNG = b"\x89PNG\r\n\x1a\n"


def _pipeline(prepared, overrides: list[str], dataset: str):
    cfg = run_config(prepared, [*overrides, f"dataset={dataset}", "lambdas.num=3"])
    data = load_prepared(dataset, cfg)
    run = RunConfig.from_config(cfg)
    tuned = tune.run(run, data)
    return run, data, tuned, refit.run(run, data, tuned)


def test_label_ranking(prepared, tmp_path) -> None:
    cfg, data, tuned, refitted = _pipeline(prepared, ["task=label_ranking"], "iris")
    tracker = RecordingTracker(heatmap_samples=2)
    out = evaluate.run(cfg, data, tuned, refitted, tracker, out_dir=tmp_path)
    X, y = data.test
    pred = refitted.model_for("hamming").predict(X)
    P, T = np.eye(y.shape[1])[pred], np.eye(y.shape[1])[y]  # independent Hamming loss
    want = 100 * np.mean(P != T)
    assert out["test"]["hamming"]["hamming"] == pytest.approx(want)
    assert out["headline"] == {"hamming": pytest.approx(want)}
    assert tracker.metrics["test.hamming"] == pytest.approx(want)
    assert out["lambda"] == {"hamming": tuned["selected"]["hamming"]["lambda"]}
    with np.load(tmp_path / evaluate.PREDICTIONS) as npz:
        np.testing.assert_array_equal(npz["index"], data.index["test"])
        np.testing.assert_array_equal(npz["y_true"], y)
        np.testing.assert_array_equal(npz["y_pred.hamming"], pred)
    results = json.loads((tmp_path / evaluate.RESULTS).read_text())
    assert results["headline"]["hamming"] == pytest.approx(want)
    assert results["composition"]["set"] == "birkhoff"
    assert results["tune"]["metrics"] == tuned["metrics"]
    for name in ("validation_curve.png", "soft_permutations.png"):
        assert (tmp_path / name).read_bytes().startswith(PNG)
        assert (tmp_path / name, "figures") in tracker.artifacts
    # the model: the fitted scaler and the estimator, named after the composition
    assert list(tracker.models) == ["iris-birkhoff-birkhoff-euclidean"]
    pipe = tracker.models["iris-birkhoff-birkhoff-euclidean"]
    assert pipe.named_steps["estimator"] is refitted.model_for("hamming")
    raw = pipe.named_steps["scaler"].inverse_transform(X)
    np.testing.assert_array_equal(pipe.predict(raw), pred)
    assert tracker.params == {"lambda.hamming": f"{tuned['selected']['hamming']['lambda']:.4g}"}


def test_multilabel_headline_uses_each_metric_lambda(prepared, tmp_path) -> None:
    cfg, data, tuned, _ = _pipeline(prepared, ["task=multilabel", "set=knapsack"], "emotions")
    for s in tuned["select_by"]:  # accuracy chooses one lambda, the F1 scores another
        i = 2 if s == "accuracy" else 0
        tuned["selected"][s] = {"index": i, "lambda": tuned["lambdas"][i], "value": 0.0}
    refitted = refit.run(cfg, data, tuned)
    tracker = RecordingTracker()
    out = evaluate.run(cfg, data, tuned, refitted, tracker, out_dir=tmp_path)
    X, Y = data.test
    for s in tuned["select_by"]:
        P = refitted.model_for(s).predict(X)
        assert out["test"][s]["accuracy"] == pytest.approx(100 * np.mean(P == Y))
    assert out["headline"]["accuracy"] == out["test"]["accuracy"]["accuracy"]
    assert out["headline"]["f1_micro"] == out["test"]["f1_micro"]["f1_micro"]
    assert out["test"]["accuracy"] != out["test"]["f1_micro"]
    assert tracker.metrics["test.f1_micro.by_accuracy"] == out["test"]["accuracy"]["f1_micro"]
    base = "emotions-knapsack-knapsack-euclidean"
    assert list(tracker.models) == [base, f"{base}-by_f1_micro"]
    assert tracker.models[base].named_steps["estimator"] is refitted.model_for("accuracy")
    assert (tmp_path / "validation_curve.png").is_file()
    assert not (tmp_path / "soft_permutations.png").exists()  # ranking tasks only


def test_no_tracking_no_files(prepared) -> None:
    """Without tracking nor an output directory, evaluate writes nothing."""
    cfg, data, tuned, refitted = _pipeline(prepared, ["task=ordinal", "model=median"], "ERA")
    out = evaluate.run(cfg, data, tuned, refitted)
    y = data.test[1]
    median = refitted.model_for("mae").median_
    assert out["headline"]["mae"] == pytest.approx(np.mean(np.abs(y - median)))
    assert out["lambda"] == {"mae": None}


def _curve(seed: int, metrics: tuple[str, ...] = ("hamming", "spearman")) -> dict:
    """A tuned run's validation curves (what the validation-curve figure draws)."""
    rng = np.random.default_rng(seed)
    lambdas = list(np.logspace(-4, 4, 10))
    values = {m: list(rng.uniform(0, 50, 10)) for m in metrics}
    selected = {m: {"index": 3, "lambda": lambdas[3], "value": values[m][3]} for m in metrics}
    return {"lambdas": lambdas, "metrics": values, "selected": selected}


def _drawn_alone(fig, path) -> bytes:
    """``fig`` drawn by matplotlib's own savefig (a new canvas and renderer), with the run
    figures' style and PNG options (:data:`pipeline.runs.figures.STYLE`, ``PNG_OPTIONS``)."""
    import matplotlib
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    from pipeline.runs import figures

    with matplotlib.rc_context(figures.STYLE):
        FigureCanvasAgg(fig).print_figure(
            path, format="png", dpi=100, pil_kwargs=figures.PNG_OPTIONS
        )
    return path.read_bytes()


def test_figures_share_a_renderer_and_keep_their_bytes(tmp_path, monkeypatch) -> None:
    """The evaluate workers draw a figure per run with one Agg renderer per figure size
    (:func:`pipeline.runs.figures.save`): a later figure of a size drawn before reuses the
    layout of the tick labels (no math text parsed again for the log axis's ``10^k``), and
    every PNG is the same bytes as the figure drawn alone, on a new renderer."""
    import matplotlib._mathtext

    from pipeline.runs import figures

    def alone(fig) -> bytes:
        return _drawn_alone(fig, tmp_path / "alone.png")

    parses: list[str] = []
    parse = matplotlib._mathtext.Parser.parse

    def counted(self, s, *args, **kwargs):
        parses.append(s)
        return parse(self, s, *args, **kwargs)

    monkeypatch.setattr(matplotlib._mathtext.Parser, "parse", counted)
    rng = np.random.default_rng(0)
    drawn, counts = [], []
    for i, make in enumerate(
        [
            lambda: figures.validation_curve(_curve(0), "iris: birkhoff->birkhoff"),
            lambda: figures.validation_curve(_curve(1, ("mae",)), "ERA: reals->round"),
            lambda: figures.soft_permutations(rng.random((2, 3, 3)), None, "iris (soft)"),
            lambda: figures.validation_curve(_curve(2), "glass: cube->cube"),
        ]
    ):
        drawn.append(figures.save(make(), tmp_path / f"{i}.png").read_bytes())
        counts.append(len(parses))
    # the last figure, of the first one's size, parsed no math text (the others' sizes did)
    assert counts[0] > 0 and counts[3] == counts[2]
    rng = np.random.default_rng(0)
    again = [
        figures.validation_curve(_curve(0), "iris: birkhoff->birkhoff"),
        figures.validation_curve(_curve(1, ("mae",)), "ERA: reals->round"),
        figures.soft_permutations(rng.random((2, 3, 3)), None, "iris (soft)"),
        figures.validation_curve(_curve(2), "glass: cube->cube"),
    ]
    for png, fig in zip(drawn, again, strict=True):
        assert png.startswith(PNG) and png == alone(fig)


def test_soft_permutations_reuse_their_figure_and_keep_their_bytes(tmp_path) -> None:
    """An evaluate worker draws the soft-permutation heatmaps of every label-ranking run
    with one figure per shape (:func:`pipeline.runs.figures.save_soft_permutations`: built
    once, given each run's values): every PNG is the same bytes as the figure built anew
    for it, whatever the values' range (the colorbar's ticks), the true entries or the
    title, for permutation matrices and permutahedron vectors."""
    from pipeline.runs import figures
    from projloss.target_losses import permutation_matrix

    def alone(U, truth, title) -> bytes:
        return _drawn_alone(figures.soft_permutations(U, truth, title), tmp_path / "alone.png")

    rng = np.random.default_rng(0)
    cases = []
    for j, scale in enumerate((1.0, 3.0, 0.5)):
        y = np.array([rng.permutation(4) for _ in range(3)])
        cases.append((rng.random((3, 4, 4)) * scale, permutation_matrix(y), f"m{j}"))
        cases.append((rng.random((2, 5)) * 4 * scale, None, f"v{j}"))
    for U, truth, title in cases:
        png = figures.save_soft_permutations(U, truth, title, tmp_path / "reused.png")
        assert png.read_bytes().startswith(PNG) and png.read_bytes() == alone(U, truth, title)
    assert len(figures._SOFT) >= 2  # one figure per shape, reused


def test_validation_curves_reuse_their_figure_and_keep_their_bytes(tmp_path, monkeypatch) -> None:
    """An evaluate worker draws the validation curves of its runs with one figure per
    number of panels (:func:`pipeline.runs.figures.save_validation_curve`: built once,
    given each run's curves): every PNG is the same bytes as the figure built anew for it,
    whatever the lambda grid (its decades), the chosen lambdas (the dashed lines and the
    panels' titles), the metrics' names and ranges (y labels and limits) or the title; a
    panel without a chosen lambda (no dashed line) is a figure of its own."""
    from pipeline.runs import figures

    monkeypatch.setattr(figures, "_CURVES", {})  # no figure of a previous test
    rng = np.random.default_rng(0)

    def curve(metrics, lambdas, chosen, scale) -> dict:
        values = {m: list(rng.uniform(0, scale, len(lambdas))) for m in metrics}
        selected = {
            m: {"index": i, "lambda": lambdas[i], "value": values[m][i]}
            for m, i in zip(metrics, chosen, strict=True)
            if i is not None
        }
        return {"lambdas": lambdas, "metrics": values, "selected": selected}

    paper = list(np.logspace(-4, 4, 10))
    short = list(np.logspace(-2.5, 1, 6))
    ml = ("accuracy", "f1_micro", "f1_macro", "f1_samples")
    cases = [
        (curve(("hamming",), paper, (3,), 50.0), "iris: t1"),
        (curve(ml, paper, (4, 4, 4, 0), 100.0), "birds: cube"),
        (curve(("mae",), short, (5,), 2.0), "ERA: median"),  # other decades, range, name
        (curve(ml, short, (1, 2, 3, 5), 1.0), "emotions: cube"),
        (curve(("hamming",), paper, (0,), 0.01), "glass: t2"),
        (curve(("hamming", "spearman"), paper, (None, 7), 30.0), "wine: no pick"),
        (curve(("kendall", "spearman"), short, (None, 2), 3.0), "vehicle: no pick"),
    ]
    for tuned, title in cases:
        png = figures.save_validation_curve(tuned, title, tmp_path / "reused.png")
        fresh = _drawn_alone(figures.validation_curve(tuned, title), tmp_path / "alone.png")
        assert png.read_bytes().startswith(PNG) and png.read_bytes() == fresh, title
    assert len(figures._CURVES) == 3  # 1, 4 and 2 panels (one with no chosen lambda)


_TICK_LABEL = "$\\mathdefault{10^{-2}}$"
#: the fonts the parent drew the tick label with (a forked child inherits them, alive)
_PARENT_FONTS: list = []


def _tick_label_fonts() -> list:
    """The FreeType fonts this process's renderer draws the ``10^{-2}`` tick label with."""
    from matplotlib.font_manager import FontProperties

    from pipeline.runs import figures

    (renderer,) = figures._RENDERERS.values()
    parse = renderer.mathtext_parser.parse(_TICK_LABEL, 100, FontProperties(size=10))
    return [glyph[0] for glyph in parse.glyphs]


def _draws_with_fonts_of_its_own(tmp_path) -> bool:
    """In a forked worker: draw a validation curve, then say whether its tick label is
    drawn with none of the fonts of the parent (kept alive there: no id is reused)."""
    from pipeline.runs import figures

    figures.save(figures.validation_curve(_curve(0), "child"), tmp_path / "child.png")
    return not any(f is g for f in _tick_label_fonts() for g in _PARENT_FONTS)


def test_forked_workers_draw_with_fonts_of_their_own(tmp_path, monkeypatch) -> None:
    """A forked evaluate worker draws with FreeType fonts of its own, not those of the
    figures its parent drew (:func:`pipeline.runs.figures._forget_fonts_after_fork`): a
    font reads its file through a descriptor whose offset forked processes share, and
    sibling workers drawing the parent's cached ``10^k`` tick labels failed in
    ``FT_Load_Glyph`` (test_splits' in-workers evaluate, about one run in two)."""
    import multiprocessing

    from pipeline.runs import figures

    monkeypatch.setattr(figures, "_RENDERERS", {})
    figures.save(figures.validation_curve(_curve(0), "parent"), tmp_path / "parent.png")
    _PARENT_FONTS[:] = _tick_label_fonts()
    try:
        assert _PARENT_FONTS  # the parent drew the tick label, parsed once and cached
        with multiprocessing.get_context("fork").Pool(1) as pool:
            assert pool.apply(_draws_with_fonts_of_its_own, (tmp_path,))
    finally:
        _PARENT_FONTS.clear()


def test_warm_up_builds_the_math_text_parser_before_the_workers_fork(tmp_path, monkeypatch) -> None:
    """The evaluate stage draws a figure in memory before it forks its workers
    (:func:`pipeline.runs.figures.warm_up`): a worker's first validation curve then builds
    no math-text parser (the log axis's ``10^k`` labels: 0.6 s per process otherwise)."""
    import matplotlib._mathtext
    import matplotlib.mathtext

    from pipeline.runs import figures

    built: list[int] = []
    init = matplotlib._mathtext.Parser.__init__

    def counted(self, *args, **kwargs):
        built.append(1)
        return init(self, *args, **kwargs)

    monkeypatch.setattr(matplotlib._mathtext.Parser, "__init__", counted)
    for warm in (False, True):
        monkeypatch.setattr(matplotlib.mathtext.MathTextParser, "_parser", None)
        monkeypatch.setattr(figures, "_WARM", False)
        monkeypatch.setattr(figures, "_RENDERERS", {})  # no text laid out before
        if warm:
            figures.warm_up()
        built.clear()
        figures.save(figures.validation_curve(_curve(0), "iris"), tmp_path / f"{warm}.png")
        assert len(built) == (0 if warm else 1)
