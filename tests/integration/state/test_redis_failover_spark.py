"""A word count on Spark into RedisState(cluster=True, wait_replicas=1) on a local Redis Cluster with
replicas, a primary SIGKILLed mid-run: its replica takes over, the batch is run again within the outage
budget, and the final counts are exact with keys on every primary."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_py
from pyspark import cloudpickle
from test_redis_cluster_spark import WORDS, batches, expected_counts

from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.local import RedisClusterHandle, start_redis_cluster
from trident_spark.operation import BaseFilter
from trident_spark.runtime.progress import BatchProgress
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import RedisState, StateType

pytestmark = [pytest.mark.integration, pytest.mark.faults]

# pytest imports this file from a path the executors do not have: ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


@pytest.fixture
def cluster() -> Iterator[RedisClusterHandle]:
    """3 primaries with 2 replicas each: after one failover the new primary still has a replica, so a
    WAIT for 1 can be met without bringing the dead node back."""
    with start_redis_cluster(primaries=3, replicas=2, node_timeout=2000) as started:
        yield started


class KillAt(BaseFilter):
    """Drops the marker words; ``__kill__`` SIGKILLs the process ``pid`` (once: a file marks it done)."""

    def __init__(self, pid: int, directory: str) -> None:
        self.pid = pid
        self.directory = directory

    def isKeep(self, tuple):
        word = tuple.getString(0)
        if word == "__kill__":
            try:
                fd = os.open(Path(self.directory) / "killed", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return False
            os.close(fd)
            os.kill(self.pid, signal.SIGKILL)
            return False
        return True


def run_word_count(spark, tmp_path: Path, fed: list[list[str]], factory: RedisState,
                   marker: BaseFilter) -> list[BatchProgress]:
    """test_redis_cluster_spark's word count, answering the run's progress (attempts per batch)."""
    spout = FeederBatchSpout(["sentence"], num_partitions=2, directory=str(tmp_path / "fed"))
    for batch in fed:
        spout.feed([[sentence] for sentence in batch])
    topology = TridentTopology()
    (topology.newStream("failover-words", spout).each(["sentence"], Split(), ["word"]).each(["word"], marker)
     .groupBy(["word"]).persistentAggregate(factory, Count(), ["count"]))
    with topology.run(tmp_path / "checkpoint", trigger="available_now", spark=spark) as handle:
        handle.awaitTermination(600)
    return list(handle.progress)


def keys_per_node(urls: list[str], prefix: str) -> dict[str, int]:
    counts = {}
    for url in urls:
        with redis_py.Redis.from_url(url) as client:
            counts[url] = sum(1 for _ in client.scan_iter(match=f"{prefix}:*", count=1000))
    return counts


@pytest.mark.parametrize("kind", [StateType.OPAQUE, StateType.TRANSACTIONAL])
def test_word_count_with_wait_stays_exact_through_a_primary_killed_mid_run(spark, cluster, tmp_path, kind):
    prefix = f"wc-failover-{kind.value}-{os.getpid()}"
    factory = RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind, wait_replicas=1,
                         connect_timeout=1.0)
    victim = cluster.primaries[1]
    control = tmp_path / "kill"
    control.mkdir()
    fed = batches(6, 40)
    fed[2].append("__kill__")     # batch 2 kills a primary while it reads, before it writes
    killer = KillAt(cluster.processes[victim].pid, str(control))
    progress = run_word_count(spark, tmp_path, fed, factory, killer)
    assert (control / "killed").exists() and not cluster.processes[victim].alive()
    attempts = {batch.txid: batch.attempts for batch in progress}
    assert sorted(attempts) == list(range(6))
    assert attempts[0] == attempts[1] == 1 and attempts[2] > 1, attempts   # batch 2 waited for the failover

    roles = cluster.roles()
    primaries = sorted(url for url, of in roles.items() if of is None)
    assert len(primaries) == 3 and victim not in primaries and victim not in roles
    expected = expected_counts(fed)
    with factory.open() as state:
        assert dict(zip(WORDS, state.multiGet([[w] for w in WORDS]), strict=True)) == \
            {w: expected.get(w) for w in WORDS}
    per_node = keys_per_node(primaries, prefix)
    assert all(count > 0 for count in per_node.values()), per_node
    assert sum(per_node.values()) == len(expected) + 1   # every word, and the commit record
