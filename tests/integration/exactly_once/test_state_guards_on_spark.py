"""The state guards on Spark: the errors a user meets, with their exact text, and the ways out.

(a) a deleted checkpoint makes the state ahead of the stream: StateAheadError
    (asking for the largest stored txid + 1), then StateAdoptionError while the
    spout would re-read counted records, then the documented adoption
    (``txid_offset`` and the state's recorded offsets) continues the counts exactly;
(b) a state written as transactional, opened as opaque: StateTypeMismatchError;
(c) an unreachable Redis or Elasticsearch: the run fails fast, naming the address;
(d) bytes the serializer cannot read under a key: UnreadableValueError naming the key.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest
import redis as redis_py
from exactly_once_support import (
    VOCABULARY,
    Expected,
    assert_exact,
    batch_sentences,
    drop_state,
    load_topic,
    make_sentences,
    offsets_log,
    stored_values,
    unique_tag,
)

from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.local.kafka import create_topic
from trident_spark.local.process import free_port
from trident_spark.spout import KafkaSpout
from trident_spark.state import (
    ElasticsearchState,
    RedisState,
    SqliteState,
    StateAdoptionError,
    StateAheadError,
    StateTypeMismatchError,
    StateUnavailableError,
    UnreadableValueError,
)
from trident_spark.state.sqlite import sqlite_url

pytestmark = pytest.mark.integration

PER_TRIGGER = 200
#: 1,296 words: with a Zipf-like choice many appear in some batches only, so keys end at different txids.
WIDE = tuple(a + b for a in VOCABULARY for b in VOCABULARY)


def wordcount(bootstrap: str, topic: str, factory: Any, *,
              starting_offsets: Any = "earliest") -> TridentTopology:
    topology = TridentTopology()
    (topology.newStream("sentences", KafkaSpout(bootstrap, [topic], starting_offsets=starting_offsets,
                                                max_offsets_per_trigger=PER_TRIGGER))
     .each(["value"], Split(), ["word"])
     .groupBy(["word"])
     .persistentAggregate(factory, Count(), ["count"]))
    return topology


def run_to_end(topology: TridentTopology, spark: Any, checkpoint: Path, timeout: float = 300) -> Any:
    """Run until the topic is read (available_now); raises the query's error, as the handle translates it."""
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(timeout), "the run did not end"
        assert handle.exception() is None
    finally:
        handle.stop()
    return handle


def run_expecting(error: type[BaseException], topology: TridentTopology, spark: Any, checkpoint: Path,
                  timeout: float = 300) -> BaseException:
    """Run, expect the query to fail with ``error``; awaitTermination raises it and exception() agrees."""
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    try:
        with pytest.raises(error) as raised:
            handle.awaitTermination(timeout)
        assert isinstance(handle.exception(), error)
        assert str(handle.exception()) == str(raised.value)
    finally:
        handle.stop()
    return raised.value


# -- (a) state ahead of a reset checkpoint, and adopting it ---------------------------------------------

