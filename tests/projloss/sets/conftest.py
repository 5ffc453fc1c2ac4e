import sys
from pathlib import Path

# Make the helper modules next to the tests (reference.py, specimens.py) importable.
sys.path.insert(0, str(Path(__file__).parent))
