"""SIGKILL the driver of a word count from a spout of your own, then start it again on the same checkpoint.

A driver program (``user_spout_kill_driver.py``) in a subprocess is killed right after a
partition of batch 1 wrote its keys to the state (an executor kills it: the batch's end
offsets are in Spark's offset log, not its commit log). The next start runs batch 1 again
from the logged offsets:

* the transactional spout (the DB-polling example) emits it again in the tasks with
  ``emitPartitionBatch`` and the exact metadata of the offset log: the same rows, and the
  transactional state counts each word once;
* the opaque spout emits it again with other tuples (4 words of a partition, not 3), the
  batches after it go on from where the replay ended, and the opaque state counts each word once.
"""

from __future__ import annotations

import json
import signal
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from examples.db_polling_spout import load_sentences
from tests.driver_processes import start_driver
from trident_spark.state import SqliteState, open_state

pytestmark = [pytest.mark.integration, pytest.mark.faults]

DRIVER = Path(__file__).with_name("user_spout_kill_driver.py")
RUN_TIMEOUT = 240.0
KILL_BATCH = 1


def start(out: Path, config: dict[str, Any], run: int, kill_batch: int | None) -> int:
    """One start of the driver; its return code (-9 when it was killed)."""
    return start_driver(DRIVER, out, {**config, "kill_batch": kill_batch}, run, "SPOUT_KILL_TOKEN",
                        RUN_TIMEOUT)


def kill_then_restart(tmp_path: Path, config: dict[str, Any]) -> tuple[Path, list[list[Any]]]:
    out = tmp_path / "out"
    out.mkdir()
    config = {**config, "checkpoint": str(tmp_path / "checkpoint")}
    killed = start(out, config, 0, KILL_BATCH)
    stderr = (out / "stderr-0.txt").read_text()[-3000:]
    assert killed == -signal.SIGKILL and (out / "killed-0").exists(), stderr
    query = tmp_path / "checkpoint" / "words"
    assert (query / "offsets" / str(KILL_BATCH)).exists()         # the batch was logged ...
    assert not (query / "commits" / str(KILL_BATCH)).exists()     # ... and not committed
    assert start(out, config, 1, None) == 0, (out / "stderr-1.txt").read_text()[-3000:]
    calls = [json.loads(line) for line in (out / "calls.jsonl").read_text().splitlines()]
    return out, calls


def logged_partitions(tmp_path: Path, batch: int) -> dict[str, Any]:
    lines = (tmp_path / "checkpoint" / "words" / "offsets" / str(batch)).read_text().splitlines()
    return dict(json.loads(lines[-1])["partitions"])


def counts(path: Path, kind: str) -> Counter[str]:
    factory = SqliteState.opaque if kind == "opaque" else SqliteState.transactional
    with open_state(factory(path=str(path), table="counts")) as store:
        return Counter(dict(store.getTuples()))


def test_a_transactional_spout_replays_the_logged_batch_after_a_driver_kill(tmp_path: Path):
    sentences = [f"{('ant', 'bee', 'cow')[i % 3]} {('dog', 'eel')[i % 2]}" for i in range(12)]
    load_sentences(tmp_path / "source.db", sentences)      # two tables of 6 rows: 3 batches of 2 + 2 rows
    out, calls = kill_then_restart(tmp_path, {"kind": "transactional", "db": str(tmp_path / "source.db")})

    logged = logged_partitions(tmp_path, KILL_BATCH)
    first = {c[2]: c[3] for c in calls if c[0] == "new" and c[1] == KILL_BATCH}
    assert first == logged                        # the metadata made before the kill is what was logged
    again = sorted(c[1:4] for c in calls if c[0] == "again")
    assert again == sorted([KILL_BATCH, pid, meta] for pid, meta in logged.items())  # emitted again from it
    later = {c[2]: c[3] for c in calls if c[0] == "new" and c[1] == KILL_BATCH + 1}
    assert later == {pid: {"from_id": meta["to_id"] + 1, "to_id": meta["to_id"] + 2}
                     for pid, meta in logged.items()}       # and the next batch goes on from the log
    assert counts(out / "counts.db", "transactional") == Counter(w for s in sentences for w in s.split())


def test_an_opaque_spout_replays_other_tuples_after_a_driver_kill_and_counts_each_once(tmp_path: Path):
    rows = {"left": list("abcdefghij"), "right": list("pqrstu")}
    out, calls = kill_then_restart(tmp_path, {"kind": "opaque", "rows": rows})

    emitted = [(c[1], c[2], c[3], c[6]) for c in calls if c[0] == "emit" and c[6]]
    assert (KILL_BATCH, 0, "left", list("def")) in emitted    # the batch the driver died in ...
    assert (KILL_BATCH, 1, "left", list("defg")) in emitted   # ... emitted again, with other tuples
    assert (KILL_BATCH + 1, 0, "left", list("hij")) in emitted  # the next batch from where the replay ended
    assert logged_partitions(tmp_path, KILL_BATCH)["left"] == 6   # (the log still says 6)
    assert counts(out / "counts.db", "opaque") == Counter(w for words in rows.values() for w in words)
