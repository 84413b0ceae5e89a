"""SIGKILL the driver of a count from an ITridentSpout, then start it again on the same checkpoint.

A driver program (``trident_spout_kill_driver.py``) in a subprocess is killed right after a
partition of batch 1 wrote its keys to the transactional state (an executor kills it: the batch's
end offset, holding the coordinator's metadata, is in Spark's offset log, not its commit log). The
next start initializes batch 1 again with that logged metadata as ``currMetadata`` (Trident's
TridentSpoutCoordinator: ``initializeTransaction(txid, prevMeta, state.getState(txid))``), the
emitter emits it from the same metadata (attempt 1), the next batch goes on from it, and the
transactional state counts each event once.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.driver_processes import start_driver
from tests.integration.spout.trident_spout_kill_driver import EVENTS
from trident_spark.state import SqliteState, open_state

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("trident_spout_kill_driver.py")
RUN_TIMEOUT = 240.0
KILL_BATCH = 1


def start(out: Path, config: dict[str, Any], run: int, kill_batch: int | None) -> int:
    return start_driver(DRIVER, out, {**config, "kill_batch": kill_batch}, run, "SPOUT_KILL_TOKEN",
                        RUN_TIMEOUT)


def test_an_itridentspout_batch_replays_from_its_logged_coordinator_metadata(tmp_path: Path):
    out = tmp_path / "out"
    out.mkdir()
    config = {"checkpoint": str(tmp_path / "checkpoint")}
    killed = start(out, config, 0, KILL_BATCH)
    stderr = (out / "stderr-0.txt").read_text()[-3000:]
    assert killed == -signal.SIGKILL and (out / "killed-0").exists(), stderr
    query = tmp_path / "checkpoint" / "events"
    assert (query / "offsets" / str(KILL_BATCH)).exists()          # the batch was logged ...
    assert not (query / "commits" / str(KILL_BATCH)).exists()      # ... and not committed
    logged = json.loads((query / "offsets" / str(KILL_BATCH)).read_text().splitlines()[-1])["meta"]
    assert start(out, config, 1, None) == 0, (out / "stderr-1.txt").read_text()[-3000:]

    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    inits = [c for c in calls if c[0] == "init" and c[1] == KILL_BATCH]
    first, again = inits[0], inits[-1]
    assert first[2:5] == [{"start": 0, "end": 3}, None, {"start": 3, "end": 6}]   # made before the kill
    assert logged == {"start": 3, "end": 6}                                       # ... and logged
    assert again[2:5] == [{"start": 0, "end": 3}, logged, logged]   # initialized again with it
    assert first[5] != again[5]                                     # (in the restarted driver)
    emits = [c[1:5] for c in calls if c[0] == "emit" and c[1] == KILL_BATCH]
    assert emits == [[KILL_BATCH, 0, logged, EVENTS[3:6]], [KILL_BATCH, 1, logged, EVENTS[3:6]]]
    later = next(c for c in calls if c[0] == "init" and c[1] == KILL_BATCH + 1)
    assert later[2:5] == [logged, None, {"start": 6, "end": 9}]    # the next batch goes on from it
    with open_state(SqliteState.transactional(path=str(out / "counts.db"), table="counts")) as store:
        assert Counter(dict(store.getTuples())) == Counter(EVENTS)
