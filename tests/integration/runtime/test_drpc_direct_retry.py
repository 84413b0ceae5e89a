"""The DRPC driver path retries as a Spark batch does (runtime/retry.py), against real services.

A real Redis server (redis-server, appendonly, on its own port) holds word counts; a real DRPC
server in this process (LocalDRPC) takes the requests; the driver path (:class:`DirectDRPC`, no
Spark) answers ``count`` (Split, groupBy, stateQuery, FilterNull, Sum). Each request's answer is
compared with the counts written. Shown:

* a state conflict (``StateConflictError`` from the query function) replays the request with
  the same txid, and the answer is exact;
* Redis killed while a request runs, started again within the outage budget: the request waits
  (the wait recorded in the query's checkpoint, as the Spark path records it) and is answered
  exactly once the store is back;
* a ``FailedException`` replays the request; replays used up fail it with the Spark path's text;
* txids go on past a restart of the driver path on the same checkpoint.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count, FilterNull, MapGet, Sum
from trident_spark.drpc import LocalDRPC
from trident_spark.drpc.client import topology_side
from trident_spark.drpc.spout import consumer_id
from trident_spark.errors import DRPCExecutionException, FailedException, StateConflictError
from trident_spark.graph import ancestors
from trident_spark.local.launchers import redis_server_binary
from trident_spark.local.probes import redis_answers
from trident_spark.local.process import free_port, wait_until
from trident_spark.operation import BaseFunction
from trident_spark.outage import WAIT_FILE
from trident_spark.runtime.drpc.driver_path import DirectDRPC
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import RedisState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

COUNTS = {"cat": 3, "dog": 2, "eel": 1}


class Redis:
    """redis-server on a fixed port, its data in an append-only file: killed (SIGKILL) and
    started again, it has the same keys."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.address = f"redis://127.0.0.1:{self.port}/0"
        self.workdir = workdir
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        log = open(self.workdir / "redis.log", "ab")  # noqa: SIM115 (the process keeps it)
        self.process = subprocess.Popen(
            [str(redis_server_binary()), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.workdir)],
            stdout=log, stderr=log, cwd=self.workdir, start_new_session=True)
        wait_until(lambda: redis_answers(self.address), timeout=30, what=self.address)

    def kill(self) -> None:
        if self.process is not None and self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(10)


class Split(BaseFunction):
    """Each word of the sentence; while the file ``fail_once`` exists, the first call removes it
    and asks for a replay; while ``fail_always`` exists, every call does."""

    def __init__(self, flags: str) -> None:
        self.flags = flags

    def execute(self, tuple: Any, collector: Any) -> None:
        once = Path(self.flags) / "fail_once"
        if once.exists():
            once.unlink()
            raise FailedException("the splitter asks for a replay")
        if (Path(self.flags) / "fail_always").exists():
            raise FailedException("the splitter always asks for a replay")
        for word in tuple.getString(0).split(" "):
            collector.emit([word])


class RecordedGet(MapGet):
    """MapGet that writes each call's txid to ``txids``; while the file ``conflict_once`` exists,
    the first call removes it and reports a lost conditional write."""

    def __init__(self, flags: str) -> None:
        self.flags = flags

    def batchRetrieve(self, state: Any, tuples: list[Any]) -> list[Any]:
        with open(Path(self.flags) / "txids", "a") as seen:
            seen.write(f"{state.txid}\n")
        conflict = Path(self.flags) / "conflict_once"
        if conflict.exists():
            conflict.unlink()
            raise StateConflictError(state.address, [tuples[0][0]], attempts=10)
        return super().batchRetrieve(state, tuples)


