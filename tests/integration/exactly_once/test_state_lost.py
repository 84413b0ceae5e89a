"""A store that loses data mid-run stops the stream with StateLostError, never a silently wrong count.

One running topology, three streams, three stores of their own:
* Redis without persistence, killed and restarted empty on the same port;
* a real OpenSearch node, killed (SIGKILL) and started again on its port with its data
  directory wiped;
* SQLite, restored from a backup taken after the first batch (rolled back).
The next batch of each stream fails before it writes, naming the store and the batch the
checkpoint committed; then ``run(accept_state_loss=True)`` counts on from what the store holds.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.local.launchers import redis_server_binary
from trident_spark.local.opensearch import start_opensearch
from trident_spark.local.probes import redis_answers
from trident_spark.local.process import free_port, wait_until
from trident_spark.runtime.failures import translate
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import ElasticsearchState, RedisState, SqliteState, StateLostError, open_state

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

BATCHES = [[["cat"], ["dog"], ["cat"]], [["cat"], ["eel"]], [["dog"], ["dog"], ["fox"]]]


class Server:
    """A server process on a fixed port that a test can kill (SIGKILL) and start again, empty."""

    def __init__(self, argv: list[str], address: str, ready: Any, workdir: Path) -> None:
        self.argv, self.address, self.ready, self.workdir = argv, address, ready, workdir
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.workdir / "server.log", "ab")  # noqa: SIM115 (the process keeps it)
        self.process = subprocess.Popen(self.argv, stdout=log, stderr=log, cwd=self.workdir,
                                        start_new_session=True)
        wait_until(lambda: self.ready(self.address), timeout=30, what=self.address)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[dict[str, Any]]:
    redis_port = free_port()
    (tmp_path / "redis").mkdir()
    redis = Server([str(redis_server_binary()), "--port", str(redis_port), "--bind", "127.0.0.1",
                    "--save", "", "--appendonly", "no", "--dir", str(tmp_path / "redis")],
                   f"redis://127.0.0.1:{redis_port}/0", redis_answers, tmp_path / "redis")
    try:
        redis.start()
        with start_opensearch(log_dir=tmp_path / "es") as es:
            yield {"redis": redis, "es": es}
    finally:
        redis.kill()


def _counts(batches: list[list[list[str]]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for batch in batches:
        for (word,) in batch:
            counts[word] = counts.get(word, 0) + 1
    return counts


def _failure(handle: Any, stream: str, timeout: float = 120) -> BaseException:
    query = handle.queries[stream]
    with contextlib.suppress(Exception):   # the query's failure, read below
        query.awaitTermination(timeout)
    failure = query.exception()
    assert failure is not None, f"stream {stream} did not fail"
    return translate(stream, failure)


def test_a_store_emptied_or_rolled_back_mid_run_stops_the_stream(spark, servers, tmp_path):
    redis, es = servers["redis"], servers["es"]
    states = {
        "r": RedisState.opaque(url=redis.address, key_prefix="lost"),
        "e": ElasticsearchState.opaque(hosts=[es.address], index="lost"),
        "s": SqliteState.opaque(path=str(tmp_path / "state.db"), table="lost"),
    }
    topology = TridentTopology()
    feeders = {name: FeederBatchSpout(["word"]) for name in states}
    for name, factory in states.items():
        (topology.newStream(name, feeders[name]).groupBy(["word"])
         .persistentAggregate(factory, Count(), ["count"]))
    words = sorted(_counts(BATCHES))

    def feed(batch: list[list[str]]) -> None:
        for feeder in feeders.values():
            feeder.feed(batch)

    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark)
    try:
        feed(BATCHES[0])
        handle.processAllAvailable()
        backup = sqlite3.connect(":memory:")
        with sqlite3.connect(states["s"].path) as live:
            live.backup(backup)                                  # the SQLite state after batch 0
        feed(BATCHES[1])
        handle.processAllAvailable()
        after_two = _counts(BATCHES[:2])
        for factory in states.values():
            assert open_state(factory.url).multiGet([[w] for w in words]) == [after_two.get(w) for w in words]

        redis.kill()
        redis.start()                                            # no persistence: empty
        es.nodes[0].kill()
        es.nodes[0].wipe_data()
        es.nodes[0].start()                                      # same port, empty
        with sqlite3.connect(states["s"].path) as live:
            backup.backup(live)                                  # restored from the older backup
        feed(BATCHES[2])

        errors = {name: _failure(handle, name) for name in states}
    finally:
        handle.stop()

    for name, kind, stored in (("r", "missing", None), ("e", "missing", None), ("s", "behind", 0)):
        error = errors[name]
        assert isinstance(error, StateLostError), (name, error)
        assert (error.kind, error.committed_txid, error.stored_txid) == (kind, 1, stored), (name, str(error))
        text = str(error)
        assert text.startswith(f"state lost data: {states[name].open_commit_log().address} "), text
        assert "but this checkpoint committed batches up to txid 1 to it" in text
        assert "restore the store from a backup or snapshot taken at or after txid 1" in text
        assert "accept_state_loss=True" in text
        assert f"(stream {name!r})" in text
    # Nothing of batch 2 was written: the emptied stores hold nothing, SQLite holds batch 0's counts.
    client = redis_py.Redis.from_url(redis.address)
    assert client.dbsize() == 0
    client.close()
    with states["e"].open_backing_map() as backing:     # no document: not even the commit record
        backing.request("POST", "/lost/_refresh")
        status, answer = backing.request("GET", "/lost/_count")
        assert status == 404 or answer["count"] == 0, (status, answer)
    after_one = _counts(BATCHES[:1])
    assert open_state(states["s"].url).multiGet([[w] for w in words]) == [after_one.get(w) for w in words]

    # Accepting the loss: the record is re-based, and counting goes on from what the store holds.
    accepted = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark,
                            accept_state_loss=True)
    try:
        assert accepted.awaitTermination(300)
        assert accepted.exception() is None
    finally:
        accepted.stop()
    third = _counts(BATCHES[2:])
    for name in ("r", "e"):
        assert open_state(states[name].url).multiGet([[w] for w in words]) == [third.get(w) for w in words]
    rolled = _counts([BATCHES[0], BATCHES[2]])
    assert open_state(states["s"].url).multiGet([[w] for w in words]) == [rolled.get(w) for w in words]
    assert {name: f.open_commit_log().read().txid for name, f in states.items()} == dict.fromkeys(states, 2)
