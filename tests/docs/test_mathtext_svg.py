"""The docs' offline math renderer (docs/_ext/mathtext_svg.py) draws the engine's TeX.

The formulas below are taken from the engine's docstrings and the gallery; each needs one
of the renderer's rewrites to go through matplotlib's mathtext (an unbraced ``\\mathbf 1``
or ``\\frac\\alpha2``, ``\\|``, ``\\le``, ``\\tfrac``, ``\\dots``). A formula
mathtext cannot draw at all falls back to its TeX source, so the page still reads.
"""

from __future__ import annotations

import base64
import html
import importlib.util
from pathlib import Path

import pytest

pytest.importorskip("matplotlib")

PATH = Path(__file__).resolve().parents[2] / "docs" / "_ext" / "mathtext_svg.py"
spec = importlib.util.spec_from_file_location("mathtext_svg", PATH)
mathtext_svg = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mathtext_svg)

FORMULAS = (
    r"\frac\alpha2\sum_l\|W_l\|_F^2",
    r"\{\mu \in [0,1]^k : l \le \langle\mu,\mathbf{1}\rangle \le u\}",
    r"\operatorname{argmin}_{u\in C}\tfrac12\|u - \theta\|^2",
    r"\{1 \ge \mu_1 \ge \dots \ge \mu_{k-1} \ge 0\}",
    r"\frac1{2n}\sum_i (\langle w, x_i\rangle + b - r_i)^2 + \frac\alpha2\|w\|^2",
    r"V = \mathbf 1\mathbf 1^\top - I",
    r"\Psi(u) = \tfrac12\|u\|_2^2",
)


@pytest.mark.parametrize("latex", FORMULAS)
def test_the_engines_formulas_are_drawn(latex: str) -> None:
    img = mathtext_svg.render(latex, 13)
    assert img is not None, mathtext_svg._rewrite(latex)
    data = img.split("base64,", 1)[1].split('"', 1)[0]
    assert base64.b64decode(data).lstrip().startswith(b"<?xml")


def test_an_undrawable_formula_shows_its_source() -> None:
    latex = r"\begin{aligned} a &= b \end{aligned}"
    assert mathtext_svg.render(latex, 13) is None
    assert mathtext_svg._fallback(latex) == f'<code class="math-source">{html.escape(latex)}</code>'
