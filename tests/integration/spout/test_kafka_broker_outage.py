"""A Kafka broker that stops answering for a while, then is stopped and started again from its logs:
the stream waits (within run(outage_budget=)) and goes on, with exact counts, whether the outage
meets a batch reading records or the driver planning the next batch.

The broker is an Apache Kafka of this test's own (not the session's, which other tests use):
paused with SIGSTOP (it stops answering, its connections stay open), and for the batch's outage
then restarted (``ServiceHandle.restart()``: a controlled shutdown, a new process on the same
ports reading its logs), so the records the waiting batch reads were written before the restart.
Real services: Apache Kafka, Spark local[2], SQLite.
"""

from __future__ import annotations

import os
import signal
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.local import start_kafka
from trident_spark.local.kafka import create_topic, produce
from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.operation import BaseFilter, BaseFunction
from trident_spark.outage import read_wait
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState, open_state

pytestmark = [pytest.mark.integration, pytest.mark.faults]
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

#: The outage a running batch meets (the issue asks for 60 s); TRIDENT_OUTAGE_SECONDS shortens it.
OUTAGE_S = float(os.environ.get("TRIDENT_OUTAGE_SECONDS", "60"))
#: The outage the driver meets while planning (two failed attempts of 5 s each fit in it).
PLANNING_OUTAGE_S = 13.0


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getStringByField("value").split():
            collector.emit([word])


class Gate(BaseFilter):
    """Once ``armed`` exists, every task that comes here waits until the test has paused the broker
    (``stopped``). On local[2] two tasks hold both cores, so the batch's third task starts, and reads
    its Kafka partition, only once the broker does not answer."""

    def __init__(self, directory: Path) -> None:
        self.directory = str(directory)

    def isKeep(self, tuple: Any) -> bool:
        gate = Path(self.directory)
        if (gate / "armed").exists() and not (gate / "stopped").exists():
            (gate / f"reached-{tuple['partition']}").touch()
            deadline = time.monotonic() + 120
            while not (gate / "stopped").exists() and time.monotonic() < deadline:
                time.sleep(0.05)
        return True


def sentences(start: int, n: int) -> list[str]:
    return [f"w{i % 7} v{i % 11} all" for i in range(start, start + n)]


def paused(kafka: Any, seconds: float, stream_dir: Path, handle: Any, then: Any = None,
           restart: bool = False) -> list[dict[str, Any]]:
    """Pause the broker (SIGSTOP) for ``seconds``, calling ``then`` once it is paused, and with
    ``restart`` stop it and start it again from its logs before it answers again; the stream's
    wait records seen meanwhile."""
    seen: list[dict[str, Any]] = []
    pid = kafka.pid
    os.kill(pid, signal.SIGSTOP)
    try:
        if then is not None:
            then()
        until = time.monotonic() + seconds
        while time.monotonic() < until:
            record = read_wait(stream_dir)
            if record is not None and record not in seen:
                seen.append(record)
            assert handle.exception() is None, handle.exception()
            time.sleep(0.2)
    finally:
        os.kill(pid, signal.SIGCONT)
        if restart:
            kafka.restart()             # SIGTERM at once: a controlled shutdown, then a new process
    if restart:
        assert kafka.pid != pid
    return seen


def wait_for_tasks(gate: Path, tasks: int, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while len(list(gate.glob("reached-*"))) < tasks:
        assert time.monotonic() < deadline, f"{tasks} tasks did not reach the gate within {timeout:g} s"
        time.sleep(0.05)


@pytest.mark.timeout(480)
def test_a_broker_outage_of_60_s_is_survived_with_exact_counts(spark, tmp_path):
    try:
        kafka = start_kafka(kind="apache")
    except ServiceNotInstalledError as exc:
        pytest.skip(f"needs a local Apache Kafka to pause and restart: {exc}")
    if not kafka.restartable:
        kafka.stop()
        pytest.skip(f"the broker comes from {kafka.provider!r}: it cannot be paused and restarted here")
    gate = tmp_path / "gate"
    gate.mkdir()
    produced: list[str] = []
    with kafka:
        create_topic(kafka.address, "sentences", partitions=3)

        def send(part: list[str]) -> None:  # in one flush: a batch sees all three partitions' records
            produce(kafka.address, "sentences", [(None, s, i % 3) for i, s in enumerate(part)])
            produced.extend(part)

        send(sentences(0, 400))
        topology = TridentTopology()
        stream = topology.newStream("outage", KafkaSpout(kafka.address, ["sentences"], timeout=5))
        seen = stream.each(["value", "partition"], Gate(gate)).collect()  # read before the state writes
        state = SqliteState.opaque(path=str(tmp_path / "wc.db"), table="counts")
        words = stream.each(["value"], Split(), ["word"]).groupBy(["word"])
        words.persistentAggregate(state, Count(), ["count"])
        handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="1 second", spark=spark)
        stream_dir = tmp_path / "ckpt" / "outage"
        try:
            handle.processAllAvailable()

            # 1. No batch running: the driver's planning of the next batch meets the outage.
            planning = paused(kafka, PLANNING_OUTAGE_S, stream_dir, handle)
            send(sentences(400, 200))
            handle.processAllAvailable()

            # 2. A batch reading its records meets it, for OUTAGE_S seconds and a restart.
            (gate / "armed").touch()
            send(sentences(600, 300))
            wait_for_tasks(gate, 2, 60)
            during = paused(kafka, OUTAGE_S, stream_dir, handle, then=(gate / "stopped").touch, restart=True)
            send(sentences(900, 500))  # and data keeps arriving after it
            handle.processAllAvailable()
            assert handle.exception() is None
        finally:
            handle.stop()

    expected = Counter(word for s in produced for word in s.split())
    words = sorted(expected)
    assert open_state(state.url).multiGet([[w] for w in words]) == [expected[w] for w in words]
    assert sorted(t["value"] for t in seen.tuples) == sorted(produced)  # each record once, replays included

    address = kafka.address
    assert planning, "no wait was recorded while the driver planned during the outage"
    assert {(r["doing"], r["kind"], r["address"]) for r in planning} == {
        ("planning the next batch", "broker", address)}
    assert planning[0]["message"].startswith(
        f"stream outage: planning the next batch waiting for broker at {address} (0 s of the 180 s outage "
        f"budget used): Kafka at {address} did not answer")
    batch_waits = [r for r in during if r["doing"].startswith("batch ")]
    assert batch_waits, f"no batch waited for the broker; waits seen: {during}"
    assert {(r["kind"], r["address"]) for r in batch_waits} == {("broker", address)}
    # a record per wait, waits up to 10 s apart after attempts of a few seconds: the last one seen
    # comes well into the outage
    assert max(r["used_s"] for r in batch_waits) >= OUTAGE_S / 2
    assert read_wait(stream_dir) is None  # nothing waits any more