def test_a_deleted_checkpoint_is_refused_then_adopted_from_the_recorded_offsets(
        spark, kafka_bootstrap, tmp_path):
    topic = f"eo-ahead-{unique_tag()}"
    # Random words: keys end at different txids, so the key the check meets may not hold the largest.
    records = load_topic(kafka_bootstrap, topic, make_sentences(4 * PER_TRIGGER, seed=3, vocabulary=WIDE),
                         partitions=4)
    factory = SqliteState.opaque(path=str(tmp_path / "state.db"), table="wc")
    checkpoint = tmp_path / "checkpoint" / "wc"

    run_to_end(wordcount(kafka_bootstrap, topic, factory), spark, checkpoint)
    old = Expected.from_batches(batch_sentences(checkpoint / "sentences", records))
    assert_exact("first run", factory, old)
    logged = offsets_log(checkpoint / "sentences")
    largest = max(logged)
    assert largest == 3 and max(old.last_txid.values()) == 3 and min(old.last_txid.values()) < 3
    ended_at = logged[largest]
    record = factory.open_commit_log().read()
    assert (record.txid, record.writing, record.stream) == (largest, None, "sentences")
    assert factory.committed_offsets() == {topic: {str(p): o for p, o in ended_at.items()}}

    # The checkpoint is lost; new sentences arrive.
    shutil.rmtree(checkpoint)
    records = load_topic(kafka_bootstrap, topic, make_sentences(2 * PER_TRIGGER, seed=4, vocabulary=WIDE),
                         partitions=4, already=records)
    err = run_expecting(StateAheadError, wordcount(kafka_bootstrap, topic, factory), spark, checkpoint)
    address = sqlite_url(factory.path, "wc")
    text = str(err)
    found = re.match(r"state is ahead of the stream: (?P<address>\S+) key \['(?P<word>[a-z]+)'\] "
                     r"stored txid (?P<stored>\d+) [>=] batch txid (?P<batch>\d+)[;,] ", text)
    assert found, text
    word = found["word"]
    stored = stored_values(factory, [word])[word].txid                 # the txid it names is the stored one
    assert (found["address"], int(found["stored"]), int(found["batch"])) == (address, stored, 0), text
    assert (err.address, err.key, err.stored_txid, err.batch_txid) == (address, [word], stored, 0)
    for advice in ("the checkpoint was reset or two queries write this state",
                   "the update was refused rather than overwrite newer values",
                   "To adopt the stored values, restart with a txid_offset that puts this stream's txids "
                   "after every txid in the state "
                   # the largest txid the state holds + 1, whichever key was met first
                   f"(here at least {largest + 1}; the largest stored txid + 1 always works)",
                   "to reset, delete the state (or point the stream at a new one) and restart",
                   "(stream 'sentences')"):
        assert advice in text, (advice, text)
    assert_exact("after the refused batch", factory, old)           # nothing of the new run was written
    shutil.rmtree(checkpoint)

    # The txid_offset alone is not enough: "earliest" would count the old records twice.
    adopted = factory.with_settings(txid_offset=largest + 1)
    err = run_expecting(StateAdoptionError, wordcount(kafka_bootstrap, topic, adopted), spark, checkpoint)
    text = str(err)
    counted = json.dumps({topic: {str(p): o for p, o in ended_at.items()}}, sort_keys=True)
    for part in (f"adopting {address}: this run's first batch re-reads records the state already counted: "
                 f"{topic}[0] from offset 0 (counted up to {ended_at[0]})",
                 f"counting them again would double them. The state's last committed batch (txid {largest}) "
                 f"ended at starting_offsets={counted}: start the spout there",
                 f"keep txid_offset={largest + 1}, and restart with a new checkpoint directory"):
        assert part in text, (part, text)
    assert_exact("after the refused adoption", factory, old)            # nothing was written
    assert factory.open_commit_log().read().highest_txid == largest
    shutil.rmtree(checkpoint)

    # The documented way out: txid_offset = the largest stored txid + 1, kept from now on, and the
    # spout resumed where the state's last batch ended (its recorded offsets).
    run_to_end(wordcount(kafka_bootstrap, topic, adopted, starting_offsets=adopted.committed_offsets()),
               spark, checkpoint)
    new_batches = batch_sentences(checkpoint / "sentences", records, start=ended_at)
    assert len(new_batches) == 2 and sum(len(b) for b in new_batches.values()) == 2 * PER_TRIGGER
    expected = Expected.from_batches(new_batches, txid_offset=largest + 1, start=old.counts)
    for word in set(old.counts) - set(expected.last_txid):      # keys the new batches did not touch
        expected.last_txid[word], expected.before_last[word] = old.last_txid[word], old.before_last[word]
    assert_exact("adopted", adopted, expected)       # old counts + new ones, stored txids 4 and 5
    assert max(expected.last_txid.values()) == 5


