"""The user documentation as the tests read it: ``README.md`` (the front page) and the
pages of the user guide, ``docs/guide/*.md`` (MyST Markdown).

The tests that check a command, an example or a quoted message of the documentation read
it through :func:`page` and :func:`section`, so that moving text between pages moves the
test with it.

Examples
--------
>>> "make repro" in page("README.md")
True
>>> section("# A\\ntext\\n## B\\nmore\\n## C\\n", "## B")
'## B\\nmore\\n'
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide"


def pages() -> dict[str, str]:
    """Every page of the documentation by its path relative to the project root
    (``README.md`` first, then ``docs/guide/*.md`` in name order) -> its text."""
    paths = [README, *sorted(GUIDE.glob("*.md"))]
    return {p.relative_to(ROOT).as_posix(): p.read_text(encoding="utf-8") for p in paths}


def page(name: str) -> str:
    """The text of ``README.md`` or of the guide page ``name`` (``"datasets.md"``)."""
    path = README if name == "README.md" else GUIDE / name
    return path.read_text(encoding="utf-8")


def section(text: str, heading: str) -> str:
    """The section that starts at the line ``heading`` (``"## Adding a dataset"``), up to
    the next heading of the same or a higher level (the end of the page if none); a
    ``#`` line inside a code block is not a heading. Raises ``ValueError`` when the page
    has no such heading."""
    level = len(heading) - len(heading.lstrip("#"))
    lines = text.splitlines(keepends=True)
    out: list[str] = []
    fence = False
    inside = False
    for line in lines:
        if line.startswith("```"):
            fence = not fence
        m = None if fence else re.match(r"(#+) ", line)
        if inside and m and len(m.group(1)) <= level:
            break
        if not inside and not fence and line.rstrip("\n") == heading:
            inside = True
        if inside:
            out.append(line)
    if not inside:
        raise ValueError(f"no heading {heading!r}")
    return "".join(out)
