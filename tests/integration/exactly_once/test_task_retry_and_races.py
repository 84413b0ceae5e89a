"""Spark task retries and stale per-worker caches on Spark: the state still ends exact.

(a) A state-writing task fails AFTER it wrote (all of its keys, or half of
    them) and Spark retries it (``local[2,3]``, in a driver program of its
    own): transactional keys already at the batch's txid are skipped,
    opaque keys recomputed from ``prev``.
(b) Each word's tuples go, batch after batch, to a partition chosen at
    random for that word and batch, so a key is written by one Python worker,
    then another, then the first again with its cache (cache_size > 0) holding
    a stale value: the conditional write loses, the key is re-read and
    recomputed (``write_conflicts`` in the batch progress), and counts stay exact.
    (The same race between two opened states, without Spark, is in
    tests/integration/state/state_races.py.)
(c) The store is emptied between two attempts of a batch (``accept_state_loss``): the
    retry finds a new store generation and drops the cache that said "already applied",
    so no key of the batch is skipped on its word (without the guard: lost counts).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from exactly_once_support import (
    Expected,
    assert_exact,
    batch_sentences,
    committed,
    drop_state,
    load_topic,
    make_sentences,
    unique_tag,
)
from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Split
from trident_spark.operation import BaseFunction, StateUpdater
from trident_spark.spout import KafkaSpout
from trident_spark.state import PostgresState, RedisState, SqliteState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])  # executors cannot import test modules

REPO = Path(__file__).resolve().parents[3]
DRIVER = Path(__file__).with_name("retry_driver.py")


def _factories(tag: str, workdir: Path, redis_url: str, postgres_dsn: str, prefix: str) -> dict[str, Any]:
    return {
        f"{prefix}-sqlite-transactional": SqliteState.transactional(path=str(workdir / "state.db"),
                                                                    table=f"{prefix}_tx"),
        f"{prefix}-sqlite-opaque": SqliteState.opaque(path=str(workdir / "state.db"),
                                                      table=f"{prefix}_opaque"),
        f"{prefix}-redis-transactional": RedisState.transactional(url=redis_url,
                                                                  key_prefix=f"eo-{tag}-{prefix}-tx"),
        f"{prefix}-redis-opaque": RedisState.opaque(url=redis_url, key_prefix=f"eo-{tag}-{prefix}-opaque"),
        f"{prefix}-postgres-transactional": PostgresState.transactional(dsn=postgres_dsn,
                                                                        table=f"eo_{tag}_{prefix}_tx"),
        f"{prefix}-postgres-opaque": PostgresState.opaque(dsn=postgres_dsn,
                                                          table=f"eo_{tag}_{prefix}_opaque"),
    }


# -- (a) a Spark task retry after the task wrote ---------------------------------------------------------

FAIL_BATCH = 1


@pytest.mark.faults
def test_a_task_that_fails_after_writing_is_retried_and_the_state_stays_exact(kafka_bootstrap, redis_url,
                                                                              postgres_dsn, tmp_path):
    tag = unique_tag()
    topic = f"eo-retry-{tag}"
    records = load_topic(kafka_bootstrap, topic, make_sentences(1200, seed=7, every_word_each=300),
                         partitions=4)
    states = {**_factories(tag, tmp_path, redis_url, postgres_dsn, "aggregate"),
              **_factories(tag, tmp_path, redis_url, postgres_dsn, "persist")}
    out, checkpoint = tmp_path / "out", tmp_path / "checkpoint"
    out.mkdir()
    config = tmp_path / "config.json"
    config.write_text(json.dumps({
        "bootstrap": kafka_bootstrap, "topic": topic, "checkpoint": str(checkpoint), "out": str(out),
        "fail_batch": FAIL_BATCH, "max_offsets_per_trigger": 300,
        "states": {name: factory.url for name, factory in states.items()}}))
    try:
        done = subprocess.run([sys.executable, str(DRIVER), str(config)], cwd=REPO, capture_output=True,
                              text=True, timeout=400,
                              # Spark's whole log on stderr (run()'s session keeps task-failure dumps out
                              # of the console by default): the failed attempts are checked in it below.
                              env={**os.environ, "PYTHONPATH": str(REPO), "TRIDENT_SPARK_SPARK_LOGS": "full"})
        assert done.returncode == 0, done.stderr[-5000:]

        # Each failing operation failed once, in its first attempt, and the retry (attempt 1) ran it again.
        for name in states:
            assert (out / f"failed-{name}").read_text() == "0", name
            assert (out / f"seen-{name}-{FAIL_BATCH}-0-1").exists(), name
            assert not (out / f"seen-{name}-{FAIL_BATCH}-0-2").exists(), name
        assert "injected failure" in done.stderr   # Spark logged the failed attempts

        query_dir = checkpoint / "sentences"
        batches = batch_sentences(query_dir, records)
        assert len(batches) == 4 and committed(query_dir) == [0, 1, 2, 3]
        expected = Expected.from_batches(batches)
        for name, factory in states.items():
            assert_exact(name, factory, expected)

        def seen(name: str, attempt: int) -> list[str]:
            return (out / f"seen-{name}-{FAIL_BATCH}-0-{attempt}").read_text().split()

        # The retry of the aggregate's task saw all the partition's keys; the first attempt died at its
        # first tuple, after the persist had written them all.
        aggregate_keys = seen("aggregate-sqlite-transactional", 1)
        assert len(seen("aggregate-sqlite-transactional", 0)) == 1 and len(aggregate_keys) > 1
        # The partitionPersist's first attempt wrote the first half of its keys, the retry all of them.
        half = seen("persist-redis-transactional", 0)
        assert 0 < len(half) < len(seen("persist-redis-transactional", 1))
        assert seen("persist-redis-transactional", 1)[:len(half)] == half

        # What the retries skipped, exactly: the transactional keys the failed attempts had written.
        progress = {}
        for line in (query_dir / "trident-progress.jsonl").read_text().splitlines():
            entry = json.loads(line)
            progress[entry["txid"]] = entry["state"]
        # SQLite, Redis and PostgreSQL each
        written_by_failed_attempts = 3 * len(aggregate_keys) + 3 * len(half)
        assert progress[FAIL_BATCH]["keys_skipped"] == written_by_failed_attempts, progress[FAIL_BATCH]
        assert all(progress[b]["keys_skipped"] == 0 for b in progress if b != FAIL_BATCH), progress
    finally:
        for factory in states.values():
            drop_state(factory)


# -- (b) stale per-worker caches on Spark ----------------------------------------------------------------

class RandomSlot(BaseFunction):
    """Appends the slot of this word in this batch: a partition chosen per (word, txid)."""

    def __init__(self, slots: list[str]) -> None:
        self.slots = slots

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context  # prepared once per run: its txid follows the batch being run

    def execute(self, tuple: Any, collector: Any) -> None:
        word = tuple.getString(0)
        # A real hash: CRC32 is linear, its parity for "word/0", "word/1", "word/2" is the same
        digest = hashlib.sha256(f"{word}/{self.context.txid}".encode()).digest()
        collector.emit([self.slots[digest[0] % len(self.slots)]])


class CountWords(StateUpdater):
    """One multiUpdate per partition: each word's count in the partition added to its stored count."""

    def updateState(self, state: Any, tuples: list[Any], collector: Any) -> None:
        counts = Counter(t["word"] for t in tuples)
        words = sorted(counts)
        new = state.multiUpdate([[w] for w in words],
                                [lambda old, n=counts[w]: (old or 0) + n for w in words])
        for word, value in zip(words, new, strict=True):
            collector.emit([word, value])