def test_a_reset_checkpoint_whose_batch_ids_equal_the_stored_txids_is_not_taken_for_a_replay(
        spark, kafka_bootstrap, tmp_path):
    topic = f"eo-reset-{unique_tag()}"
    first = make_sentences(PER_TRIGGER, seed=8, every_word_each=PER_TRIGGER)
    records = load_topic(kafka_bootstrap, topic, first, partitions=4)
    factories = {kind: getattr(SqliteState, kind)(path=str(tmp_path / "state.db"), table=f"wc_{kind}")
                 for kind in ("transactional", "opaque")}

    def topology(starting_offsets: Any) -> TridentTopology:
        built = TridentTopology()
        spout = KafkaSpout(kafka_bootstrap, [topic], starting_offsets=starting_offsets,
                           max_offsets_per_trigger=PER_TRIGGER)
        words = built.newStream("sentences", spout).each(["value"], Split(), ["word"])
        for factory in factories.values():
            words.groupBy(["word"]).persistentAggregate(factory, Count(), ["count"])
        return built

    checkpoint = tmp_path / "checkpoint"
    run_to_end(topology("earliest"), spark, checkpoint)               # one batch: every key at txid 0
    old = Expected.from_batches(batch_sentences(checkpoint / "sentences", records))
    ended_at = offsets_log(checkpoint / "sentences")[0]
    shutil.rmtree(checkpoint)
    second = make_sentences(PER_TRIGGER, seed=9, every_word_each=PER_TRIGGER)
    records = load_topic(kafka_bootstrap, topic, second, partitions=4, already=records)
    # its batch 0 is a new batch, not a replay of the old run's batch 0
    err = run_expecting(StateAheadError, topology({topic: dict(ended_at)}), spark, checkpoint)
    assert isinstance(err, StateAheadError) and err.stored_txid == 0 and err.batch_txid == 0
    assert "stored txid 0 = batch txid 0, a batch this checkpoint has not written before; the checkpoint " \
           "was reset or two queries write this state" in str(err)
    for kind, factory in factories.items():  # nothing of the new batch was written
        with factory.open() as state:
            words = sorted(old.counts)
            assert dict(zip(words, state.multiGet([[w] for w in words]), strict=True)) == old.counts, kind
    # refused again after a restart: the checkpoint logged batch 0 but never began writing it
    err = run_expecting(StateAheadError, topology({topic: dict(ended_at)}), spark, checkpoint)
    assert "stored txid 0 = batch txid 0" in str(err)



# -- (b) opened as another kind ----------------------------------------------------------------------

def test_a_transactional_state_run_as_opaque_fails_with_the_kind_it_found(spark, kafka_bootstrap, tmp_path):
    topic = f"eo-kind-{unique_tag()}"
    load_topic(kafka_bootstrap, topic, make_sentences(PER_TRIGGER, seed=5, every_word_each=PER_TRIGGER),
               partitions=2)
    path = str(tmp_path / "state.db")
    run_to_end(wordcount(kafka_bootstrap, topic, SqliteState.transactional(path=path, table="wc")), spark,
               tmp_path / "first")
    err = run_expecting(StateTypeMismatchError,
                        wordcount(kafka_bootstrap, topic, SqliteState.opaque(path=path, table="wc")),
                        spark, tmp_path / "second")
    text = str(err)
    found = re.match(r"(?P<address>\S+) key \['(?P<word>[a-z]+)'\]: expected an opaque value, found "
                     r"\[0, (?P<count>\d+)\], which looks like a transactional value \[txid, val\]; "
                     r"the state was written as another kind: open it with the type it was written with "
                     r"\(\?type=\.\.\. or X\.transactional\(\)/X\.opaque\(\)/X\.nonTransactional\(\)\), "
                     r"or write to a new state", text)
    assert found, text
    assert found["address"] == sqlite_url(path, "wc")
    word = found["word"]
    stored = stored_values(SqliteState.transactional(path=path, table="wc"), [word])[word]
    assert (stored.txid, stored.val) == (0, int(found["count"]))
    assert (err.expected, err.key) == ("opaque", [word])


