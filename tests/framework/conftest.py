"""Make the out-of-tree test plugins importable as ``cs_sample_plugins``."""

from __future__ import annotations

import sys
from pathlib import Path

SAMPLE_PLUGINS_DIR = str(Path(__file__).resolve().parent.parent / "testing_plugins")
if SAMPLE_PLUGINS_DIR not in sys.path:
    sys.path.insert(0, SAMPLE_PLUGINS_DIR)
