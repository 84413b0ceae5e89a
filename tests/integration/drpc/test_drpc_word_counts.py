"""DRPC on Spark (``run(drpc_path="spark")``: each request a micro-batch): word counts persisted,
then asked through LocalDRPC and through a DRPCClient against the server ``run()`` starts,
several requests at once; a request whose operation raises fails at its caller and the topology
goes on answering.

One run, three queries: the counting stream, the ``words`` DRPC stream (a LocalDRPC) and the
``total`` DRPC stream (the run's own server). Answers are compared with a direct computation
from the state (``state.open().multiGet``).
"""

from __future__ import annotations

import json
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count, FilterNull, MapGet, Sum
from trident_spark.drpc import DRPCClient, LocalDRPC
from trident_spark.drpc.client import parse_address
from trident_spark.errors import DRPCExecutionException
from trident_spark.operation import BaseFunction
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

SENTENCES = [[["the cat sat on the mat"], ["the dog ate the cat food"]], [["a dog and a cat"]]]


class Split(BaseFunction):
    """Each word of the sentence; the word ``boom`` raises (a request that fails)."""

    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getString(0).split(" "):
            if word == "boom":
                raise ValueError("Split does not take 'boom'")
            collector.emit([word])


def summed(words: TridentTopology, counts: Any, stream: Any) -> Any:
    return (
        stream.each(["args"], Split(), ["word"])
        .groupBy(["word"])
        .stateQuery(counts, ["word"], MapGet(), ["count"])
        .each(["count"], FilterNull())
        .aggregate(["count"], Sum(), ["sum"])
    )


@pytest.fixture(scope="module")
def served(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    work = tmp_path_factory.mktemp("drpc-words")
    factory = SqliteState.opaque(path=str(work / "counts.db"), table="counts")
    spout = FeederBatchSpout(["sentence"])
    for batch in SENTENCES:
        spout.feed(batch)
    topology = TridentTopology()
    counts = (
        topology.newStream("sentences", spout)
        .each(["sentence"], Split(), ["word"])
        .groupBy(["word"])
        .persistentAggregate(factory, Count(), ["count"])
    )
    drpc = LocalDRPC()
    summed(topology, counts, topology.newDRPCStream("words", drpc))
    (
        topology.newDRPCStream("total")
        .each(["args"], Split(), ["word"])
        .groupBy(["word"])
        .stateQuery(counts, ["word"], MapGet(), ["count"])
        .each(["count"], FilterNull())
        .project(["word", "count"])
    )
    handle = topology.run(work / "ckpt", spark=spark, drpc="127.0.0.1:0", drpc_path="spark")
    try:
        handle.queries["sentences"].processAllAvailable()
        yield drpc, handle, factory
    finally:
        handle.stop()
        drpc.shutdown()


def expected_sum(factory: Any, args: str) -> list[list[int]]:
    values = factory.open().multiGet([[w] for w in args.split(" ")])
    return [[sum(v for v in values if v is not None)]]


def test_local_drpc_answers_concurrent_requests_as_the_state_says(served: Any) -> None:
    drpc, _, factory = served
    asked = ["cat dog the", "the", "cat", "dog mat", "food ate the cat"]
    with ThreadPoolExecutor(len(asked)) as pool:
        answers = list(pool.map(lambda a: drpc.execute("words", a), asked))
    assert [json.loads(a) for a in answers] == [expected_sum(factory, a) for a in asked]
    assert json.loads(answers[0]) == [[3 + 2 + 4]]


def test_a_client_of_the_runs_own_server_gets_each_words_count(served: Any) -> None:
    _, handle, factory = served
    host, port = parse_address(handle.drpc_address)
    client = DRPCClient(host, port, timeout=120)
    asked = ["cat the", "dog", "zebra cat"]
    with ThreadPoolExecutor(len(asked)) as pool:
        answers = list(pool.map(lambda a: client.execute("total", a), asked))
    for args, answer in zip(asked, answers, strict=True):
        values = factory.open().multiGet([[w] for w in args.split(" ")])
        assert sorted(map(tuple, json.loads(answer))) == sorted(
            (w, v) for w, v in zip(args.split(" "), values, strict=True) if v is not None
        )


def test_a_request_whose_operation_raises_fails_at_its_caller_and_the_stream_goes_on(served: Any) -> None:
    drpc, _, factory = served
    with pytest.raises(DRPCExecutionException, match="Split does not take 'boom'") as failure:
        drpc.execute("words", "cat boom")
    print(failure.value)
    assert "Traceback" not in str(failure.value) and "\n" not in str(failure.value).strip()
    assert json.loads(drpc.execute("words", "cat")) == expected_sum(factory, "cat")


def test_run_names_its_drpc_server(served: Any, tmp_path: Path) -> None:
    _, handle, _ = served
    assert handle.drpc_address.startswith("127.0.0.1:")
