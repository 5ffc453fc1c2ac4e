"""A module that takes ``$SLOW_IMPORT`` seconds to import (``test_preload.py``: a preload
server still importing)."""

import os
import time

time.sleep(float(os.environ.get("SLOW_IMPORT", "0")))