@pytest.fixture
def served(tmp_path: Path) -> Iterator[dict[str, Any]]:
    (tmp_path / "redis").mkdir()
    (tmp_path / "flags").mkdir()
    redis = Redis(tmp_path / "redis")
    redis.start()
    drpc = LocalDRPC(request_timeout=120)
    try:
        factory = RedisState.opaque(url=redis.address, key_prefix="counts")
        factory.open().multiPut(0, [[w] for w in COUNTS], list(COUNTS.values()))
        flags = str(tmp_path / "flags")
        topology = TridentTopology()
        counts = (topology.newStream("words", FeederBatchSpout(["word"])).groupBy(["word"])
                  .persistentAggregate(factory, Count(), ["count"]))
        answer = (topology.newDRPCStream("count", drpc).each(["args"], Split(flags), ["word"])
                  .groupBy(["word"]).stateQuery(counts, ["word"], RecordedGet(flags), ["count"])
                  .each(["count"], FilterNull()).aggregate(["count"], Sum(), ["sum"]))
        nodes = ancestors([answer.node])

        def start(**options: Any) -> DirectDRPC:
            requests = topology_side(drpc.address, consumer_id("test", "count"))
            direct = DirectDRPC("count", nodes, answer.node, requests, {}, workers=1, stream="drpc-count",
                                checkpoint=tmp_path / "ckpt", **options)
            direct.start()
            return direct

        yield {"drpc": drpc, "redis": redis, "flags": Path(flags), "start": start, "ckpt": tmp_path / "ckpt"}
    finally:
        drpc.shutdown()
        redis.kill()


def expected(args: str) -> str:
    return json.dumps([[sum(COUNTS.get(w, 0) for w in args.split(" "))]], separators=(",", ":"))


def txids(flags: Path) -> list[int]:
    return [int(line) for line in (flags / "txids").read_text().split()]


def test_a_state_conflict_is_replayed_with_the_same_txid_and_the_answer_is_exact(
        served: dict[str, Any]) -> None:
    direct = served["start"](retry_delay=0.01)
    try:
        assert served["drpc"].execute("count", "cat dog") == expected("cat dog")
        (served["flags"] / "conflict_once").touch()
        assert served["drpc"].execute("count", "cat eel cat") == expected("cat eel cat")
    finally:
        direct.stop()
    assert txids(served["flags"]) == [0, 1, 1]  # the conflicted request ran twice, as batch 1
    assert (direct.stats.answered, direct.stats.failed) == (2, 0)


def test_a_store_killed_and_started_again_within_the_budget_is_waited_out(served: dict[str, Any]) -> None:
    direct = served["start"](retry_delay=0.01, outage_budget=120)
    redis, answers = served["redis"], []
    try:
        assert served["drpc"].execute("count", "dog") == expected("dog")  # the state opened
        redis.kill()
        asking = threading.Thread(
            target=lambda: answers.append(served["drpc"].execute("count", "cat dog eel")))
        asking.start()
        wait_until(lambda: (served["ckpt"] / WAIT_FILE).exists(), timeout=60, what="the wait record")
        record = json.loads((served["ckpt"] / WAIT_FILE).read_text())
        assert (record["stream"], record["doing"], record["kind"]) == ("drpc-count", "batch 1", "store")
        assert record["address"] == f"{redis.address}?prefix=counts"
        redis.start()
        asking.join(60)
    finally:
        direct.stop()
    assert answers == [expected("cat dog eel")]
    assert not (served["ckpt"] / WAIT_FILE).exists()  # the store answered: the record went
    assert set(txids(served["flags"])) == {0, 1}  # the waiting request kept its txid
    assert (direct.stats.answered, direct.stats.failed) == (2, 0)


def test_failed_exception_is_replayed_then_fails_with_the_spark_paths_text(served: dict[str, Any]) -> None:
    direct = served["start"](retry_delay=0.01, max_batch_retries=1)
    try:
        (served["flags"] / "fail_once").touch()
        assert served["drpc"].execute("count", "eel dog") == expected("eel dog")
        (served["flags"] / "fail_always").touch()
        with pytest.raises(DRPCExecutionException) as caught:
            served["drpc"].execute("count", "cat")
    finally:
        direct.stop()
    assert str(caught.value) == (
        "DRPC request failed in batch 1: batch 1 of stream 'drpc-count' failed 2 times "
        "(max_batch_retries=1); last cause: the splitter always asks for a replay")
    assert (direct.stats.answered, direct.stats.failed) == (1, 1)


def test_txids_go_on_after_the_driver_path_restarts_on_its_checkpoint(served: dict[str, Any]) -> None:
    for _ in range(2):
        direct = served["start"]()
        try:
            assert served["drpc"].execute("count", "cat") == expected("cat")
        finally:
            direct.stop()
    assert txids(served["flags"]) == [0, 1000]  # the second run starts past the first one's block
