"""`trident-spark demo` from start to end, as a user runs it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration


def test_demo_runs_end_to_end_and_prints_batches_and_top_words():
    cli = Path(sys.executable).with_name("trident-spark")
    env = {k: v for k, v in os.environ.items() if k != "KAFKA_BOOTSTRAP_SERVERS"}
    done = subprocess.run([str(cli), "demo", "--sentences", "1000", "--max-fetch-bytes", "10000"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    out = done.stdout
    assert "loaded 1,000 sentences" in out
    assert "[wordcount] batch 0:" in out and "limited by max_fetch_bytes" in out
    assert "1,000 sentences" in out.split("batches,")[1]
    assert "; state: " in out and "keys written" in out
    # DRPC-style questions answered on Spark by stateQuery(MapGet) from the SQLite state
    assert "stateQuery(MapGet) answers" in out
    assert re.search(r"│ nation liberty +│ nation +│ +500 │", out)
    assert re.search(r"│ unknownword +│ unknownword +│ +- │", out)
    assert "top 10 words (open_state)" in out and re.search(r"│ that +│ +1,300 │", out)
    assert "exact: all 138 words in the state match a count of the corpus (27,100 words)" in out
    # its state was in a temporary directory, gone by now: no `trident-spark query` on it
    assert "trident-spark query" not in out
    assert "to query the state afterwards: trident-spark demo --workdir DIR" in " ".join(out.split())
