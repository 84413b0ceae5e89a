"""DRPC requests answered in the driver (``run(drpc_path="auto")``): no Spark job per request.

One run: sentences counted into a SQLite state on Spark; the ``words`` DRPC stream (Python
Split, groupBy, stateQuery, FilterNull, Sum) is answered by the driver's threads, 100 callers
at once, each answer equal to a direct computation from the state; the ``perpart`` DRPC stream
aggregates per partition after a shuffle, which only Spark's partitions define, so ``auto``
runs it as Spark batches; both answer through the same LocalDRPC.
"""

from __future__ import annotations

import json
import random
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count, FilterNull, MapGet, Sum
from trident_spark.drpc import LocalDRPC
from trident_spark.errors import DRPCExecutionException, TopologyError
from trident_spark.operation import BaseFunction
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

SENTENCES = [[["the cat sat on the mat"], ["the dog ate the cat food"]], [["a dog and a cat"]]]
WORDS = sorted({w for batch in SENTENCES for (s,) in batch for w in s.split()} | {"zebra", "yak"})


class Split(BaseFunction):
    """Each word of the sentence; the word ``boom`` raises (a request that fails)."""

    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getString(0).split(" "):
            if word == "boom":
                raise ValueError("Split does not take 'boom'")
            collector.emit([word])


@pytest.fixture(scope="module")
def served(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("drpc-in-driver")
    factory = SqliteState.opaque(path=str(work / "counts.db"), table="counts")
    spout = FeederBatchSpout(["sentence"])
    for batch in SENTENCES:
        spout.feed(batch)
    topology = TridentTopology()
    counts = (topology.newStream("sentences", spout).each(["sentence"], Split(), ["word"])
              .groupBy(["word"]).persistentAggregate(factory, Count(), ["count"]))
    drpc = LocalDRPC()
    (topology.newDRPCStream("words", drpc).each(["args"], Split(), ["word"]).groupBy(["word"])
     .stateQuery(counts, ["word"], MapGet(), ["count"]).each(["count"], FilterNull())
     .aggregate(["count"], Sum(), ["sum"]))
    (topology.newDRPCStream("perpart", drpc).each(["args"], Split(), ["word"]).shuffle()
     .partitionAggregate(Count(), ["n"]).aggregate(["n"], Sum(), ["words"]))
    handle = topology.run(work / "ckpt", spark=spark)
    try:
        handle.queries["sentences"].processAllAvailable()
        yield drpc, handle, factory
    finally:
        handle.stop()
        drpc.shutdown()


def expected_sum(factory: Any, args: str) -> list[list[int]]:
    values = factory.open().multiGet([[w] for w in args.split(" ")])
    return [[sum(v for v in values if v is not None)]]


def test_a_hundred_concurrent_requests_get_what_the_state_says(served: Any) -> None:
    drpc, handle, factory = served
    draw = random.Random(17)
    asked = [" ".join(draw.sample(WORDS, draw.randint(1, 5))) for _ in range(100)]
    with ThreadPoolExecutor(100) as pool:
        answers = list(pool.map(lambda a: drpc.execute("words", a), asked))
    assert [json.loads(a) for a in answers] == [expected_sum(factory, a) for a in asked]
    assert json.loads(drpc.execute("words", "cat the zebra")) == [[3 + 4]]
    assert "drpc-words" not in handle.queries                 # no Spark query: the driver answered
    assert handle.drpc_direct["drpc-words"].stats.answered >= 101


def test_a_request_whose_operation_raises_fails_at_its_caller_and_the_next_is_answered(served: Any) -> None:
    drpc, _, factory = served
    failed = r"each\(Split\) failed on tuple .*Split does not take 'boom'"
    with pytest.raises(DRPCExecutionException, match=failed):
        drpc.execute("words", "cat boom")
    assert json.loads(drpc.execute("words", "cat")) == expected_sum(factory, "cat")


def test_a_stream_that_needs_spark_s_partitions_runs_as_spark_batches(served: Any) -> None:
    drpc, handle, _ = served
    assert "drpc-perpart" in handle.queries and "drpc-perpart" not in handle.drpc_direct
    assert json.loads(drpc.execute("perpart", "a b c d")) == [[4]]


def test_driver_path_asked_for_a_stream_it_cannot_run_is_refused(spark: Any, tmp_path: Path) -> None:
    topology = TridentTopology()
    with LocalDRPC() as drpc:
        topology.newDRPCStream("perpart", drpc).shuffle().partitionAggregate(Count(), ["n"])
        with pytest.raises(TopologyError, match=r"drpc_path='driver'.*after a repartitioning"):
            topology.run(tmp_path / "ckpt", spark=spark, drpc_path="driver")
