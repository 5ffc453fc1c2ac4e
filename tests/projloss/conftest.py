import sys
from pathlib import Path

# The set-test harness (specimens.py: one entry per set; reference.py: independent
# projection solvers over vertices) is reused by the loss, decoding and estimator tests.
sys.path.insert(0, str(Path(__file__).parent / "sets"))
sys.path.insert(0, str(Path(__file__).parent))
