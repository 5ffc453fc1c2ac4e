"""The paper's findings (reports/README.md) over the repeated splits, each with a verdict.

**The rule.** A verdict is Bayesian, from the tests that model correlated splits: the
control (the paper's proposal) is better by more than the ROPE ("holds"), within it
("equivalent within the ROPE"), or worse by more than it ("reversed") when the posterior
probability of that region reaches 0.95 (Benavoli et al., JMLR 2017); otherwise "not
shown". Across datasets the probabilities are the hierarchical test's (a new dataset's
difference); on one dataset, the Bayesian correlated t-test's. The frequentist tests
stand beside them in the evidence: the Wilcoxon signed-rank test with the datasets as
blocks (Holm-corrected), the per-dataset corrected resampled t-tests (Holm within each
dataset) -- never a test over (dataset, split) pairs.

A finding about several comparisons ("best on average": the control against every other
paper composition) holds when each one holds, is reversed when one is, is "equivalent
within the ROPE" when every comparison holds or is equivalent; else not shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from . import resampled_tests as rt
from . import significance as sig
from .repeated_analysis import Analysis, PairTests

#: the verdicts, from the Bayesian posteriors (see the module docstring)
VERDICTS = ("holds", "equivalent within the ROPE", "not shown", "reversed")


@dataclass
class Finding:
    claim: str
    on_paper_split: bool | None
    verdict: str  # one of VERDICTS, "not run", or "n/a (...)"
    evidence: str

    @property
    def holds(self) -> bool | None:
        """True when the verdict is "holds", None when it is not a comparison."""
        if self.verdict not in VERDICTS:
            return None
        return self.verdict == "holds"


def p_text(x: float | None) -> str:
    return "—" if x is None or not np.isfinite(x) else (f"{x:.2g}" if x < 0.001 else f"{x:.3f}")


def posterior_text(p: rt.Posterior | None) -> str:
    if p is None:
        return "—"
    return f"P(better/ROPE/worse) = {p.better:.3f}/{p.rope:.3f}/{p.worse:.3f}"


def combine(verdicts: Sequence[str]) -> str:
    """The verdict of a finding made of several comparisons."""
    if not verdicts:
        return "not run"
    if all(v == "holds" for v in verdicts):
        return "holds"
    if any(v == "reversed" for v in verdicts):
        return "reversed"
    if all(v in ("holds", "equivalent within the ROPE") for v in verdicts):
        return "equivalent within the ROPE"
    return "not shown"


def pair_evidence(ctrl: str, other: str, n_datasets: int, lower: bool, p: PairTests) -> str:
    """One comparison's evidence: effect, hierarchical posterior, Wilcoxon, t-tests."""
    parts = [f"{ctrl} vs {other}"]
    h = p.hierarchical
    if h is not None:
        parts.append(
            f"mean difference {h.delta0_mean:+.3g} [95% {h.delta0_low:+.3g}, "
            f"{h.delta0_high:+.3g}], hierarchical {posterior_text(h.posterior)}"
        )
    else:
        parts.append(f"hierarchical test not run ({p.note})")
    if p.wilcoxon is not None:
        w = p.wilcoxon
        parts.append(
            f"Wilcoxon over {n_datasets} datasets {w.wins}/{w.losses} wins/losses, "
            f"p = {p_text(w.p_value)}, Holm {p_text(w.p_holm)}"
        )
    if p.per_dataset:
        sig_ = [t for t in p.per_dataset if np.isfinite(t.p_holm) and t.p_holm < sig.ALPHA]
        better = sum((t.test.mean < 0) == lower for t in sig_)
        parts.append(
            f"corrected t-tests: better on {better}, worse on {len(sig_) - better} of "
            f"{len(p.per_dataset)} datasets (Holm p < {sig.ALPHA:g})"
        )
    return "; ".join(parts)


def _seed0_means(a: Analysis, names: Sequence[str]) -> dict[str, float] | None:
    """The mean over the datasets of each column on split 0 (the paper's split)."""
    if 0 not in a.data.splits or any(n not in a.names for n in names):
        return None
    s = a.data.splits.index(0)
    out = {}
    for n in names:
        vals = a.data.values[a.rows, a.cols[a.names.index(n)], s]
        if not np.all(np.isfinite(vals)):
            return None
        out[n] = float(np.mean(vals))
    return out


