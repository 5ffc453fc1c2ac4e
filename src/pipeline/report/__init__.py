"""The report of the paper's experiments: ``python -m pipeline.report`` (DVC stage
``report``) builds ``reports/`` from the tracked results (:mod:`pipeline.report.build`):
the paper's tables side by side with ours (Markdown and CSV), figures, and a README that
checks the paper's findings and explains every difference."""

from .build import build_report

__all__ = ["build_report"]