def slots_in_different_partitions(spark: Any) -> list[str]:
    """Two slot values that Spark's hash partitioning into 2 partitions puts apart."""
    from pyspark.sql import functions as F

    partitions = int(spark.conf.get("spark.sql.shuffle.partitions"))
    assert partitions == 2
    rows = (spark.createDataFrame([(f"s{i}",) for i in range(16)], "slot string")
            .repartition(partitions, "slot").select("slot", F.spark_partition_id().alias("p")).collect())
    first = {}
    for row in rows:
        first.setdefault(row["p"], row["slot"])
    assert len(first) == 2
    return [first[0], first[1]]


def test_keys_moving_between_workers_with_stale_caches_end_exact(spark, kafka_bootstrap, redis_url,
                                                                 postgres_dsn, tmp_path):
    tag = unique_tag()
    topic = f"eo-moves-{tag}"
    records = load_topic(kafka_bootstrap, topic, make_sentences(1800, seed=11, every_word_each=300),
                         partitions=4)
    states = {
        "sqlite-opaque": SqliteState.opaque(path=str(tmp_path / "state.db"), table="moves", cache_size=1000),
        "redis-transactional": RedisState.transactional(url=redis_url, key_prefix=f"eo-{tag}-moves",
                                                        cache_size=1000),
        "postgres-opaque": PostgresState.opaque(dsn=postgres_dsn, table=f"eo_{tag}_moves", cache_size=1000),
    }
    topology = TridentTopology()
    words = (topology.newStream("sentences", KafkaSpout(kafka_bootstrap, [topic], starting_offsets="earliest",
                                                        max_offsets_per_trigger=300))
             .each(["value"], Split(), ["word"])
             .each(["word"], RandomSlot(slots_in_different_partitions(spark)), ["slot:string"])
             .partitionBy(["slot"]))
    sinks = {name: words.partitionPersist(factory, ["word"], CountWords(), ["word", "count:bigint"])
             .newValuesStream().collect()
             for name, factory in states.items()}
    checkpoint = tmp_path / "checkpoint"
    try:
        handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
        try:
            assert handle.awaitTermination(400)
            assert handle.exception() is None
        finally:
            handle.stop()
        batches = batch_sentences(checkpoint / "sentences", records)
        assert len(batches) == 6
        expected = Expected.from_batches(batches)
        for name, factory in states.items():
            assert_exact(name, factory, expected)
            for batch_id, tuples in sinks[name].batches.items():
                assert sorted((t["word"], t["count"]) for t in tuples) == \
                    sorted(expected.values_after(batch_id).items()), (name, batch_id)

        progress = sorted((p for p in handle.progress if p.stream == "sentences"), key=lambda p: p.txid)
        assert [p.txid for p in progress] == sorted(batches)
        conflicts = [p.state["write_conflicts"] for p in progress]
        print("write_conflicts per batch:", conflicts)
        assert sum(conflicts) > 0, f"no stale cache entry was ever hit: {[p.state for p in progress]}"
        assert sum(p.state["cache_hits"] for p in progress) > 0
        for p in progress:
            keys = len(states) * len(expected.per_batch[p.txid])
            # Every lost race cost exactly one re-read and one more write; nothing was skipped.
            assert p.state["keys_written"] == keys + p.state["write_conflicts"], p.state
            looked_up = p.state["cache_hits"] + p.state["cache_misses"]
            assert looked_up == keys + p.state["write_conflicts"], p.state
            assert p.state["keys_skipped"] == 0, p.state
    finally:
        for factory in states.values():
            drop_state(factory)


