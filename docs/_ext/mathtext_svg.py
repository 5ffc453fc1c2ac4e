"""Offline math for the HTML pages: TeX rendered to inline SVG by matplotlib's mathtext.

Sphinx's default, MathJax, loads its script from a CDN: an offline build (or a reader
without network) shows the TeX source. This renderer draws each formula at build time
with :mod:`matplotlib.mathtext` (a subset of TeX: no ``align``, no ``\\xrightarrow``);
a formula it cannot draw is shown as its TeX source in a ``<code>`` element, so the page
still reads.
"""

from __future__ import annotations

import base64
import html
import re
from functools import cache
from io import BytesIO
from typing import Any

from docutils import nodes

#: TeX that mathtext lacks, rewritten to what it has
REWRITES = (
    (r"\tfrac", r"\frac"),
    (r"\dfrac", r"\frac"),
    (r"\colon", r":"),
    (r"\lvert", r"|"),
    (r"\rvert", r"|"),
    (r"\,", r"\ "),
    (r"\!", r""),
    (r"\quad", r"\ \ "),
    (r"\qquad", r"\ \ \ \ "),
    (r"\bigl", r""),
    (r"\bigr", r""),
    (r"\Bigl", r""),
    (r"\Bigr", r""),
    (r"\left", r""),
    (r"\right", r""),
    (r"\big", r""),
    (r"\Big", r""),
)


_ARG = r"(\{[^{}]*\}|\\[A-Za-z]+|[^\s\\{}])"


def _rewrite(latex: str) -> str:
    text = " ".join(latex.split())
    for old, new in REWRITES:
        text = text.replace(old, new)
    text = re.sub(r"\\text\{([^}]*)\}", r"\\mathrm{\1}", text)
    text = text.replace(r"\|", r"\Vert ")
    text = re.sub(r"\\(le|ge)(?![a-zA-Z])", r"\\\1q", text)
    text = re.sub(r"\\dots(?![a-zA-Z])", r"\\ldots", text)
    # mathtext wants braces: \mathbf 1 -> \mathbf{1}, \frac\alpha2 -> \frac{\alpha}{2}
    text = re.sub(
        r"\\(mathcal|mathbb|mathbf|mathrm|hat|tilde|bar)\s*(\\[A-Za-z]+|[A-Za-z0-9])",
        r"\\\1{\2}",
        text,
    )

    def brace(arg: str) -> str:
        return arg if arg.startswith("{") else "{" + arg + "}"

    return re.sub(
        r"\\frac\s*" + _ARG + r"\s*" + _ARG,
        lambda m: r"\frac" + brace(m[1]) + brace(m[2]),
        text,
    )


@cache
def render(latex: str, size: float) -> str | None:
    """The formula as an ``<img>`` with an inline SVG, or None when mathtext cannot."""
    from matplotlib import mathtext
    from matplotlib.font_manager import FontProperties

    buffer = BytesIO()
    try:
        mathtext.math_to_image(
            f"${_rewrite(latex)}$", buffer, prop=FontProperties(size=size), format="svg"
        )
    except Exception:
        return None
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    alt = html.escape(latex, quote=True)
    style = "vertical-align: middle; display: inline"
    return f'<img class="math" style="{style}" src="data:image/svg+xml;base64,{data}" alt="{alt}"/>'


def _fallback(latex: str) -> str:
    return f'<code class="math-source">{html.escape(latex)}</code>'


def visit_math(self: Any, node: nodes.Element) -> None:
    latex = node.astext()
    self.body.append(render(latex, 13) or _fallback(latex))
    raise nodes.SkipNode


def visit_displaymath(self: Any, node: nodes.Element) -> None:
    latex = node.astext()
    parts = [p for p in re.split(r"\\\\\s*", latex.strip()) if p.strip()]
    rendered = [render(p.replace("&", ""), 15) for p in parts] if not node.get("nowrap") else []
    self.body.append(self.starttag(node, "div", CLASS="math-display", style="margin: 1em 0;"))
    if rendered and all(rendered):
        self.body.append("<br/>".join(r for r in rendered if r))
    else:
        self.body.append(f"<pre>{html.escape(latex)}</pre>")
    self.body.append("</div>")
    raise nodes.SkipNode


def setup(app: Any) -> dict[str, Any]:
    app.add_html_math_renderer("mathtext_svg", (visit_math, None), (visit_displaymath, None))
    return {"parallel_read_safe": True, "parallel_write_safe": True}
