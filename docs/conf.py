"""Sphinx configuration of the projloss documentation site (``make docs`` -> ``site/``).

Sphinx + pydata-sphinx-theme + numpydoc + sphinx-gallery + myst-parser: the convention of
scikit-learn and POT, whose users are ours. The API reference is generated from the
numpydoc docstrings (autosummary), the gallery (``examples/`` at the repository root) is
executed at every build and its figures are the ones shown, the narrative guide is MyST
markdown (``docs/guide/``). The build is offline: no intersphinx inventory is fetched.
"""

from __future__ import annotations

import re
import sys
import warnings
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
# the source tree of this checkout first (also in sphinx-gallery's example processes)
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(DOCS / "_ext"))

import projloss  # noqa: E402

#: The engine's public modules (tests/projloss/test_docstrings.py validates the same
#: docstrings; tests/docs/test_build.py checks the two lists agree). The pipeline
#: (``src/pipeline``) is the workflow, documented by the guide, not here.
API_MODULES = (
    "projloss.sets",
    "projloss.sets.jacobians",
    "projloss.geometry",
    "projloss.losses",
    "projloss.decoding",
    "projloss.target_losses",
    "projloss.metrics",
    "projloss.isotonic",
    "projloss.tasks",
    "projloss.estimators",
    "projloss.torch",
)


def public_names(modname: str) -> dict[str, list[str]]:
    """The public names of a module by kind: its ``__all__`` (else the names it defines)."""
    import importlib
    import inspect

    module = importlib.import_module(modname)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [
            n
            for n, v in vars(module).items()
            if not n.startswith("_") and getattr(v, "__module__", "") == modname
        ]
    kinds: dict[str, list[str]] = {"classes": [], "functions": [], "data": []}
    for name in sorted(set(names) - {"__version__"}):
        obj = getattr(module, name)
        kind = "classes" if inspect.isclass(obj) else "functions" if callable(obj) else "data"
        kinds[kind].append(name)
    return kinds


def write_api_pages(out: Path = DOCS / "api" / "generated") -> None:
    """One page per public module: its docstring and an autosummary of its public names.

    Written at every build (``docs/api/generated/`` is ignored), so that a name added to a
    module's ``__all__`` gets its page without editing the docs.
    """
    out.mkdir(parents=True, exist_ok=True)
    headings = {"classes": "Classes", "functions": "Functions", "data": "Constants"}
    for modname in API_MODULES:
        lines = [
            f"``{modname}``",
            "=" * (len(modname) + 4),
            "",
            f".. automodule:: {modname}",
            "   :no-members:",
            "   :no-index:",
            "",
            f".. currentmodule:: {modname}",
            "",
        ]
        for kind, names in public_names(modname).items():
            if not names:
                continue
            heading = headings[kind]
            lines += [heading, "-" * len(heading), "", ".. autosummary::", "   :toctree: ."]
            lines += ["", *(f"   {name}" for name in names), ""]
        text = "\n".join(lines)
        page = out / f"{modname}.rst"
        if not page.exists() or page.read_text() != text:  # unchanged: no rebuild
            page.write_text(text)


write_api_pages()

project = "projloss"
author = "projloss contributors"
copyright = "projloss contributors"
version = release = projloss.__version__

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "mathtext_svg",  # docs/_ext: formulas drawn at build time (offline), not by MathJax
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
    "myst_parser",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
exclude_patterns = ["_build", "screenshots", "ui", "**/*.ipynb", "**/*.md5", "**/*.codeobj.json"]
templates_path = ["_templates"]
default_role = "literal"