# -- (c) a store reset between a batch's attempts: the cache's entries go with it ----------------------

class EmptyTheStoreOnce(BaseFunction):
    """After the persist wrote batch ``txid``'s keys: on the first attempt only, empty the Redis
    state (its keys and commit record, as a restart without persistence does) and fail the batch."""

    def __init__(self, url: str, prefix: str, marker: str, txid: int) -> None:
        self.url, self.prefix, self.marker, self.txid = url, prefix, marker, txid

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context

    def execute(self, tuple: Any, collector: Any) -> None:
        import os

        import redis as redis_py

        from trident_spark import FailedException

        if self.context.txid == self.txid and not os.path.exists(self.marker):
            with open(self.marker, "w", encoding="utf-8") as out:
                out.write("emptied\n")
            client = redis_py.Redis.from_url(self.url)
            for key in client.scan_iter(f"{self.prefix}*"):
                client.delete(key)
            client.close()
            raise FailedException("the store was emptied: replay the batch")
        collector.emit([1])


def test_a_store_emptied_between_attempts_is_not_skipped_on_the_word_of_the_cache(spark, redis_url, tmp_path):
    """The retried batch finds a new store generation (its commit record was lost and, with
    ``accept_state_loss``, re-based): the cache that said "already applied at this txid" is
    dropped, so each key of the batch is counted from what the store holds, once."""
    from trident_spark.builtin import Count
    from trident_spark.spout import FeederBatchSpout
    from trident_spark.state import open_state

    prefix = f"eo-{unique_tag()}-reset"
    factory = RedisState.transactional(url=redis_url, key_prefix=prefix, cache_size=1000)
    batches = [[["cat"], ["dog"], ["cat"]], [["cat"], ["eel"], ["dog"]], [["dog"], ["fox"]]]
    feeder = FeederBatchSpout(["word"])
    topology = TridentTopology()
    (topology.newStream("words", feeder).groupBy(["word"])
     .persistentAggregate(factory, Count(), ["count"])
     .newValuesStream()
     .each(["word", "count"], EmptyTheStoreOnce(redis_url, prefix, str(tmp_path / "emptied"), txid=1),
           ["seen:bigint"])
     .collect())
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="200 milliseconds", spark=spark,
                          accept_state_loss=True, retry_delay=0.1)
    try:
        for batch in batches:
            feeder.feed(batch)
            handle.processAllAvailable()
        assert handle.exception() is None
        progress = sorted((p for p in handle.progress if p.stream == "words"), key=lambda p: p.txid)
    finally:
        handle.stop()
    assert (tmp_path / "emptied").exists()
    # Batch 0 went with the store; batch 1 counted once on the empty store, then batch 2.
    expected = {"cat": 1, "dog": 2, "eel": 1, "fox": 1}
    words = sorted(expected)
    assert open_state(factory.url).multiGet([[w] for w in words]) == [expected[w] for w in words]
    # The retry read every key from the store (a key it skipped, the store itself held at txid 1:
    # a partition that wrote after the store was emptied).
    retried = next(p for p in progress if p.txid == 1)
    assert retried.state["cache_hits"] == 0, retried.state
    assert sum(p.state["cache_hits"] for p in progress) > 0, [p.state for p in progress]
