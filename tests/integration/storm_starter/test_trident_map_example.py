"""storm-starter's TridentMapExample on Spark: what its peek prints and the counts Trident would hold.

The expected values follow the Java: the cycling ``FixedBatchSpout(Fields("word"), 3, five
sentences)`` emits sentences 0-2, then 3-4, then again; ``flatMap(split)`` makes one tuple per
word, ``map(toUpper, Fields("uppercased"))`` upper-cases it, ``filter(theFilter)`` keeps
``THE``: 2 + 2 + 0 in the first batch of a pass, 0 + 1 in the second. The peek prints
``input.getString(0)`` of each: ``THE``. ``persistentAggregate(Count())`` counts them.
"""

from __future__ import annotations

from typing import Any

import pytest
from starter_output import peek_sink, printed

from examples.storm_starter.trident_map_example import buildTopology
from trident_spark.drpc import LocalDRPC
from trident_spark.state import MemoryState

pytestmark = pytest.mark.integration

STORE = "storm-starter-trident-map-example"


@pytest.fixture(scope="module")
def served(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> Any:
    """The run, its counting done, still answering DRPC (the driver answers until stop())."""
    MemoryState.drop(STORE)
    drpc = LocalDRPC()
    topology = buildTopology(max_batches=4, state=MemoryState.opaque(name=STORE), drpc=drpc)
    peeked = peek_sink(topology)
    checkpoint = tmp_path_factory.mktemp("trident-map-example")
    handle = topology.run(checkpoint, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
        yield printed(peeked), drpc
    finally:
        handle.stop()
        drpc.shutdown()


@pytest.fixture(scope="module")
def run(served: Any) -> dict[int, list[tuple[Any, ...]]]:
    return served[0]


def test_peek_prints_THE_four_times_then_once_per_pass(run: dict[int, list[tuple[Any, ...]]]) -> None:
    assert run == {0: [("THE",)] * 4, 1: [("THE",)], 2: [("THE",)] * 4, 3: [("THE",)]}


def test_the_state_counts_THE_only(run: dict[int, list[tuple[Any, ...]]]) -> None:
    assert list(MemoryState.opaque(name=STORE).open().getTuples()) == [["THE", 10]]


def test_the_drpc_query_of_main_sums_to_ten(served: Any) -> None:
    # Java's main asks drpc.execute("words", "CAT THE DOG JUMPED"): MapGet per word, FilterNull, then
    # aggregate(Sum()) -> [[10]].
    found = MemoryState.opaque(name=STORE).open().multiGet([["CAT"], ["THE"], ["DOG"], ["JUMPED"]])
    assert found == [None, 10, None, None]
    _, drpc = served
    assert drpc.execute("words", "CAT THE DOG JUMPED") == "[[10]]"
    assert drpc.execute("words", "the") == "[[0]]"          # lower case: never counted