def best_on_average(a: Analysis, claim: str) -> Finding:
    """The control is the best of the paper's columns on average."""
    if a.control is None or not a.pairs:
        return Finding(claim, None, "not run", "")
    ctrl = a.names[a.control]
    sign = 1.0 if a.data.spec.lower_is_better else -1.0
    m0 = _seed0_means(a, [ctrl, *(a.names[p.other] for p in a.pairs)])
    on0 = None if m0 is None else all(sign * m0[ctrl] < sign * m0[n] for n in m0 if n != ctrl)
    verdict = combine([p.verdict() for p in a.pairs])
    means = a.means.mean(axis=0)
    evidence = (
        f"mean over the {len(a.rows)} datasets: "
        + ", ".join(f"{n} {means[k]:.3g}" for k, n in enumerate(a.names))
        + ". "
        + " | ".join(
            f"{pair_evidence(ctrl, a.names[p.other], len(a.rows), a.data.spec.lower_is_better, p)}"
            f" -> {p.verdict()}"
            for p in a.pairs
        )
    )
    return Finding(claim, on0, verdict, evidence)


def _pair_blocks(
    a: Analysis, b: Analysis, ci: str, cj: str, dataset: str | None
) -> tuple[list[str], list[np.ndarray], list[tuple[float, float]]] | None:
    """Per dataset (both tables, same seeds): the (split, 2) values of ``ci`` of ``a``
    and ``cj`` of ``b``, and the split sizes."""
    if ci not in a.names or cj not in b.names:
        return None
    labels = [dataset] if dataset else [lb for lb in a.labels if lb in b.labels]
    out_l, out_b, out_s = [], [], []
    for lb in labels:
        if lb not in a.labels or lb not in b.labels or a.seeds(lb) != b.seeds(lb):
            continue
        out_l.append(lb)
        out_b.append(np.stack([a.values(ci, lb), b.values(cj, lb)], axis=1))
        out_s.append(a.sizes[a.labels.index(lb)])
    return (out_l, out_b, out_s) if out_l else None


def beats(
    a: Analysis, b: Analysis, ci: str, cj: str, claim: str, dataset: str | None = None
) -> Finding:
    """Column ``ci`` of ``a`` beats column ``cj`` of ``b``: across the datasets both
    tables have (hierarchical test, Wilcoxon over the datasets, the per-dataset corrected
    t-tests), or on ``dataset`` alone (corrected t-test, Bayesian correlated t-test)."""
    from .repeated_analysis import dataset_tests, hierarchical_pair

    got = _pair_blocks(a, b, ci, cj, dataset)
    if got is None:
        return Finding(claim, None, "not run", "")
    labels, blocks, sizes = got
    lower, rope = a.data.spec.lower_is_better, a.rope
    flagged = [lb for lb in labels if lb in a.flagged or lb in b.flagged]
    means = np.array([blk.mean(axis=0) for blk in blocks])
    sign = 1.0 if lower else -1.0
    on0 = None
    if all(0 in a.seeds(lb) for lb in labels):
        s0 = np.array([blk[a.seeds(lb).index(0)] for lb, blk in zip(labels, blocks, strict=True)])
        on0 = bool(sign * s0[:, 0].mean() < sign * s0[:, 1].mean())
    per = dataset_tests(blocks, labels, sizes, flagged, 0, [1], rope, lower)[1]
    head = (
        f"{ci} {means[:, 0].mean():.3g} vs {cj} {means[:, 1].mean():.3g}"
        f" (mean over {'the splits of ' + dataset if dataset else f'{len(labels)} datasets'})"
    )
    if dataset is not None:
        if dataset in flagged:
            return Finding(claim, on0, "not shown", head + "; no spread over the splits: one "
                           "outcome, not R")  # fmt: skip
        if not per:
            return Finding(claim, on0, "not run", head + "; split sizes not recorded")
        t = per[0]
        verdict = t.posterior.verdict() if t.posterior is not None else "not shown"
        evidence = (
            f"{head}; difference {t.test.mean:+.3g} [95% {t.test.ci_low:+.3g}, "
            f"{t.test.ci_high:+.3g}] over {t.test.n_splits} splits; corrected t-test "
            f"t = {t.test.t:.2f}, p = {p_text(t.test.p_value)}; Bayesian correlated t-test "
            f"{posterior_text(t.posterior)} (ROPE ±{rope:g})"
        )
        return Finding(claim, on0, verdict, evidence)
    hier, note = hierarchical_pair(blocks, labels, sizes, flagged, 0, 1, rope, lower)
    wil = sig.wilcoxon_holm(means, 0, lower, [1])[0] if len(labels) >= 2 else None
    p = PairTests(1, wil, per, hier, note)
    evidence = f"{head}; {pair_evidence(ci, cj, len(labels), lower, p)}"
    return Finding(claim, on0, p.verdict(), evidence)