# -- API reference -----------------------------------------------------------------------
autosummary_generate = True
autosummary_imported_members = False
autodoc_typehints = "none"  # numpydoc's Parameters sections carry the types
# autosummary lists the members of a class (one page per method); numpydoc must not add
# its own members tables on top of them
numpydoc_show_class_members = False
numpydoc_show_inherited_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_attributes_as_param_list = True
# numpydoc's validation during the build, the checks of tests/projloss/test_docstrings.py:
# a public callable without its summary, Parameters or Returns is a warning, so an error
# of ``make docs`` (-W)
numpydoc_validation_checks = {"GL08", "SS01", "PR01", "PR02", "PR07", "RT01"}
numpydoc_validation_exclude = {r"\.__init__$"}
# the constants (SETS, TASKS, ...) are not callables: nothing to validate (numpydoc would
# validate the docstring of their type, dict or tuple)
numpydoc_validation_exclude |= {
    rf"^{re.escape(modname)}\.{name}$"
    for modname in API_MODULES
    for name in public_names(modname)["data"]
}

# -- Gallery -------------------------------------------------------------------------------
sphinx_gallery_conf = {
    "examples_dirs": ["../examples"],
    "gallery_dirs": ["auto_examples"],
    "subsection_order": [
        "../examples/tutorial",
        "../examples/projections",
        "../examples/losses",
        "../examples/results",
    ],
    "within_subsection_order": "FileNameSortKey",
    "filename_pattern": r"/plot_",
    # a failing example is a warning (so an error of the -W build) and the others still run
    "abort_on_example_error": False,
    "only_warn_on_example_error": True,
    "doc_module": ("projloss",),
    "backreferences_dir": "api/generated/backreferences",
    "reference_url": {"projloss": None},
    "download_all_examples": False,
    "remove_config_comments": True,
    "plot_gallery": "True",
    "matplotlib_animations": False,
    "image_scrapers": ("matplotlib",),
    "show_memory": False,
    "min_reported_time": 1,
}

# -- MyST --------------------------------------------------------------------------------
myst_enable_extensions = ["colon_fence", "dollarmath", "deflist"]
myst_heading_anchors = 3

html_math_renderer = "mathtext_svg"

# -- HTML --------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "projloss"
html_static_path: list[str] = []
html_show_sourcelink = False
html_theme_options = {
    "navbar_align": "left",
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "header_links_before_dropdown": 6,
    "secondary_sidebar_items": ["page-toc"],
    "footer_start": ["copyright"],
    "footer_end": ["sphinx-version"],
}
html_context = {"default_mode": "light"}


def skip_foreign_members(app, what, name, obj, skip, options):
    """Document the members a class of projloss defines or inherits from projloss, not
    those of scikit-learn's ``BaseEstimator`` or PyTorch's ``Module`` and ``Function``
    (their own docs), nor a projloss override without a docstring of its own whose
    inherited docstring is theirs (``forward`` of a ``torch.autograd.Function``)."""
    if what != "class":
        return None
    func = getattr(obj, "fget", None) or getattr(obj, "__func__", None) or obj
    module = getattr(func, "__module__", None) or ""
    if (module and not module.startswith("projloss")) or (not module and callable(obj)):
        return True  # a foreign method, or a builtin one (tuple.count of a NamedTuple)
    qualname = getattr(func, "__qualname__", None)
    if module and isinstance(qualname, str) and "." in qualname and func.__doc__ is None:
        import importlib

        owner = getattr(importlib.import_module(module), qualname.split(".")[0], None)
        for base in getattr(owner, "__mro__", ())[1:]:
            if name in vars(base):
                return True if not base.__module__.startswith("projloss") else None
    return None


def setup(app: object) -> None:
    """numpydoc reports a malformed docstring (an unknown section, a bad underline) with
    :func:`warnings.warn`, which ``sphinx-build -W`` does not see: route those warnings,
    each occurrence, to Sphinx's logger so that they fail the build too."""
    from sphinx.util import logging

    logger = logging.getLogger("numpydoc")
    warnings.filterwarnings("always", category=UserWarning, module=r"numpydoc")
    show = warnings.showwarning

    def showwarning(message, category, filename, lineno, file=None, line=None):
        if "numpydoc" in str(filename):
            logger.warning("%s", message, type="numpydoc")
        else:
            show(message, category, filename, lineno, file, line)

    warnings.showwarning = showwarning
    app.connect("autodoc-skip-member", skip_foreign_members)
