"""OpenSearch restarted with its data under a running word count: the counts end exact.

Service: a real OpenSearch node of its own per test (:func:`trident_spark.local.opensearch.start_opensearch`,
data on disk), so restarting it disturbs no other test; the spout is a FeederBatchSpout.

Restarted with its data (``handle.restart()``: a clean close, the same port and data directory)
while batches keep coming: the batches that meet the node down wait (the stream's outage
budget) and go on when it answers; every count is exact and no batch is left half written.

Restarted empty (killed, its data directory wiped) it stops the stream with StateLostError:
``test_state_lost.py``.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.local.opensearch import OpenSearchHandle, start_opensearch
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import ElasticsearchState, open_state

pytestmark = [pytest.mark.integration, pytest.mark.faults]
cloudpickle.register_pickle_by_value(sys.modules[__name__])

WORDS = ["cat", "dog", "eel", "fox", "gnu"]


def _batch(i: int) -> list[list[str]]:
    """Batch ``i``: a few words, a different mix each time."""
    return [[WORDS[(i + j) % len(WORDS)]] for j in range(1 + i % 4)]


def _counts(batches: list[list[list[str]]]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for batch in batches:
        for (word,) in batch:
            counts[word] = counts.get(word, 0) + 1
    return counts


@pytest.fixture
def node(tmp_path: Path) -> Iterator[OpenSearchHandle]:
    with start_opensearch(log_dir=tmp_path / "opensearch-logs") as es:
        yield es


def _word_count(factory: ElasticsearchState) -> tuple[TridentTopology, FeederBatchSpout]:
    feeder = FeederBatchSpout(["word"])
    topology = TridentTopology()
    (topology.newStream("words", feeder).groupBy(["word"])
     .persistentAggregate(factory, Count(), ["count"]))
    return topology, feeder


def test_a_restart_with_its_data_mid_stream_leaves_the_counts_exact(spark, node, tmp_path, caplog):
    factory = ElasticsearchState.opaque(hosts=node.hosts, index="restart-wc")
    topology, feeder = _word_count(factory)
    fed: list[list[list[str]]] = []
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark,
                          outage_budget=120)
    try:
        for i in range(3):
            fed.append(_batch(i))
            feeder.feed(fed[-1])
        handle.processAllAvailable()
        assert open_state(factory.url).multiGet([[w] for w in WORDS]) == [
            _counts(fed).get(w) for w in WORDS]

        def keep_feeding() -> None:
            for i in range(3, 33):
                fed.append(_batch(i))
                feeder.feed(fed[-1])
                time.sleep(0.1)

        caplog.set_level(logging.WARNING, logger="trident_spark")
        feeding = threading.Thread(target=keep_feeding)
        feeding.start()
        time.sleep(0.5)
        node.restart()                                   # while batches come and go
        feeding.join()
        handle.processAllAvailable()
        assert handle.exception() is None
    finally:
        handle.stop()

    assert len(fed) == 33
    expected = _counts(fed)
    assert open_state(factory.url).multiGet([[w] for w in WORDS]) == [expected.get(w) for w in WORDS]
    record = factory.open_commit_log().read()
    assert record is not None and record.writing is None
    # A batch met the node down, waited, and went on when it answered again.
    messages = [record.getMessage() for record in caplog.records]
    waits = [message for message in messages if "answers again" in message]
    assert waits and all(node.address in message for message in waits), messages
