"""storm-starter's TridentWindowingInmemoryStoreTopology on Spark: the counts its peek logs.

``FixedBatchSpout(Fields("sentence"), 3, five sentences)`` cycling emits sentences 0-2 (22
words), then 3-4 (14 words), then again; a sliding count window counts its words with
``CountAsAggregator``. With ``SlidingCountWindow.of(20, 8)`` over four batches (72 words), a
window closes after every 8th word: 8 and 16 words in the first batch (the first windows are
short: the last 20 words or fewer), then 20 each.
"""

from __future__ import annotations

from typing import Any

import pytest
from starter_output import peek_sink, printed

from examples.storm_starter.trident_windowing_inmemory_store_topology import buildTopology
from trident_spark.windowing import InMemoryWindowsStoreFactory, SlidingCountWindow

pytestmark = pytest.mark.integration


def test_each_window_count_is_logged_in_the_batch_whose_word_closes_it(spark: Any, tmp_path: Any) -> None:
    topology = buildTopology(InMemoryWindowsStoreFactory(), SlidingCountWindow.of(20, 8), max_batches=4)
    peeked = peek_sink(topology)
    handle = topology.run(tmp_path, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    words = [22, 14, 22, 14]  # words per batch
    ends = [sum(words[:i + 1]) for i in range(len(words))]
    expected: dict[int, list[tuple[Any, ...]]] = {}
    for closed in range(8, ends[-1] + 1, 8):
        batch = next(i for i, end in enumerate(ends) if closed <= end)
        expected.setdefault(batch, []).append((min(20, closed),))
    assert expected == {0: [(8,), (16,)], 1: [(20,), (20,)], 2: [(20,), (20,), (20,)], 3: [(20,), (20,)]}
    assert {txid: rows for txid, rows in printed(peeked).items() if rows} == expected