def within_paper(a: Analysis) -> Finding:
    """Birkhoff/Birkhoff within 0.5 of the paper on every dataset (a reproduction check)."""
    claim = "Table 1: Birkhoff/Birkhoff within 0.5 of the paper on all six datasets"
    if "B/B" not in a.names:
        return Finding(claim, None, "not run", "")
    k = a.names.index("B/B")
    col = a.data.columns[a.cols[k]]
    parts, on0 = [], []
    for n, r in enumerate(a.rows):
        row = a.data.rows[r]
        paper = a.data.spec.paper_value(row, col)
        if paper is None:
            continue
        parts.append(f"{row.label} {a.means[n, k]:.2f} ± {a.stds[n, k]:.2f} (paper {paper:.2f})")
        if 0 in a.data.splits:
            on0.append(abs(a.data.values[r, a.cols[k], a.data.splits.index(0)] - paper) <= 0.5)
    return Finding(
        claim,
        None if not on0 else all(on0),
        "n/a (a reproduction check, not a comparison)",
        "mean ± std over the splits: " + ", ".join(parts),
    )


def findings(analyses: Mapping[str, Analysis]) -> list[Finding]:
    """The paper's findings of reports/README.md, each with the paper's split and the
    repeated-split verdict."""
    out: list[Finding] = []
    t1 = analyses.get("table1")
    if t1 is not None:
        out.append(within_paper(t1))
    for key, name in (("table1", "Table 1"), ("table2", "Table 2")):
        if key in analyses:
            out.append(best_on_average(analyses[key], f"{name}: Birkhoff/Birkhoff best on average"))
    t3 = analyses.get("table3")
    if t3 is not None:
        claim = (
            "Table 3: with a linear model the Birkhoff polytope beats the permutahedron "
            "(the paper: 'by a large margin')"
        )
        out.append(beats(t3, t3, "B/B linear", "P/P linear", claim))
    t4 = analyses.get("table4")
    if t4 is not None:
        out.append(best_on_average(t4, "Table 4: the order simplex (M/M) best on average MAE"))
        steps = [
            beats(t4, t4, "R/M", "ridge", "R/M < ridge"),
            beats(t4, t4, "cube/M", "R/M", "cube/M < R/M"),
            beats(t4, t4, "M/M", "cube/M", "M/M <= cube/M"),
        ]
        last = steps[-1].verdict
        verdicts = [s.verdict for s in steps[:2]] + (
            ["holds"] if last == "equivalent within the ROPE" else [last]
        )
        on0 = None
        if all(s.on_paper_split is not None for s in steps):
            on0 = bool(steps[0].on_paper_split and steps[1].on_paper_split
                       and not _strictly_worse(t4, "M/M", "cube/M"))  # fmt: skip
        out.append(
            Finding(
                "Table 4: average MAE ridge > (R, M) > (cube, M) >= (M, M)",
                on0,
                combine(verdicts),
                " | ".join(f"{s.claim}: {s.evidence} -> {s.verdict}" for s in steps)
                + " (the last step holds when M/M is better or equivalent)",
            )
        )
    t7 = analyses.get("table7")
    for key, label in (("table7", "headline"), ("table7_round", "rounded knapsack bound")):
        a = analyses.get(key)
        if a is None or t7 is None:
            continue
        for ds in ("Emotions", "Scene"):
            claim = f"Table 7 ({label}): knapsack/knapsack beats cube/cube in F1 on {ds}"
            out.append(beats(a, t7, "K/K", "cube/cube", claim, dataset=ds))
    return out


def _strictly_worse(a: Analysis, ci: str, cj: str) -> bool:
    """On the paper's split, the mean of ``ci`` is worse than ``cj``'s (ties are not)."""
    m = _seed0_means(a, [ci, cj])
    if m is None:
        return False
    sign = 1.0 if a.data.spec.lower_is_better else -1.0
    same = abs(m[ci] - m[cj]) <= sig.TIE_RTOL * max(abs(m[ci]), abs(m[cj]))
    return not same and sign * m[ci] > sign * m[cj]
