"""Helpers of the data-layer reliability tests: user datasets written by the test.

A user dataset lives in its own registry directory (``<tmp>/registry/<name>.yaml``) with
its files under ``<tmp>/src/`` (``path:`` entries, absolute), so the tests never touch the
repository's ``conf/dataset/`` nor the network.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import yaml

from pipeline.data.settings import DataSettings, data_settings
from pipeline.paths import project_root

ROOT = project_root()

#: a valid label-ranking file: 3 features, rankings of a, b, c (12 rows, line 1 = header)
LR_ROWS = [
    "1.0,2.0,3.0,a>b>c",
    "0.5,1.5,2.5,b>a>c",
    "2.0,1.0,0.0,c>b>a",
    "1.5,0.5,1.0,a>c>b",
    "0.1,0.2,0.3,b>c>a",
    "3.0,2.0,1.0,c>a>b",
    "1.1,2.1,3.1,a>b>c",
    "0.6,1.6,2.6,b>a>c",
    "2.1,1.1,0.1,c>b>a",
    "1.6,0.6,1.1,a>c>b",
    "0.2,0.3,0.4,b>c>a",
    "3.1,2.1,1.1,c>a>b",
]
LR_TEXT = "A1,A2,A3,ranking\n" + "\n".join(LR_ROWS) + "\n"

#: a valid orreview file: 2 features and the class (1..3), 10 rows
OR_TEXT = "".join(f"{i * 0.5:.1f} {10 - i:.1f} {1 + i % 3}\n" for i in range(10))

#: a valid LIBSVM multi-label file: 10 rows, 3 features
SVM_TEXT = "".join(f"{i % 3},{(i + 1) % 3} 1:{i + 1}.5 3:{i}.25\n" for i in range(10))

ARFF_HEAD = """@relation toy
@attribute f1 numeric
@attribute f2 numeric
@attribute colour {red,green,blue}
@attribute l1 {0,1}
@attribute l2 {0,1}
@data
"""
ARFF_TEXT = ARFF_HEAD + "".join(
    f"{i}.5,{10 - i}.0,{('red', 'green', 'blue')[i % 3]},{i % 2},{(i + 1) % 2}\n" for i in range(10)
)

#: format -> (task, file name, valid text, reader options)
FORMATS: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    "label_ranking": ("label_ranking", "u.txt", LR_TEXT, {}),
    "orreview": ("ordinal", "u.dat", OR_TEXT, {}),
    "libsvm": ("multilabel", "u.svm", SVM_TEXT, {}),
    "mulan_arff": ("multilabel", "u.arff", ARFF_TEXT, {"n_labels": 2}),
}


def write_dataset(
    tmp: Path,
    name: str,
    fmt: str,
    content: str | bytes | None = None,
    options: dict[str, Any] | None = None,
    registry: Path | None = None,
) -> Path:
    """Write a user dataset of format ``fmt`` (its file and YAML); return the data file."""
    task, fname, text, default_options = FORMATS[fmt]
    registry = registry or tmp / "registry"
    registry.mkdir(parents=True, exist_ok=True)
    src = tmp / "src" / name
    src.mkdir(parents=True, exist_ok=True)
    data = src / fname
    content = text if content is None else content
    if isinstance(content, bytes):
        data.write_bytes(content)
    else:
        data.write_text(content, encoding="utf-8")
    entry = {
        "name": name,
        "task": task,
        "format": fmt,
        "parts": {"all": fname},
        "options": {**default_options, **(options or {})},
        "files": [{"name": fname, "path": str(data)}],
    }
    (registry / f"{name}.yaml").write_text(yaml.safe_dump(entry, sort_keys=False))
    return data


def settings_for(tmp: Path, registry: Path | None = None, **extra: Any) -> DataSettings:
    """Data settings writing under ``tmp`` with the test's own registry directory."""
    return data_settings(
        {
            "mirror": None,
            "raw_dir": str(tmp / "raw"),
            "prepared_dir": str(tmp / "prepared"),
            "reports_dir": str(tmp / "reports"),
            "dataset_dirs": [str(registry or tmp / "registry")],
            "progress": False,
            **extra,
        }
    )


def cfg_for(settings: DataSettings, **top: Any) -> dict[str, Any]:
    """A stage config (plain dict) with these data settings."""
    return {"data": settings.as_dict(), **top}


def refuse_network(url: str, timeout: float) -> Any:
    """An opener that never reaches the network."""
    raise OSError(f"network disabled in tests ({url})")


def tree(directory: Path) -> dict[str, bytes]:
    """Every file under ``directory`` (relative path -> content): to compare states."""
    if not directory.exists():
        return {}
    return {
        str(p.relative_to(directory)): p.read_bytes()
        for p in sorted(directory.rglob("*"))
        if p.is_file()
    }


def run_module(module: str, *args: str, env: dict[str, str] | None = None) -> Any:
    """``python -m <module> args`` in a subprocess from the project root."""
    return subprocess.run(
        [sys.executable, "-m", module, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "HYDRA_FULL_ERROR": "0", **(env or {})},
    )
