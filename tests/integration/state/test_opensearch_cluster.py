"""ElasticsearchState and the windows store on a 3-node OpenSearch cluster: 3 shards, 1 replica each.

Service: a real 3-node OpenSearch 2.19 cluster of this module's own
(:func:`trident_spark.local.opensearch.start_opensearch`, ``nodes=3``, about 10 s to start), every
node given to the state as a host. The node-loss scenarios (a node killed mid-run) are in
test_opensearch_node_loss.py (``faults``).
"""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opensearch_cluster import call, counted, index_settings, shard_copies, word_count
from pyspark import cloudpickle
from state_backends import add, unique_name

from trident_spark import TridentTopology
from trident_spark.local.opensearch import OpenSearchHandle, start_opensearch
from trident_spark.operation import ReducerAggregator
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import ElasticsearchState, StateConfigError, open_state
from trident_spark.windowing import ElasticsearchWindowsStoreFactory

pytestmark = [pytest.mark.integration, pytest.mark.faults]  # a 3-node cluster: in make test-faults
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenSearchHandle]:
    with start_opensearch(nodes=3, log_dir=tmp_path_factory.mktemp("opensearch-3")) as es:
        yield es


def test_a_state_index_of_three_shards_and_one_replica_spreads_over_every_node(cluster):
    index = unique_name("spread")
    spec = ElasticsearchState.opaque(hosts=cluster.hosts, index=index, shards=3, replicas=1, cache_size=0)
    words = [[f"w{i}"] for i in range(300)]
    with spec.open() as state:
        state.multiUpdate(0, words, [add(1)] * len(words))
        state.multiUpdate(1, words[:100], [add(2)] * 100)
    assert index_settings(cluster.address, index) == (3, 1)
    health = f"/_cluster/health/{index}?wait_for_status=green&timeout=60s"
    assert call(cluster.address, "GET", health)[0] == 200
    copies = shard_copies(cluster.address, index)
    primaries = {c["shard"]: c for c in copies if c["prirep"] == "p"}
    replicas = {c["shard"]: c for c in copies if c["prirep"] == "r"}
    assert sorted(primaries) == sorted(replicas) == [0, 1, 2]
    # Routing is the cluster's (by _id): every shard holds keys, and its replica the same ones.
    assert all(primaries[s]["docs"] > 0 and replicas[s]["docs"] == primaries[s]["docs"] for s in primaries)
    assert sum(c["docs"] for c in primaries.values()) == 300
    assert {c["node"] for c in copies} == {"node-0", "node-1", "node-2"}
    # Each node answers every key (it routes reads to the shard copies).
    for host in cluster.hosts:
        one_node = open_state(spec.with_settings(hosts=[host]).url)
        assert one_node.multiGet(words) == [3] * 100 + [1] * 200


def test_an_existing_index_with_other_shards_is_refused_saying_what_to_do(cluster):
    index = unique_name("other")
    assert call(cluster.address, "PUT", f"/{index}", {"settings": {"number_of_shards": 1,
                                                                   "number_of_replicas": 1}})[0] == 200
    spec = ElasticsearchState.opaque(hosts=cluster.hosts, index=index, shards=3, replicas=1)
    with pytest.raises(StateConfigError) as caught, spec.open() as state:
        state.multiGet([["cat"]])
    hosts = ",".join(cluster.hosts)
    assert str(caught.value) == (
        f"{hosts}/{index}: index {index!r} exists with 1 shard(s) and 1 replica(s), but the state asks for "
        f"shards=3: the shard count is fixed when an index is created, so write to a new index (index=...), "
        f"or reindex into one made with 3 shards (POST _reindex), or leave shards= out to use {index!r} as "
        f"it is")
    # Without shards= the index is used as it is; with the settings it has, too.
    for settings in ({}, {"shards": 1, "replicas": 1}):
        with ElasticsearchState.opaque(hosts=cluster.hosts, index=index, **settings).open() as state:
            state.multiUpdate(0, [["cat"]], [add(1)])
    assert open_state(f"es://{hosts.replace('http://', '')}/{index}").multiGet([["cat"]]) == [1]
    assert index_settings(cluster.address, index) == (1, 1)


