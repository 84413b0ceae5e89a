"""One small window scenario on every durable windows store: SQLite, Redis, Elasticsearch (an OpenSearch
node) and PostgreSQL, each the real service the suite runs (the in-memory store: test_windows_on_spark).

Each store gives the same windows, and holds afterwards only what a replay of the next batch
could need (the last two states, the head, the tuples of open windows): what no replay can
need was removed.
"""

from __future__ import annotations

import sys
import uuid
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.operation import ReducerAggregator
from trident_spark.spout import FeederBatchSpout
from trident_spark.windowing import (
    ElasticsearchWindowsStoreFactory,
    PostgresWindowsStoreFactory,
    RedisWindowsStoreFactory,
    SqliteWindowsStoreFactory,
)

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

BATCHES = [[0, 1], [2, 3, 4, 5], [6]]


class Gather(ReducerAggregator):
    def init(self) -> list[int]:
        return []

    def reduce(self, curr: list[int], tuple: Any) -> list[int]:
        return [*curr, tuple[0]]


def make_factory(kind: str, request: pytest.FixtureRequest, tmp_path: Any) -> Any:
    name = f"w{uuid.uuid4().hex[:8]}"
    if kind == "sqlite":
        return SqliteWindowsStoreFactory(path=str(tmp_path / "windows.db"), table=name)
    if kind == "redis":
        return RedisWindowsStoreFactory(url=request.getfixturevalue("redis_url"), key_prefix=name)
    if kind == "elasticsearch":
        hosts = [request.getfixturevalue("elasticsearch_url")]
        return ElasticsearchWindowsStoreFactory(hosts=hosts, index=name)
    return PostgresWindowsStoreFactory(dsn=request.getfixturevalue("postgres_dsn"), table=name)


@pytest.mark.parametrize("kind", ["sqlite", "redis", "elasticsearch", "postgres"])
def test_windows_on_each_store(kind: str, spark: Any, request: pytest.FixtureRequest, tmp_path: Any) -> None:
    factory = make_factory(kind, request, tmp_path)
    spout = FeederBatchSpout(["n"], num_partitions=1)
    topology = TridentTopology()
    sink = topology.newStream("numbers", spout).tumblingWindow(3, factory, ["n"], Gather(), ["w"]).collect()
    for batch in BATCHES:
        spout.feed([[n] for n in batch])
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    closed = {txid: [t["w"] for t in tuples] for txid, tuples in sink.batches.items() if tuples}
    assert closed == {1: [[0, 1, 2], [3, 4, 5]]}
    store = factory.create({})
    try:
        keys = sorted(store.getAllKeys())
        # the window node is the query's node 1, partition 0: batch 2's state and its base, the head,
        # and batch 2's tuple [6] of the open window (batch 0's were dropped by batch 1, removed at 2)
        assert keys == ["numbers/1/0/head", "numbers/1/0/s/1", "numbers/1/0/s/2", "numbers/1/0/t/2"]
        assert store.get("numbers/1/0/t/2")[0][1] == [6]
        assert store.get("numbers/1/0/head") == 2
    finally:
        store.shutdown()
