"""A word count on Spark into RedisState(cluster=True) on a local 3-primary Redis Cluster: exact, with keys
on every primary, and exact through a reshard (redis-cli --cluster reshard) started mid-run."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis as redis_py
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.local import RedisClusterHandle, start_redis_cluster
from trident_spark.operation import BaseFilter
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import RedisState, StateType

pytestmark = pytest.mark.integration

# pytest imports this file from a path the executors do not have: ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

WORDS = [f"w{i}" for i in range(600)]


@pytest.fixture(scope="module")
def cluster() -> Iterator[RedisClusterHandle]:
    with start_redis_cluster(primaries=3) as started:
        yield started


def batches(count: int, per_batch: int) -> list[list[str]]:
    """``count`` batches of ``per_batch`` sentences of 6 words each, over 600 distinct words."""
    made, n = [], 0
    for _ in range(count):
        batch = []
        for _ in range(per_batch):
            batch.append(" ".join(WORDS[(n * 7 + j * 101) % len(WORDS)] for j in range(6)))
            n += 1
        made.append(batch)
    return made


def run_word_count(spark, tmp_path: Path, fed: list[list[str]], factory: RedisState,
                   marker: BaseFilter | None = None) -> None:
    spout = FeederBatchSpout(["sentence"], num_partitions=2, directory=str(tmp_path / "fed"))
    for batch in fed:
        spout.feed([[sentence] for sentence in batch])
    topology = TridentTopology()
    words = topology.newStream("cluster-words", spout).each(["sentence"], Split(), ["word"])
    if marker is not None:
        words = words.each(["word"], marker)
    words.groupBy(["word"]).persistentAggregate(factory, Count(), ["count"])
    with topology.run(tmp_path / "checkpoint", trigger="available_now", spark=spark) as handle:
        handle.awaitTermination(600)


def keys_per_primary(cluster: RedisClusterHandle, prefix: str) -> dict[str, int]:
    counts = {}
    for url in cluster.primaries:
        with redis_py.Redis.from_url(url) as client:
            counts[url] = sum(1 for _ in client.scan_iter(match=f"{prefix}:*", count=1000))
    return counts


def expected_counts(fed: list[list[str]]) -> Counter[str]:
    return Counter(word for batch in fed for sentence in batch for word in sentence.split()
                   if not word.startswith("__"))


@pytest.mark.parametrize("kind", [StateType.OPAQUE, StateType.TRANSACTIONAL])
def test_word_count_on_a_redis_cluster_is_exact_with_keys_on_every_primary(spark, cluster, tmp_path, kind):
    prefix = f"wc-{kind.value}-{os.getpid()}"
    factory = RedisState(url=cluster.url, key_prefix=prefix, cluster=True, state_type=kind)
    fed = batches(4, 50)
    run_word_count(spark, tmp_path, fed, factory)
    expected = expected_counts(fed)
    with factory.open() as state:
        assert dict(zip(WORDS, state.multiGet([[w] for w in WORDS]), strict=True)) == \
            {w: expected.get(w) for w in WORDS}
    per_node = keys_per_primary(cluster, prefix)
    assert all(count > 0 for count in per_node.values()), per_node
    assert sum(per_node.values()) == len(expected) + 1   # every word, and the commit record


class ReshardAt(BaseFilter):
    """Drops the marker words; ``__reshard__`` starts redis-cli --cluster reshard in the background
    (once), ``__resharded__`` waits until it has finished (the batches between write during it)."""

    def __init__(self, command: list[str], directory: str) -> None:
        self.command = command
        self.directory = directory

    def isKeep(self, tuple):
        word = tuple.getString(0)
        done = Path(self.directory) / "rc"
        if word == "__reshard__":
            try:
                fd = os.open(Path(self.directory) / "started", os.O_CREAT | os.O_EXCL | os.O_WRONLY)
            except FileExistsError:
                return False
            os.close(fd)
            log = Path(self.directory) / "reshard.log"
            script = " ".join(f"'{part}'" for part in self.command)
            subprocess.Popen(["sh", "-c", f"{script} > '{log}' 2>&1; echo $? > '{done}.tmp'; "
                                          f"mv '{done}.tmp' '{done}'"], start_new_session=True)
            return False
        if word == "__resharded__":
            deadline = time.monotonic() + 300
            while not done.exists() and time.monotonic() < deadline:
                time.sleep(0.2)
            return False
        return True


def _node_ids_by_slots(cluster: RedisClusterHandle) -> dict[str, int]:
    with redis_py.Redis.from_url(cluster.url) as client:
        ranges = client.execute_command("CLUSTER SLOTS")
    counts: dict[str, int] = {}
    for start, end, primary, *_ in ranges:
        counts[primary[2].decode()] = counts.get(primary[2].decode(), 0) + end - start + 1
    return counts


def test_word_count_stays_exact_through_a_reshard_mid_run(spark, cluster, tmp_path):
    prefix = f"wc-reshard-{os.getpid()}"
    factory = RedisState.opaque(url=cluster.url, key_prefix=prefix, cluster=True)
    before = _node_ids_by_slots(cluster)
    source, target = max(before, key=before.__getitem__), min(before, key=before.__getitem__)
    host_port = cluster.url.split("//")[1].split("/")[0]
    command = ["redis-cli", "--cluster", "reshard", host_port, "--cluster-from", source, "--cluster-to",
               target, "--cluster-slots", "2000", "--cluster-yes", "--cluster-pipeline", "10"]
    control = tmp_path / "reshard"
    control.mkdir()
    fed = batches(8, 40)
    fed[1].append("__reshard__")      # batch 1 starts the reshard before it writes
    fed[6].append("__resharded__")    # batch 6 waits for its end: batches 1-6 write while slots move
    run_word_count(spark, tmp_path, fed, factory, marker=ReshardAt(command, str(control)))
    assert (control / "rc").read_text().strip() == "0", (control / "reshard.log").read_text()[-2000:]
    after = _node_ids_by_slots(cluster)
    assert after[source] == before[source] - 2000 and after[target] == before[target] + 2000
    expected = expected_counts(fed)
    with factory.open() as state:
        assert dict(zip(WORDS, state.multiGet([[w] for w in WORDS]), strict=True)) == \
            {w: expected.get(w) for w in WORDS}
    assert all(count > 0 for count in keys_per_primary(cluster, prefix).values())
