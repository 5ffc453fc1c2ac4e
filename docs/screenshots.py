"""Screenshots of the built documentation site with headless Chromium.

``make docs-screenshots`` (after ``make docs``) retakes ``docs/screenshots/*.png``: the
home page, the API page of :class:`projloss.sets.Birkhoff` and one gallery example, at
1280 x 1600 pixels, from the files under ``site/`` (no server needed)::

    python docs/screenshots.py --site site --out docs/screenshots [--chromium PATH]
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

#: screenshot name -> page of the built site
PAGES = {
    "home.png": "index.html",
    "api-birkhoff.png": "api/generated/projloss.sets.Birkhoff.html",
    "gallery-birkhoff-soft-permutation.png": (
        "auto_examples/projections/plot_birkhoff_soft_permutation.html"
    ),
}
WINDOW = "1280,1600"


def find_chromium(explicit: str | None = None) -> str:
    """The Chromium executable: ``explicit``, else the first of the usual names on PATH."""
    for name in (explicit, "chromium", "chromium-browser", "google-chrome"):
        if name and (path := shutil.which(name)):
            return path
    raise SystemExit("no Chromium found: apt-get install -y chromium, or pass --chromium PATH")


def screenshot(chromium: str, page: Path, out: Path) -> None:
    """One headless screenshot of a local page (a fresh profile, no network needed)."""
    with tempfile.TemporaryDirectory() as profile:
        command = [
            chromium,
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            "--no-first-run",
            f"--user-data-dir={profile}",
            f"--window-size={WINDOW}",
            "--virtual-time-budget=3000",
            f"--screenshot={out}",
            page.resolve().as_uri(),
        ]
        subprocess.run(command, check=True, capture_output=True, timeout=120)
    if not out.is_file():
        raise SystemExit(f"Chromium wrote no screenshot of {page}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--site", type=Path, default=Path("site"))
    parser.add_argument("--out", type=Path, default=Path("docs/screenshots"))
    parser.add_argument("--chromium", default=None)
    args = parser.parse_args(argv)
    chromium = find_chromium(args.chromium)
    args.out.mkdir(parents=True, exist_ok=True)
    for name, page in PAGES.items():
        path = args.site / page
        if not path.is_file():
            raise SystemExit(f"{path} is missing: build the site first (make docs)")
        screenshot(chromium, path, args.out / name)
        print(args.out / name)
    return 0


if __name__ == "__main__":
    sys.exit(main())
