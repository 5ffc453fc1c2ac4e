"""The "Layout" section of the guide (``docs/guide/layout.md``) lists every module and
folder of ``src/projloss`` and ``src/pipeline``, and nothing that is not there.

The section's code block is a tree: a line at column 0 ``src/<package>/`` opens a package;
an indented line opens an entry, either a folder (first word ``data/``, ``data/readers/``:
relative to the package) or the package's own top-level modules (first word ``x.py``);
lines indented to the description column (25) continue the entry above. Each entry names
its folder's modules as ``name.py`` (``__init__.py`` is the folder itself).
"""

from __future__ import annotations

import re
from pathlib import Path

from docs_pages import page, section

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("projloss", "pipeline")
#: the column of the descriptions: a line indented this far continues the entry above
DESCRIPTION_COLUMN = 25
_MODULE = re.compile(r"(?<![\w/.])([A-Za-z_]\w*\.py)\b")


def layout_block(text: str) -> str:
    """The first code block of the page's "## Layout" section."""
    return re.findall(r"```(?:text)?\n(.*?)```", section(text, "## Layout"), flags=re.S)[0]


def layout_entries(block: str) -> dict[str, set[str]]:
    """Folder (``pipeline``, ``pipeline/data/readers``) -> the ``name.py`` its entries name."""
    out: dict[str, set[str]] = {}
    package: str | None = None
    key: str | None = None
    for line in block.splitlines():
        if not line.strip():
            continue
        indent = len(line) - len(line.lstrip())
        first = line.split()[0]
        if indent == 0:
            package = first.removeprefix("src/").strip("/") if first.startswith("src/") else None
            key = package
        elif package is not None and indent < DESCRIPTION_COLUMN:
            key = f"{package}/{first.strip('/')}" if first.endswith("/") else package
        if key is not None:
            out.setdefault(key, set()).update(_MODULE.findall(line))
    return out


def problems(
    entries: dict[str, set[str]], actual: dict[str, set[str]]
) -> dict[str, dict[str, list[str]]]:
    """Per folder, its modules missing from the Layout and those listed but absent; a
    folder without an entry (or an entry without a folder) under the key ``folders``."""
    out = {
        folder: {
            "missing from the Layout": sorted(
                actual.get(folder, set()) - entries.get(folder, set())
            ),
            "listed, not in src/": sorted(entries.get(folder, set()) - actual.get(folder, set())),
        }
        for folder in sorted({*actual, *entries})
        if actual.get(folder) != entries.get(folder)
    }
    if set(actual) != set(entries):
        out["folders"] = {
            "missing from the Layout": sorted(set(actual) - set(entries)),
            "listed, not in src/": sorted(set(entries) - set(actual)),
        }
    return out


def tree(package: str) -> dict[str, set[str]]:
    """Folder -> its modules (``__init__.py`` aside), for every package folder under
    ``src/<package>``."""
    base = ROOT / "src"
    out: dict[str, set[str]] = {}
    for init in sorted((base / package).rglob("__init__.py")):
        folder = init.parent
        out[folder.relative_to(base).as_posix()] = {
            p.name for p in folder.glob("*.py") if p.name != "__init__.py"
        }
    return out


def test_layout_lists_every_module_and_nothing_else() -> None:
    entries = layout_entries(layout_block(page("layout.md")))
    actual = {k: v for p in PACKAGES for k, v in tree(p).items()}
    assert problems(entries, actual) == {}


def test_a_missing_or_extra_module_is_found() -> None:
    """The parser reads a folder's entry with its continuation lines, the package's own
    modules, and nothing of ``conf/`` or ``tests/``; a module missing from it, one listed
    that does not exist and a folder without an entry are reported."""
    block = (
        "src/pipeline/            the workflow\n"
        "  errors.py paths.py\n"
        "                         common: errors\n"
        "  data/                  api.py (load_prepared),\n"
        "                         fetch.py\n"
        "tests/                   test_x.py\n"
    )
    entries = layout_entries(block)
    assert entries == {
        "pipeline": {"errors.py", "paths.py"},
        "pipeline/data": {"api.py", "fetch.py"},
    }
    actual = {
        "pipeline": {"errors.py", "paths.py", "lifecycle.py"},
        "pipeline/data": {"api.py"},
        "pipeline/runs": {"tune.py"},
    }
    assert problems(entries, actual) == {
        "pipeline": {"missing from the Layout": ["lifecycle.py"], "listed, not in src/": []},
        "pipeline/data": {"missing from the Layout": [], "listed, not in src/": ["fetch.py"]},
        "pipeline/runs": {"missing from the Layout": ["tune.py"], "listed, not in src/": []},
        "folders": {"missing from the Layout": ["pipeline/runs"], "listed, not in src/": []},
    }
