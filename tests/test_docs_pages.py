"""The README is a front page (at most 200 lines, issue 35) and the links of the README and
of the guide's pages resolve, on GitHub as in the Sphinx build: a relative link names a
file of the repository, and its ``#anchor`` a heading of that page (GitHub's slugs, which
MyST's ``myst_heading_anchors`` reproduces), each heading once per page; the guide's index
lists every page."""

from __future__ import annotations

import re

from docs_pages import GUIDE, ROOT, page, pages

_LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")


def slug(heading: str) -> str:
    """GitHub's anchor of a heading: lower case, inline code marks and punctuation other
    than ``-`` and ``_`` dropped, spaces to ``-``.

    Examples
    --------
    >>> slug("Experiments: `python -m pipeline.train`")
    'experiments-python--m-pipelinetrain'
    """
    text = heading.strip().lower().replace("`", "").replace(" ", "-")
    return re.sub(r"[^\w\-]", "", text)


def anchors(text: str) -> set[str]:
    """The anchors of a page's headings (``#`` lines outside code blocks)."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    return {slug(m.group(1)) for m in re.finditer(r"^#{1,6} (.*)$", text, flags=re.M)}


def broken_links(name: str, text: str) -> list[str]:
    """The relative links of page ``name`` (a path from the root) that resolve to no file
    or to no heading of their page."""
    text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
    text = re.sub(r"`[^`\n]*`", "", text)
    out = []
    for target in _LINK.findall(text):
        if re.match(r"[a-z]+:", target):
            continue  # http(s):, mailto:
        path, _, anchor = target.partition("#")
        file = (ROOT / name).parent / path if path else ROOT / name
        if not file.is_file():
            out.append(f"{name}: {target} (no such file)")
        elif anchor and anchor not in anchors(file.read_text(encoding="utf-8")):
            out.append(f"{name}: {target} (no such heading)")
    return out


def test_readme_is_a_front_page() -> None:
    lines = page("README.md").splitlines()
    assert len(lines) <= 200, f"README.md has {len(lines)} lines: move sections to docs/guide/"


def test_links_resolve() -> None:
    broken = [b for name, text in pages().items() for b in broken_links(name, text)]
    assert not broken, "\n".join(broken)


def test_a_broken_link_or_anchor_is_found() -> None:
    text = "# T\n\n## The stages\n\n[a](dvc.md#the-stages) [b](nope.md) [c](dvc.md#nope)\n"
    assert broken_links("docs/guide/x.md", text) == [
        "docs/guide/x.md: nope.md (no such file)",
        "docs/guide/x.md: dvc.md#nope (no such heading)",
    ]


def test_the_index_lists_every_page() -> None:
    """The toctree of ``docs/guide/index.md`` names every other page of the guide once."""
    block = re.search(r"```\{toctree\}\n(.*?)```", page("index.md"), flags=re.S).group(1)
    listed = [x.strip() for x in block.splitlines() if x.strip() and not x.startswith(":")]
    names = sorted(p.stem for p in GUIDE.glob("*.md") if p.name != "index.md")
    assert sorted(listed) == names


def test_headings_are_unique_per_page() -> None:
    """Each heading's anchor is unique on its page (MyST and GitHub number duplicates, and
    a link to the first would silently land on another section)."""
    for name, text in pages().items():
        text = re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)
        found = [slug(m) for m in re.findall(r"^#{1,6} (.*)$", text, flags=re.M)]
        assert len(found) == len(set(found)), (name, sorted(found))
