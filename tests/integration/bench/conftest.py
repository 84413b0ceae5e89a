"""The bench scripts import each other by bare name (they run as ``python bench/state.py``): put
bench/ on the path for the tests of the limit on a real broker."""

from __future__ import annotations

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
