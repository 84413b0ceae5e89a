"""storm-starter's TridentWordCount on Spark: the counts Trident would hold, and the answers of
Java main's DRPC request ``drpc.execute("words", "cat the dog jumped")``.

The expected values follow the Java: ``FixedBatchSpout(Fields("sentence"), 3, five sentences)``
cycling emits sentences 0-2, then 3-4 (a batch never wraps), then again; ``Split`` emits each
word of ``sentence.split(" ")``; ``persistentAggregate(..., Count(), ...)`` counts per word.
Four batches are two passes, so every count of one pass doubled. The DRPC answer is asked of
a run that keeps counting (a processing-time trigger, as Java's ``main`` runs): each count it
gives lies between the state's count before the request and after the answer.
"""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from examples.storm_starter.trident_word_count import buildTopology
from trident_spark.drpc import LocalDRPC
from trident_spark.state import MemoryState

pytestmark = pytest.mark.integration

STORE = "storm-starter-trident-word-count"

# One pass over the five sentences: "the" 2 + 2 + 1, "to" 1 + 2, "and" 1 + 1, "be" 2, the rest once.
ONE_PASS = {"the": 5, "to": 3, "and": 2, "be": 2,
            "cow": 1, "jumped": 1, "over": 1, "moon": 1,
            "man": 1, "went": 1, "store": 1, "bought": 1, "some": 1, "candy": 1,
            "four": 1, "score": 1, "seven": 1, "years": 1, "ago": 1,
            "how": 1, "many": 1, "apples": 1, "can": 1, "you": 1, "eat": 1,
            "or": 1, "not": 1, "person": 1}


@pytest.fixture(scope="module")
def counts(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, int]:
    MemoryState.drop(STORE)
    state = MemoryState.opaque(name=STORE)
    with LocalDRPC() as drpc:  # the availableNow run's DRPC stream finds no request and ends
        topology = buildTopology(max_batches=4, state=state, drpc=drpc)
        handle = topology.run(tmp_path_factory.mktemp("trident-word-count"), trigger="available_now",
                              spark=spark)
        try:
            assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
        finally:
            handle.stop()
    assert [p.txid for p in handle.progress if p.stream == "spout1"] == [0, 1, 2, 3]
    return {word: count for word, count in state.open().getTuples()}


def test_every_word_is_counted_twice_over_in_two_passes(counts: dict[str, int]) -> None:
    assert counts == {word: 2 * n for word, n in ONE_PASS.items()}


def test_the_drpc_query_of_main_would_read_the_and_jumped(counts: dict[str, int]) -> None:
    # Java's main asks drpc.execute("words", "cat the dog jumped"): MapGet reads each word's count,
    # FilterNull drops cat and dog (never counted).
    state = MemoryState.opaque(name=STORE).open()
    assert state.multiGet([["cat"], ["the"], ["dog"], ["jumped"]]) == [None, 10, None, 2]


def test_main_s_drpc_request_gets_the_counts_of_the_and_jumped(spark: Any, tmp_path: Any) -> None:
    store = STORE + "-drpc"
    MemoryState.drop(store)
    state = MemoryState.opaque(name=store)
    with LocalDRPC() as drpc:
        handle = buildTopology(state=state, drpc=drpc).run(tmp_path / "ckpt", spark=spark)
        try:
            deadline = time.monotonic() + 600
            while not any(p.stream == "spout1" for p in handle.progress):  # a first batch counted
                assert handle.exception() is None and time.monotonic() < deadline
                time.sleep(0.2)
            before = state.open().multiGet([["the"], ["jumped"]])
            answer = json.loads(drpc.execute("words", "cat the dog jumped"))
            after = state.open().multiGet([["the"], ["jumped"]])
        finally:
            handle.stop()
    assert sorted(word for word, _ in answer) == ["jumped", "the"]
    counts = dict(answer)
    for word, low, high in zip(["the", "jumped"], before, after, strict=True):
        assert (low or 0) <= counts[word] <= high