# -- (c) an unreachable store ------------------------------------------------------------------------

def _unreachable(backend: str) -> tuple[Any, str]:
    if backend == "redis":
        return RedisState.opaque(url="redis://127.0.0.1:1/0", key_prefix="wc"), "redis://127.0.0.1:1/0"
    port = free_port()
    return ElasticsearchState.opaque(hosts=[f"http://127.0.0.1:{port}"], index="wc"), f"http://127.0.0.1:{port}"


@pytest.mark.parametrize("backend", ["redis", "elasticsearch"])
def test_an_unreachable_store_fails_run_fast_naming_its_address(spark, kafka_bootstrap, tmp_path, backend):
    """run() opens every state on the driver first: it fails at once, before any data arrives."""
    topic = f"eo-down-{unique_tag()}"
    create_topic(kafka_bootstrap, topic, partitions=1)          # empty: no batch would ever touch the store
    factory, address = _unreachable(backend)
    topology = wordcount(kafka_bootstrap, topic, factory)
    active = {q.id for q in spark.streams.active}
    began = time.monotonic()
    with pytest.raises(StateUnavailableError) as raised:
        topology.run(checkpoint_location=tmp_path / "checkpoint", trigger="1 second", spark=spark)
    seconds = time.monotonic() - began
    text = str(raised.value)
    assert text.startswith(f"cannot use the state store at {address}"), text
    assert "check that" in text and "reachable from this machine" in text, text
    assert raised.value.address.startswith(address)
    assert seconds < 15, f"took {seconds:.1f} s to fail: {text}"
    assert {q.id for q in spark.streams.active} == active      # no query was left running


# -- (d) bytes the serializer cannot read -------------------------------------------------------------

GARBAGE = b"\xff\xfegarbage"


def _corrupt(backend: str, tmp_path: Path, redis_url: str, word: str) -> Any:
    if backend == "sqlite":
        factory = SqliteState.opaque(path=str(tmp_path / "state.db"), table="wc")
        factory.open_backing_map().close()                  # creates the table
        with sqlite3.connect(factory.path) as db:
            db.execute('INSERT INTO "wc" (k, v, version) VALUES (?, ?, 1)', (word, GARBAGE))
        return factory
    factory = RedisState.opaque(url=redis_url, key_prefix=f"eo-{unique_tag()}-bad")
    client = redis_py.Redis.from_url(redis_url)
    client.set(f"{factory.key_prefix}:{word}", GARBAGE)
    client.close()
    return factory


@pytest.mark.parametrize("backend", ["sqlite", "redis"])
def test_an_unreadable_stored_value_fails_the_batch_naming_the_key(spark, kafka_bootstrap, redis_url,
                                                                   tmp_path, backend):
    topic = f"eo-garbage-{unique_tag()}"
    load_topic(kafka_bootstrap, topic, ["apple pie", "apple tart"], partitions=1)
    factory = _corrupt(backend, tmp_path, redis_url, "apple")
    try:
        err = run_expecting(UnreadableValueError, wordcount(kafka_bootstrap, topic, factory), spark,
                            tmp_path / "checkpoint")
        address = factory.open_backing_map().address
        text = str(err)
        assert text.startswith(
            f"cannot read the stored value of key ['apple'] in {address}: UnicodeDecodeError: 'utf-8' codec "
            f"can't decode byte 0xff in position 0: invalid start byte (stored bytes: {GARBAGE!r}); "
            f"the value was written by another program or serializer: open the state with the serializer "
            f"that wrote it, or delete that key"), text
        assert (err.key, err.address) == (["apple"], address)
    finally:
        drop_state(factory)
