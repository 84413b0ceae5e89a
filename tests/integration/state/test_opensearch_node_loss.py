"""An OpenSearch node SIGKILLed under a running word count: the counts end exact.

Service: a real 3-node OpenSearch 2.19 cluster per test
(:func:`trident_spark.local.opensearch.start_opensearch`, ``nodes=3``); the state index has 3
shards and 1 replica; Spark local[2]; the spout is a FeederBatchSpout fed while the stream runs.

The node killed is the one holding the primary of the commit record's shard (so the driver's
own conditional writes, as well as the tasks', meet a primary that moves to its replica), killed
after the stream has committed a few batches, while batches of 1,500 keys keep being written in
bulks of 150.

* ``wait_for_active_shards`` left to the cluster (1): the replicas on the other nodes are promoted
  and the stream goes on with the node still down.
* ``wait_for_active_shards="all"`` (and ``request_timeout=4``): writes to a shard that lost its
  replica wait 3 s for it, then fail (HTTP 503, ``unavailable_shards_exception``); the batch waits
  within its outage budget and runs again (its conditional writes that landed before answer 409 and
  are recomputed from what they wrote); the node is started again after 10 s, its copies
  recover, and the stream goes on.

Either way every count is exact, the commit record is complete, and no batch failed.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opensearch_cluster import call, counted, primary_node_of, word_count
from pyspark import cloudpickle
from state_backends import unique_name

from trident_spark.local.opensearch import OpenSearchHandle, OpenSearchNode, start_opensearch
from trident_spark.runtime.progress import BatchProgress
from trident_spark.state import ElasticsearchState, open_state
from trident_spark.state.commit_record import CommitRecord
from trident_spark.state.keys import COMMIT_RECORD_KEY, encode_key

pytestmark = [pytest.mark.integration, pytest.mark.faults]
cloudpickle.register_pickle_by_value(sys.modules[__name__])

VOCABULARY = [f"w{i}" for i in range(2000)]
BATCHES = 24
BATCH_WORDS = 1500


def _batch(i: int) -> list[list[str]]:
    """Batch ``i``: 1,500 words, a different stretch of the vocabulary each time."""
    return [[VOCABULARY[(i * 397 + j) % len(VOCABULARY)]] for j in range(BATCH_WORDS)]


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OpenSearchHandle]:
    with start_opensearch(nodes=3, log_dir=tmp_path / "opensearch-logs") as es:
        yield es


def _record(factory: ElasticsearchState) -> CommitRecord | None:
    log = factory.open_commit_log()
    try:
        return log.read()
    finally:
        log.close()


def _run_and_kill(cluster: OpenSearchHandle, spark, tmp_path: Path, factory: ElasticsearchState,
                  down_seconds: float | None) -> tuple[list[list[list[str]]], OpenSearchNode, CommitRecord,
                                                       list[BatchProgress]]:
    """Run the word count while feeding; once batch 2 is committed, kill the commit record's primary
    node while a batch writes (its writes begun, not complete), and with ``down_seconds`` start it
    again that long after: (batches fed, the node, the record as the node was killed, progress)."""
    topology, feeder = word_count(factory)
    fed: list[list[list[str]]] = []
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark,
                          outage_budget=180)

    def keep_feeding() -> None:
        for i in range(BATCHES):
            fed.append(_batch(i))
            feeder.feed(fed[-1])
            time.sleep(0.3)

    feeding = threading.Thread(target=keep_feeding)
    feeding.start()
    try:
        deadline = time.monotonic() + 300
        while not ((record := _record(factory)) is not None and (record.txid or 0) >= 2
                   and record.writing is not None):
            assert time.monotonic() < deadline, "no batch after the third began writing within 300 s"
            assert handle.exception() is None, handle.exception()
            time.sleep(0.05)
        doomed_name = primary_node_of(cluster.address, factory.index, encode_key(COMMIT_RECORD_KEY))
        [doomed] = [node for node in cluster.nodes if node.name == doomed_name]
        doomed.kill()                                  # SIGKILL while a batch writes, more batches to come
        if down_seconds is not None:
            time.sleep(down_seconds)
            doomed.start()
        feeding.join()
        handle.processAllAvailable()
        assert handle.exception() is None
        progress = list(handle.progress)
    finally:
        feeding.join()
        handle.stop()
    return fed, doomed, record, progress


def _assert_exact(factory: ElasticsearchState, fed: list[list[list[str]]]) -> None:
    assert len(fed) == BATCHES
    expected = counted(fed)
    keys = [[w] for w in VOCABULARY]
    assert open_state(factory.url).multiGet(keys) == [expected.get(w) for w in VOCABULARY]
    record = factory.open_commit_log().read()
    assert record is not None and record.writing is None and record.txid is not None


def test_a_primary_killed_mid_run_the_replicas_take_over_and_the_counts_end_exact(cluster, spark, tmp_path,
                                                                                   caplog):
    factory = ElasticsearchState.opaque(hosts=cluster.hosts, index=unique_name("loss"), shards=3, replicas=1,
                                        max_multi_put_batch_size=150)
    caplog.set_level(logging.WARNING, logger="elastic_transport")
    fed, doomed, killed, _ = _run_and_kill(cluster, spark, tmp_path, factory, down_seconds=None)
    assert not doomed.alive() and killed.writing is not None and killed.writing < BATCHES - 1
    _assert_exact(factory, fed)
    # The driver's client met the dead node and went on with the others.
    assert any(doomed.address in r.getMessage() and "has failed" in r.getMessage() for r in caplog.records)
    live = next(node.address for node in cluster.nodes if node.alive())
    # The commit record's shard has its primary on a node still alive: its replica was promoted.
    assert primary_node_of(live, factory.index, encode_key(COMMIT_RECORD_KEY)) != doomed.name
    health = call(live, "GET", f"/_cluster/health/{factory.index}")[1]
    assert (health["number_of_nodes"], health["active_primary_shards"]) == (2, 3)


def test_writes_waiting_for_every_copy_fail_the_batch_which_waits_for_the_node_and_ends_exact(
        cluster, spark, tmp_path, caplog):
    # The server waits 3 s for both copies (3/4 of request_timeout), then answers 503: the batch
    # waits within its outage budget and runs again until the node is back (10 s later).
    factory = ElasticsearchState.opaque(hosts=cluster.hosts, index=unique_name("all-copies"), shards=3,
                                        replicas=1, wait_for_active_shards="all", request_timeout=4.0,
                                        max_multi_put_batch_size=150)
    caplog.set_level(logging.WARNING, logger="trident_spark")
    fed, doomed, killed, progress = _run_and_kill(cluster, spark, tmp_path, factory, down_seconds=10.0)
    assert doomed.alive() and killed.writing is not None and killed.writing < BATCHES - 1
    _assert_exact(factory, fed)
    # The batch that met the lost copy failed and ran again (its attempts), once the node was back.
    assert any(batch.attempts > 1 for batch in progress), [(b.txid, b.attempts) for b in progress]
    messages = [r.getMessage() for r in caplog.records if r.name.startswith("trident_spark")]
    assert any("unavailable_shards_exception" in m and "Not enough active copies" in m for m in messages)
    assert any("answers again" in m for m in messages), messages
    status, health = call(cluster.address, "GET", f"/_cluster/health/{factory.index}?wait_for_status=green"
                                                  f"&timeout=60s")
    assert status == 200 and health["active_shards"] == 6, health
