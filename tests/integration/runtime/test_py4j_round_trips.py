"""The driver's py4j round trips per batch stay few: each one is a wait on the JVM, paid by
every batch (a tiny batch's driver time is mostly these waits). Counted here so they do not
creep back: PySpark's listener bridge alone read ~450 fields of every progress event one by
one, and its DataFrame debugging added a dozen round trips to every column expression."""

from __future__ import annotations

import itertools
import statistics
import threading

import pytest

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFunction
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration

#: Round trips a warm batch of this word count may take, on every thread of the driver
#: (measured: a mean of ~300; ~600 before the aggregation's expressions were kept from batch
#: to batch; ~1,280 before the progress JSON and the debugging setting).
MAX_ROUND_TRIPS_PER_BATCH = 500


class Split(BaseFunction):
    def execute(self, tuple, collector):
        for word in tuple[0].split():
            collector.emit([word])


def test_a_warm_batch_of_a_word_count_makes_few_py4j_round_trips(spark, tmp_path, monkeypatch):
    import py4j.clientserver

    lock, calls = threading.Lock(), [0]
    send = py4j.clientserver.ClientServerConnection.send_command

    def counted(self, command):
        with lock:
            calls[0] += 1
        return send(self, command)

    monkeypatch.setattr(py4j.clientserver.ClientServerConnection, "send_command", counted)
    seen: list[int] = []
    spout = FeederBatchSpout(["sentence"], num_partitions=2)
    topology = TridentTopology()
    (topology.newStream("round-trips", spout).each(["sentence"], Split(), ["word"]).groupBy(["word"])
     .persistentAggregate(SqliteState.opaque(path=str(tmp_path / "counts.db"), table="counts"), Count(),
                          ["count"]))
    for i in range(12):
        spout.feed([[f"the cat {i % 7} dog"], [f"a cat {i % 5}"]] * 5)
    handle = topology.run(tmp_path / "ckpt", trigger="available_now", spark=spark,
                          on_progress=lambda progress: seen.append(calls[0]))
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    assert len(seen) == 12
    # Progress events come after their batch, so one batch's calls may land in the next one's
    # count: the mean over the warm batches (first to last event) does not depend on that.
    warm = [after - before for before, after in itertools.pairwise(seen[3:])]
    print("py4j round trips per warm batch:", warm)
    assert statistics.mean(warm) <= MAX_ROUND_TRIPS_PER_BATCH, warm
