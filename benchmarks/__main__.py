"""``python -m benchmarks``: run the suite (see :mod:`benchmarks.run`)."""

import sys

from .run import main

sys.exit(main())
