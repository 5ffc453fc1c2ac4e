"""Where things live: the project root and every path resolved against it.

Hydra may change the working directory of a job, so no path of the pipeline is ever
resolved against the cwd: a relative path in a config means "relative to the project
root". The output directories of the DVC stages are here too (``EVAL_DIR``, ...), so that
the report reads them without importing a command module.  The root is, in order:

1. the environment variable ``PROJLOSS_ROOT`` when set;
2. the first parent of this package's directory that holds both ``pyproject.toml`` and
   ``conf/`` (the repository, for a source checkout or an editable install);
3. the first parent of the current directory with the same markers (an installed
   package run from inside a checkout).
"""

from __future__ import annotations

import os
from pathlib import Path

from .errors import ConfigError

ROOT_ENV = "PROJLOSS_ROOT"

#: where the DVC stages write, relative to the project root (the outputs of dvc.yaml)
RAW_DIR = Path("data/raw")
PREPARED_DIR = Path("data/prepared")
TUNING_DIR = Path("data/tuning")
MODELS_DIR = Path("models")
METRICS_DIR = Path("metrics")
EVAL_DIR = Path("data/eval")


def _is_root(path: Path) -> bool:
    return (path / "pyproject.toml").is_file() and (path / "conf").is_dir()


def project_root() -> Path:
    """The project root (see the module docstring for how it is found)."""
    env = os.environ.get(ROOT_ENV)
    if env:
        root = Path(env).expanduser().resolve()
        if not root.is_dir():
            raise ConfigError(
                f"{ROOT_ENV}={env!r} is not a directory (environment); set it to the "
                f"project's checkout (the directory with pyproject.toml and conf/) or unset it"
            )
        return root
    for start in (Path(__file__).resolve().parent, Path.cwd().resolve()):
        for candidate in (start, *start.parents):
            if _is_root(candidate):
                return candidate
    raise ConfigError(
        "cannot find the project root (a directory with pyproject.toml and conf/) above "
        f"{Path(__file__).parent} or the current directory; set {ROOT_ENV}"
    )


def conf_dir() -> Path:
    """The Hydra config directory ``<root>/conf``."""
    return project_root() / "conf"


def resolve(path: str | os.PathLike[str], root: Path | None = None) -> Path:
    """``path`` made absolute: ``~`` expanded, relative paths joined to the project root."""
    p = Path(os.fspath(path)).expanduser()
    if not p.is_absolute():
        p = (root if root is not None else project_root()) / p
    return Path(os.path.normpath(p))
