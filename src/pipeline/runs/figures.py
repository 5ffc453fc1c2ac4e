"""Figures of a run (matplotlib, no pyplot: no global state, no display needed).

- :func:`validation_curve`: each validation metric against lambda (log scale), with the
  chosen lambda marked;
- :func:`soft_permutations`: the soft outputs ``project(X)`` of a few test samples as
  heatmaps (paper Figure 3: soft permutation matrices of the Birkhoff polytope), with the
  true labels marked.

matplotlib is imported when a figure is drawn, not with this module.

The evaluate workers draw one validation curve per tuned run and the heatmaps of every
label-ranking run, so the figures are kept cheap: :func:`save_validation_curve` and
:func:`save_soft_permutations` reuse one figure per layout, the log lambda axis has a tick
per decade and no minor ticks (:func:`_log_lambda_axis`), the panels' titles have a fixed
place, and the PNG is drawn unhinted and encoded at zlib level 3 (:data:`STYLE`,
:data:`PNG_OPTIONS`). Measured in a warm process (CPU seconds per figure, the tuned runs
of ``data/tuning/{ml,lr,ord}.json`` and lr's heatmap shapes; 2 shared cores, 78c7349 and
this code run in turn): ml's 4-panel curves 115 -> 58 ms, lr's and ord's 1-panel curves
32 -> 16 ms, the heatmaps 63 -> 49 ms; 50 -> 28 ms per figure on average (1.8x; the curves
2x, the heatmaps 1.3x: their cost is drawing their text, one tick label per label).
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np


def _figure(width: float, height: float) -> Any:
    from matplotlib.figure import Figure

    # No layout engine: constrained/tight layout doubles the drawing time of these small
    # figures (measured), and fixed margins suit their fixed structure.
    return Figure(figsize=(width, height))


def validation_curve(tuned: Mapping[str, Any], title: str) -> Any:
    """One panel per metric: validation value against lambda (log axis, a tick per decade
    of the grid, :func:`_log_lambda_axis`), the selected lambda dashed."""
    lambdas = tuned["lambdas"]
    metrics = tuned["metrics"]
    width = 4.0 * len(metrics)
    fig = _figure(width, 3.4)
    fig.subplots_adjust(left=0.75 / width, right=0.97, bottom=0.16, top=0.80, wspace=0.35)
    axes = fig.subplots(1, len(metrics), squeeze=False)[0]
    for ax, (name, values) in zip(axes, metrics.items(), strict=True):
        ax.plot(lambdas, values, marker="o")
        ax.set_xscale("log")
        _log_lambda_axis(ax, lambdas)
        ax.yaxis.get_major_formatter().set_useOffset(False)  # no offset text by the title
        ax.set_xlabel("lambda")
        ax.set_ylabel(f"validation {name}")
        chosen = tuned["selected"].get(name)
        if chosen is not None:
            ax.axvline(chosen["lambda"], color="gray", linestyle="--", linewidth=1)
        # y=1.0: the title's place is fixed (matplotlib otherwise lays out the axis's
        # ticks again to find the top of the axes, the same place here)
        ax.set_title(_chosen_title(name, chosen), fontsize=9, y=1.0)
        ax.grid(True, alpha=0.3)
    fig.suptitle(title, fontsize=10)
    return fig


def _chosen_title(name: str, chosen: Mapping[str, Any] | None) -> str:
    return "" if chosen is None else f"{name}: lambda = {chosen['lambda']:.3g}"


#: this process's validation-curve figures, by which of their panels mark a chosen lambda
#: (:func:`save_validation_curve`)
_CURVES: dict[tuple[bool, ...], Any] = {}


def save_validation_curve(tuned: Mapping[str, Any], title: str, path: Path) -> Path:
    """:func:`save` of :func:`validation_curve` ``(tuned, title)``, the same PNG bytes, with
    this process's figure of that many panels (created once, then given the new curves).

    Building a figure (its axes, and their ticks on its first draw) was ~40% of a curve's
    CPU (ml's 4 panels: 126 -> 75 ms reused), and an evaluate worker draws one per tuned
    run, most with the same panels; the artists are the
    same for every run with as many panels and the same panels marking a chosen lambda:
    only the curves' data, the lambda axis's decades, the dashed lines' positions, the
    panels' titles and y labels, the data limits and the suptitle change."""
    lambdas = tuned["lambdas"]
    metrics = tuned["metrics"]
    chosen = [tuned["selected"].get(name) for name in metrics]
    key = tuple(pick is not None for pick in chosen)
    if key not in _CURVES:
        fig = validation_curve(tuned, title)
        _CURVES[key] = fig
        return save(fig, path)
    fig = _CURVES[key]
    for ax, (name, values), pick in zip(fig.axes, metrics.items(), chosen, strict=True):
        ax.lines[0].set_data(lambdas, values)
        _log_lambda_axis(ax, lambdas)
        ax.set_ylabel(f"validation {name}")
        if pick is not None:
            ax.lines[1].set_xdata([pick["lambda"], pick["lambda"]])
        ax.set_title(_chosen_title(name, pick), fontsize=9, y=1.0)
        ax.relim()
        ax.autoscale_view()
    fig.suptitle(title, fontsize=10)
    return save(fig, path)


#: at most this many labelled decades on a lambda axis (every other decade of 1e-4..1e4)
_DECADE_LABELS = 5


def _log_lambda_axis(ax: Any, lambdas: Any) -> None:
    """Ticks of the log lambda axis: one major tick (and grid line) per decade spanned by
    ``lambdas``, labelled ``10^k`` on every ``ceil(decades / 5)``-th decade (matplotlib's
    own choice for the paper's 1e-4..1e4 grid on a 4-inch panel), no minor ticks.

    matplotlib's log axis has 8 minor ticks per decade (the grid drew a line at each):
    Tick objects to build, lay out and draw, the top of a figure's profile."""
    from matplotlib.ticker import FixedFormatter, FixedLocator, NullLocator

    logs = np.log10(np.asarray(lambdas, dtype=np.float64))
    low, high = int(np.floor(logs.min())), int(np.ceil(logs.max()))
    decades = np.arange(low, high + 1)
    step = max(1, -(-(high - low) // (_DECADE_LABELS - 1)))
    labels = [f"$\\mathdefault{{10^{{{k}}}}}$" if (k - low) % step == 0 else "" for k in decades]
    ax.xaxis.set_major_locator(FixedLocator(10.0**decades))
    ax.xaxis.set_major_formatter(FixedFormatter(labels))
    ax.xaxis.set_minor_locator(NullLocator())


def soft_permutations(U: np.ndarray, truth: np.ndarray | None, title: str) -> Any:
    """Heatmaps of soft outputs ``U`` (``(n, k, k)`` matrices, or ``(n, k)`` vectors drawn
    as one-row maps), with the true 0/1 entries ``truth`` (same shape) circled."""
    U = np.asarray(U, dtype=np.float64)
    if U.ndim == 2:
        U = U[:, None, :]
        truth = None if truth is None else np.asarray(truth)[:, None, :]
    n = U.shape[0]
    fig = _figure(3.0 * n + 0.8, 3.2 if U.shape[1] > 1 else 1.8)
    fig.subplots_adjust(left=0.06, right=0.9, bottom=0.16, top=0.82, wspace=0.3)
    axes = fig.subplots(1, n, squeeze=False)[0]
    image = None
    for i, ax in enumerate(axes):
        image = ax.imshow(U[i], vmin=0.0, vmax=max(1.0, float(U.max())), cmap="viridis")
        if truth is not None:
            rows, cols = np.nonzero(np.asarray(truth[i]) > 0.5)
            ax.scatter(cols, rows, s=60, facecolors="none", edgecolors="red", linewidths=1.5)
        ax.set_xlabel("label")
        ax.set_ylabel("rank" if U.shape[1] > 1 else "")
        ax.set_title(f"test sample {i}", fontsize=9, y=1.0)
        ax.set_xticks(range(U.shape[2]))
        ax.set_yticks(range(U.shape[1]))
    if image is not None:
        fig.colorbar(image, cax=fig.add_axes((0.92, 0.16, 0.015, 0.66)))
    fig.suptitle(title, fontsize=10)
    return fig


#: this process's soft-permutation figures, by the shape of what they show
#: (:func:`save_soft_permutations`)
_SOFT: dict[tuple[Any, ...], Any] = {}


def save_soft_permutations(U: np.ndarray, truth: np.ndarray | None, title: str, path: Path) -> Path:
    """:func:`save` of :func:`soft_permutations` ``(U, truth, title)``, the same PNG bytes,
    with this process's figure of that shape (created once, then given the new values).

    Building the figure (its axes, and their ticks and labels, one per label) cost more
    than drawing it, and the evaluate workers draw one per label-ranking run, a dozen of
    each shape (a dataset's number of labels); the figure's artists are the same for a
    shape, only the images' values and range (and so the colorbar's ticks), the circles
    of the true entries and the title change."""
    U = np.asarray(U, dtype=np.float64)
    truth = None if truth is None else np.asarray(truth)
    key = (U.shape, None if truth is None else truth.shape)
    if key not in _SOFT:
        fig = soft_permutations(U, truth, title)
        _SOFT[key] = fig
        save(fig, path)
        # the axis labels' places, found from the tick labels' boxes at each draw, stay
        # where this draw put them: the tick labels (0..k-1) are the same for the shape
        for axis in (axis for ax in fig.axes for axis in (ax.xaxis, ax.yaxis)):
            axis.set_label_coords(*axis.label.get_position(), axis.label.get_transform())
        return Path(path)
    fig = _SOFT[key]
    rows = U[:, None, :] if U.ndim == 2 else U
    marks = None if truth is None else (truth[:, None, :] if U.ndim == 2 else truth)
    vmax = max(1.0, float(rows.max()))
    for i, ax in enumerate(ax for ax in fig.axes if ax.images):  # not the colorbar's
        image = ax.images[0]
        image.set_data(rows[i])
        image.set_clim(0.0, vmax)
        if marks is not None:
            r, c = np.nonzero(marks[i] > 0.5)
            ax.collections[0].set_offsets(np.column_stack([c, r]).astype(np.float64))
    fig.suptitle(title, fontsize=10)  # the same text object, given the new title
    return save(fig, path)


_WARM = False


def warm_up() -> None:
    """Draw a small log-scale figure once in this process (in memory), so that the processes
    forked from it inherit what a first figure sets up: matplotlib's math-text parser (the
    log axis's ``10^k`` tick labels; 0.6 s to build, once per process otherwise) and the
    fonts. The evaluate stage calls it before forking its workers."""
    global _WARM
    if _WARM:
        return
    import io

    import matplotlib

    curve = {"lambdas": [0.01, 1.0], "metrics": {"m": [0.0, 1.0]}, "selected": {}}
    fig = validation_curve(curve, "warm-up")
    with matplotlib.rc_context(STYLE):
        fig.savefig(io.BytesIO(), format="png", dpi=DPI)
    _WARM = True


#: the resolution of the saved figures (matplotlib's default figure dpi)
DPI = 100
#: the rcParams the figures are drawn with (:func:`save`): FreeType's glyphs unhinted, as
#: matplotlib's own image tests draw them; hinting each glyph was ~15% of a figure's CPU
STYLE = {"text.hinting": "none"}
#: how the PNG files are encoded (Pillow's options): zlib level 3, not Pillow's 6, encodes
#: in ~2/3 of the time for files ~3% larger (ml's 4-panel curves 77 -> 79 kB)
PNG_OPTIONS = {"compress_level": 3}
#: this process's Agg renderers, by (width, height, dpi) in pixels
_RENDERERS: dict[tuple[int, int, float], Any] = {}


def save(fig: Any, path: Path) -> Path:
    """Write ``fig`` as PNG (atomically) and return the path (drawn by this process's
    renderer of its size, :func:`_share_renderer`, with the rcParams :data:`STYLE`, and
    encoded with :data:`PNG_OPTIONS`)."""
    import matplotlib

    from ..fileio import atomic_path

    _share_renderer(fig)
    with atomic_path(Path(path)) as tmp, matplotlib.rc_context(STYLE):
        fig.savefig(tmp, format="png", dpi=DPI, pil_kwargs=PNG_OPTIONS)
    return Path(path)


def _share_renderer(fig: Any) -> None:
    """Draw ``fig`` with this process's Agg renderer of its size (created once).

    A renderer caches the layout of each text it draws (font metrics, and the parse of
    each math text: the log axis's ``10^k`` tick labels), and a new figure would get a
    new renderer, so every figure laid out every tick label again. Drawing starts by
    clearing the renderer's canvas, so the image is the same bytes."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(fig)
    if fig.dpi != DPI:
        return
    key = (*canvas.get_width_height(physical=True), fig.dpi)
    if key not in _RENDERERS:
        _RENDERERS[key] = canvas.get_renderer()
    canvas.renderer = _RENDERERS[key]
    canvas._lastKey = key


def _forget_fonts_after_fork() -> None:
    """In a forked child: drop this process's renderers and matplotlib's cache of parsed
    math texts, which hold the parent's FreeType fonts (``FT2Font``).

    A font is not to be used across a fork (its FreeType library, and the file it reads
    through a descriptor whose offset forked processes share): sibling workers drawing the
    parent's cached ``10^k`` tick labels failed in ``FT_Load_Glyph`` ("invalid outline",
    "too many hints"; tests/pipeline/test_splits.py's in-workers evaluate, 3 runs in 5 on
    78c7349). matplotlib empties its own font cache at a fork for that reason, not these.
    The math-text parser itself (the 0.6 s that :func:`warm_up` saves) holds no font and
    stays."""
    _RENDERERS.clear()
    mathtext = sys.modules.get("matplotlib.mathtext")
    if mathtext is not None:
        mathtext.MathTextParser._parse_cached.cache_clear()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_fonts_after_fork)


__all__ = [
    "save",
    "save_soft_permutations",
    "save_validation_curve",
    "soft_permutations",
    "validation_curve",
    "warm_up",
]