def test_a_word_count_on_spark_is_exact_on_three_shards_with_every_write_on_both_copies(cluster, spark,
                                                                                        tmp_path: Path):
    index = unique_name("wc")
    factory = ElasticsearchState.opaque(hosts=cluster.hosts, index=index, fields=["word"], shards=3,
                                        replicas=1, wait_for_active_shards="all")
    topology, feeder = word_count(factory)
    vocabulary = [f"w{i}" for i in range(60)]
    fed = [[[vocabulary[(b * 7 + j) % len(vocabulary)]] for j in range(40 + b)] for b in range(4)]
    for batch in fed:
        feeder.feed(batch)
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    assert handle.exception() is None
    expected = counted(fed)
    keys = [[w] for w in vocabulary]
    assert open_state(factory.url).multiGet(keys) == [expected.get(w) for w in vocabulary]
    record = factory.open_commit_log().read()
    assert record is not None and (record.txid, record.writing) == (3, None)
    assert index_settings(cluster.address, index) == (3, 1)
    primaries = [c for c in shard_copies(cluster.address, index) if c["prirep"] == "p"]
    assert len(primaries) == 3 and all(c["docs"] > 0 for c in primaries)


class Gather(ReducerAggregator):
    def init(self) -> list[int]:
        return []

    def reduce(self, curr: list[int], tuple: Any) -> list[int]:
        return [*curr, tuple[0]]


def test_the_windows_store_on_three_shards_and_one_replica(cluster, spark, tmp_path: Path):
    index = unique_name("windows")
    factory = ElasticsearchWindowsStoreFactory(hosts=cluster.hosts, index=index, shards=3, replicas=1)
    spout = FeederBatchSpout(["n"], num_partitions=1)
    topology = TridentTopology()
    sink = topology.newStream("numbers", spout).tumblingWindow(3, factory, ["n"], Gather(), ["w"]).collect()
    for batch in ([0, 1], [2, 3, 4, 5], [6, 7, 8]):
        spout.feed([[n] for n in batch])
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    closed = {txid: [t["w"] for t in tuples] for txid, tuples in sink.batches.items() if tuples}
    assert closed == {1: [[0, 1, 2], [3, 4, 5]], 2: [[6, 7, 8]]}
    assert index_settings(cluster.address, index) == (3, 1)
    store = factory.create({})
    try:
        assert store.get("numbers/1/0/head") == 2
    finally:
        store.shutdown()


def test_a_state_opened_while_replicas_recover_goes_on_with_its_primaries(cluster):
    # Replicas made slow to recover (1 kB/s), as on a node back after a loss: the first use's wait
    # for no initializing shard ends (request_timeout, 5 s) with every primary active, so the
    # state reads and writes (it used to fail "primary shards not active").
    index = unique_name("recovering")
    seed = ElasticsearchState.opaque(hosts=cluster.hosts, index=index, shards=1, replicas=0, cache_size=0)
    words = [[f"word-{i:05d}"] for i in range(3000)]
    with seed.open() as state:
        state.multiUpdate(0, words, [add(1)] * len(words))
    assert call(cluster.address, "POST", f"/{index}/_flush")[0] == 200
    throttle = {"transient": {"indices.recovery.max_bytes_per_sec": "1kb"}}
    assert call(cluster.address, "PUT", "/_cluster/settings", throttle)[0] == 200
    try:
        more = {"index": {"number_of_replicas": 2}}
        assert call(cluster.address, "PUT", f"/{index}/_settings", more)[0] == 200
        _wait_for_recovering_replicas(cluster.address, index, 2)
        spec = seed.with_settings(replicas=None, request_timeout=5.0, connect_timeout=5.0)
        with spec.open() as state:
            assert state.multiGet(words[:3]) == [1, 1, 1]
            state.multiUpdate(1, words[:3], [add(1)] * 3)
        assert open_state(spec.url).multiGet(words[:4]) == [2, 2, 2, 1]
        health = call(cluster.address, "GET", f"/_cluster/health/{index}")[1]
        assert (health["active_primary_shards"], health["initializing_shards"]) == (1, 2), health
    finally:
        reset = {"transient": {"indices.recovery.max_bytes_per_sec": None}}
        assert call(cluster.address, "PUT", "/_cluster/settings", reset)[0] == 200
        call(cluster.address, "DELETE", f"/{index}")


def _wait_for_recovering_replicas(host: str, index: str, count: int) -> None:
    """Wait until ``count`` replicas of the index are being recovered (allocated, INITIALIZING)."""
    deadline = time.monotonic() + 30
    while True:
        copies = call(host, "GET", f"/_cat/shards/{index}?format=json&h=prirep,state")[1]
        if sum(c["prirep"] == "r" and c["state"] == "INITIALIZING" for c in copies) == count:
            return
        assert time.monotonic() < deadline, copies
        time.sleep(0.1)
