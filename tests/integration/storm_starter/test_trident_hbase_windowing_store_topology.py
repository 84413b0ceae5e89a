"""storm-starter's TridentHBaseWindowingStoreTopology on Spark, on a SQLite windows store.

The sentences of the in-memory example (22 words, then 14, cycling), in tumbling windows of 10
words (the test's size; Java's is 1000) over four batches (72 words): seven windows of 10 words,
each logged in the batch whose word closes it; the last two words wait in the store's open window.
"""

from __future__ import annotations

from typing import Any

import pytest
from starter_output import peek_sink, printed

from examples.storm_starter.trident_hbase_windowing_store_topology import buildTopology
from trident_spark.windowing import SqliteWindowsStoreFactory

pytestmark = pytest.mark.integration


def test_tumbling_windows_of_words_on_a_durable_store(spark: Any, tmp_path: Any) -> None:
    store = SqliteWindowsStoreFactory(path=str(tmp_path / "window-state.db"), table="window_state")
    topology = buildTopology(store, window_count=10, max_batches=4)
    peeked = peek_sink(topology)
    handle = topology.run(tmp_path / "checkpoint", trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    # closing words 10, 20 (batch 0: words 1-22), 30 (batch 1: 23-36), 40, 50 (batch 2), 60, 70 (batch 3)
    assert {txid: rows for txid, rows in printed(peeked).items() if rows} == {
        0: [(10,), (10,)], 1: [(10,)], 2: [(10,), (10,)], 3: [(10,), (10,)]}
    opened = store.create({})
    try:
        open_tuples = [key for key in opened.getAllKeys() if "/t/" in key]
        # batch 3's words (its last 2 are the open window's), and batch 2's, which the state batch 3
        # started from still holds (a replay of batch 3 would need them; batch 4 removes them)
        assert sorted(len(opened.get(key)) for key in open_tuples) == [14, 22]
    finally:
        opened.shutdown()
