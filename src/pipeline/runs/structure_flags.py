"""Degenerate test predictions of a run: found, named, tagged.

A run whose test predictions are all the same structure (a constant predictor) or are not
valid structures (label-ranking matrices that rank no label, "permutations" that are not)
has a test metric that is not a model's: :func:`flag_structures` names the problem in a
warning and in the run's ``structure`` tag (a column of the MLflow runs table: ``ok``, or
the counts, :func:`structure_tag`), and the run's description says what to do
(:func:`structure_remedy`).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from ..config.composition import Composition

log = logging.getLogger(__name__)

#: the run tag naming degenerate test predictions
STRUCTURE_TAG = "structure"


def _is_permutation_matrix(P: np.ndarray) -> np.ndarray:
    """Per sample: a 0/1 matrix with one 1 in each row and column."""
    P = np.asarray(P)
    binary = np.all((P == 0) | (P == 1), axis=(1, 2))
    return binary & np.all(P.sum(axis=1) == 1, axis=1) & np.all(P.sum(axis=2) == 1, axis=1)


def _is_permutation(Y: np.ndarray) -> np.ndarray:
    Y = np.asarray(Y)
    k = Y.shape[1]
    return np.all(np.sort(Y, axis=1) == np.arange(k), axis=1)


def _permutation_decoder(decoder: str | None) -> bool:
    """Whether the decoder's outputs are permutations (``ConvexSet.permutation_outputs``:
    the Birkhoff polytope, the permutahedron; the others decode into a set of matrices:
    the cube's 0/1 matrices, the row simplex's one-hot rows)."""
    from projloss.sets import SETS

    cls = SETS.get(decoder) if decoder is not None else None
    return cls is not None and cls.permutation_outputs


def structure_tag(problem: str | None) -> str:
    """The short value of the run's ``structure`` tag (a column of the runs table): ``ok``,
    or the problem's counts, e.g. ``all-zero 14/30``, ``constant 30/30``.

    Examples
    --------
    >>> structure_tag("14 of 30 test predictions are all-zero matrices (no label ranked)")
    'all-zero 14/30'
    >>> structure_tag("all 3 test predictions are the same (2)")
    'constant 3/3'
    """
    if problem is None:
        return "ok"
    out = []
    for part in problem.split("; "):
        words = part.split()
        if part.startswith("all ") and "same" in part:
            out.append(f"constant {words[1]}/{words[1]}")
        elif "all-zero" in part:
            out.append(f"all-zero {words[0]}/{words[2]}")
        elif "not permutations" in part:
            out.append(f"not permutations {words[0]}/{words[2]}")
    return ", ".join(out) or problem[:40]


def structure_problem(task: str, y_pred: Any, decoder: str | None = None) -> str | None:
    """What is wrong with a run's test predictions, or None: label-ranking predictions
    that rank no label at all (all-zero matrices, which the cube decodes when no entry
    passes its threshold) or that are not permutations although the decoder returns
    permutations (``ConvexSet.permutation_outputs``); any task: all the same structure (a
    constant predictor).

    Examples
    --------
    >>> import numpy as np
    >>> print(structure_problem("label_ranking", np.zeros((4, 3, 3), dtype=int), "cube"))
    4 of 4 test predictions are all-zero matrices (no label ranked); all 4 are the same
    >>> structure_problem("label_ranking", np.array([[0, 1, 2], [2, 1, 0]]), "birkhoff") is None
    True
    >>> print(structure_problem("ordinal", np.array([2, 2, 2])))
    all 3 test predictions are the same (2)
    """
    Y = np.asarray(y_pred)
    n = int(Y.shape[0]) if Y.ndim else 0
    if n == 0:
        return None
    problems = []
    flat = Y.reshape(n, -1)
    if task == "label_ranking":
        zeros = int(np.all(flat == 0, axis=1).sum())
        if zeros:
            problems.append(
                f"{zeros} of {n} test predictions are all-zero matrices (no label ranked)"
            )
        elif _permutation_decoder(decoder):
            valid = _is_permutation_matrix(Y) if Y.ndim == 3 else _is_permutation(Y)
            if not valid.all():
                problems.append(
                    f"{n - int(valid.sum())} of {n} test predictions are not permutations"
                )
    if n > 1 and np.all(flat == flat[0]):
        if problems:
            problems.append(f"all {n} are the same")
        else:
            shown = np.array2string(Y[0], separator=",").replace("\n", "")
            problems.append(f"all {n} test predictions are the same ({shown[:40]})")
    return "; ".join(problems) or None


def structure_remedy(comp: Composition) -> str:
    """What to do about degenerate predictions of ``comp``."""
    if comp.task == "label_ranking" and comp.decoder == "cube" and comp.target_loss == "hamming":
        return (
            "the entrywise Hamming loss thresholds the cube at 1/2, and its Hamming score is "
            "then 100/k per empty matrix; the paper's cube column is "
            "task.target_loss=hamming_ranking"
        )
    return "its test metric is not a model's: check the lambda grid and the composition"


def structure_warning(comp: Composition, problem: str) -> str:
    """The warning line of a run with degenerate test predictions."""
    return f"warning: {comp.dataset} {comp.label}: {problem}; {structure_remedy(comp)}"


def flag_structures(tracker: Any, comp: Composition, y_pred: Any) -> str | None:
    """Check the test predictions (:func:`structure_problem`): tag the run
    ``structure`` (``ok`` or the problem) and warn about a problem; return it."""
    if comp.kind == "median":  # the training-median baseline is constant by design
        tracker.set_tags({STRUCTURE_TAG: "median baseline"})
        return None
    problem = structure_problem(comp.task, y_pred, comp.decoder)
    if problem is not None:
        log.warning("%s", structure_warning(comp, problem))
    tracker.set_tags({STRUCTURE_TAG: structure_tag(problem)})
    return problem
