"""Markdown helpers and the description of the machine the figures come from."""

from __future__ import annotations

import datetime as _dt
import os
import platform
import subprocess
import sys
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def table(header: Sequence[str], rows: Sequence[Sequence[Any]], align: str = "") -> str:
    """A Markdown table; ``align`` is one letter per column (l/r), default: l then r."""
    align = align or "l" + "r" * (len(header) - 1)
    sep = ["---:" if a == "r" else ":---" for a in align]
    lines = ["| " + " | ".join(map(str, header)) + " |", "| " + " | ".join(sep) + " |"]
    lines += ["| " + " | ".join(map(str, r)) + " |" for r in rows]
    return "\n".join(lines)


def rate(seconds: float | None, n: int = 1) -> str:
    """Projections per second, from seconds per call of a batch of ``n``."""
    if seconds is None or seconds <= 0:
        return "-"
    r = n / seconds
    if r >= 1e6:
        return f"{r / 1e6:.3g} M"
    if r >= 1e3:
        return f"{r / 1e3:.3g} k"
    return f"{r:.3g}"


def ratio(x: float | None, digits: int = 3) -> str:
    return "-" if x is None else f"{x:.{digits}g}"


def _cpu() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def _mem_gb() -> str:
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal"):
                return f"{int(line.split()[1]) / 2**20:.0f} GiB"
    except OSError:
        pass
    return "?"


def _git(*args: str) -> str:
    try:
        out = subprocess.run(
            ["git", *args], cwd=ROOT, capture_output=True, text=True, check=True, timeout=10
        )
        return out.stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "?"


def versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for pkg in ("numpy", "scipy", "scikit-learn", "numba", "POT"):
        try:
            out[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            out[pkg] = "not installed"
    return out


def machine() -> dict[str, Any]:
    dirty = _git("status", "--porcelain", "--untracked-files=no")
    return {
        "date": _dt.datetime.now(_dt.UTC).strftime("%Y-%m-%d %H:%M UTC"),
        "cpu": _cpu(),
        "cores": os.cpu_count(),
        "memory": _mem_gb(),
        "os": f"{platform.system()} {platform.release()}",
        "commit": _git("rev-parse", "--short", "HEAD") + (" (+ local changes)" if dirty else ""),
        "branch": _git("rev-parse", "--abbrev-ref", "HEAD"),
        "command": " ".join(["python -m benchmarks", *sys.argv[1:]]),
        "versions": versions(),
    }
