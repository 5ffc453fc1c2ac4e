"""Command lines as users type them: Hydra flags anywhere, overrides anywhere.

Hydra parses ``sys.argv`` with :mod:`argparse`, whose ``overrides`` positional (``nargs="*"``)
is consumed once, before the first flag: ``python -m pipeline.train --multirun set=cube``
fails with ``unrecognized arguments: set=cube``. :func:`normalize_argv` moves every flag
(with its value, if it takes one) in front of the overrides, keeping both orders, so the
two spellings mean the same. Each ``python -m pipeline.<stage>`` entry point calls it
before Hydra sees the command line.

Examples
--------
>>> normalize_argv(["train", "--multirun", "set=cube", "hydra/launcher=ray"])
['train', '--multirun', 'set=cube', 'hydra/launcher=ray']
>>> normalize_argv(["train", "task=ordinal", "-m", "set=reals", "--cfg", "job"])
['train', '-m', '--cfg', 'job', 'task=ordinal', 'set=reals']
>>> normalize_argv(["train", "task=ordinal", "-sc", "install=bash"])  # tab completion
['train', '-sc', 'install=bash', 'task=ordinal']
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

# Hydra's flags that take a value (hydra/_internal/utils.py: get_args_parser).
_WITH_VALUE = frozenset(
    {
        "--cfg", "-c", "--package", "-p", "--config-path", "-cp", "--config-name", "-cn",
        "--config-dir", "-cd", "--experimental-rerun", "--shell-completion", "-sc",
    }
)  # fmt: skip
# ``--info`` takes an optional value, one of these words.
_INFO = frozenset({"--info", "-i"})
_INFO_CHOICES = frozenset({"all", "config", "defaults", "defaults-tree", "plugins", "searchpath"})


def normalize_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` (program name first) with Hydra's flags before the overrides.

    A token is a flag when it starts with ``-``; ``--flag=value`` is one token; a flag of
    ``_WITH_VALUE`` takes the next token as its value, ``--info``/``-i`` the next token
    when it is one of Hydra's info words. Everything else is an override
    (``key=value``, ``+key=value``, ``~key``, ``group=a,b``). After ``--`` nothing moves.
    """
    if not argv:
        return []
    flags: list[str] = []
    overrides: list[str] = []
    rest = list(argv[1:])
    i = 0
    while i < len(rest):
        token = rest[i]
        if token == "--":
            overrides.extend(rest[i:])
            break
        if token.startswith("-") and len(token) > 1:
            flags.append(token)
            takes = token in _WITH_VALUE or (
                token in _INFO and i + 1 < len(rest) and rest[i + 1] in _INFO_CHOICES
            )
            if takes and i + 1 < len(rest):
                flags.append(rest[i + 1])
                i += 1
        else:
            overrides.append(token)
        i += 1
    return [argv[0], *flags, *overrides]


def normalize_sys_argv() -> None:
    """Rewrite :data:`sys.argv` in place with :func:`normalize_argv` (call it before the
    ``@hydra.main`` function)."""
    sys.argv[:] = normalize_argv(sys.argv)
