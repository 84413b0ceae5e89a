"""A word count from Kafka into eight states (Elasticsearch, Redis, SQLite, PostgreSQL x transactional,
opaque) on Spark.

One topology, one run (module scope): eight ``persistentAggregate`` on the same
word stream, each with its ``newValuesStream().collect()``, and a second
stream of query words that reads all eight states with ``stateQuery(MapGet)``.
Every assertion compares with what a plain consumer and Spark's offsets log
say: exact counts, the txid of the last batch that touched each key, opaque
``prev`` values, the per-batch new values and the per-batch state counters.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
from exactly_once_support import (
    STATE_NAMES,
    Expected,
    assert_exact,
    batch_sentences,
    committed,
    drop_state,
    load_topic,
    make_sentences,
    six_states,
    unique_tag,
)

from trident_spark import TridentTopology
from trident_spark.builtin import Count, MapGet, Split
from trident_spark.local.kafka import create_topic, produce
from trident_spark.spout import KafkaSpout

pytestmark = pytest.mark.integration

SENTENCES = 2400
PER_TRIGGER = 400          # 6 batches
QUERY_WORDS = ["apple", "zebra", "cedar", "nosuchword", "apple"]
#: Words in one sentence each, spread over the topic: their last batch differs from key to key.
RARE_WORDS = ("quartz", "fjord", "glyph", "nymph", "crypt", "lymph", "psalm", "sylph", "tryst", "wrist")


def sentences() -> list[str]:
    made = make_sentences(SENTENCES, seed=20261122)
    for j, word in enumerate(RARE_WORDS):
        made[j * (SENTENCES // len(RARE_WORDS)) + 7] += f" {word}"
    return made


def _field(name: str) -> str:
    return name.replace("-", "_")


@pytest.fixture(scope="module")
def wordcount(spark, kafka_bootstrap, redis_url, elasticsearch_url, postgres_dsn, tmp_path_factory) -> Any:
    tag = unique_tag()
    workdir = tmp_path_factory.mktemp("wordcount")
    topic, query_topic = f"eo-words-{tag}", f"eo-queries-{tag}"
    records = load_topic(kafka_bootstrap, topic, sentences(), partitions=4)
    create_topic(kafka_bootstrap, query_topic, partitions=1)
    factories = six_states(tag, workdir, redis_url, elasticsearch_url, postgres_dsn)

    topology = TridentTopology()
    words = (topology.newStream("sentences", KafkaSpout(kafka_bootstrap, [topic], starting_offsets="earliest",
                                                        max_offsets_per_trigger=PER_TRIGGER))
             .each(["value"], Split(), ["word"]))
    states = {name: words.groupBy(["word"]).persistentAggregate(factory, Count(), ["count"])
              for name, factory in factories.items()}
    new_values = {name: state.newValuesStream().collect() for name, state in states.items()}
    queried = (topology.newStream("queries", KafkaSpout(kafka_bootstrap, [query_topic],
                                                        starting_offsets="earliest"))
               .each(["value"], Split(), ["word"]))
    for name, state in states.items():
        queried = queried.stateQuery(state, ["word"], MapGet(), [_field(name)])
    answers = queried.collect()

    checkpoint = workdir / "checkpoint"
    handle = topology.run(checkpoint_location=checkpoint, trigger=None, spark=spark)
    try:
        handle.processAllAvailable()        # every sentence counted ...
        produce(kafka_bootstrap, query_topic, [(None, " ".join(QUERY_WORDS).encode(), 0)])
        handle.processAllAvailable()        # ... then the query words read the eight states
        assert handle.exception() is None
    finally:
        handle.stop()
    query_dir = checkpoint / "sentences"
    batches = batch_sentences(query_dir, records)
    yield {
        "factories": factories,
        "expected": Expected.from_batches(batches),
        "batches": batches,
        "committed": committed(query_dir),
        "new_values": new_values,
        "answers": answers.tuples,
        "progress": [p for p in handle.progress if p.stream == "sentences"],
        "sentences": [s for _, _, s in records],
    }
    for factory in factories.values():
        drop_state(factory)


def test_the_run_had_several_batches_each_committed_once(wordcount):
    batches = wordcount["batches"]
    assert len(batches) == SENTENCES // PER_TRIGGER
    assert [len(b) for b in batches.values()] == [PER_TRIGGER] * len(batches)
    assert wordcount["committed"] == sorted(batches)
    assert sorted(s for b in batches.values() for s in b) == sorted(wordcount["sentences"])
    # Not every word is in every batch: "last batch that touched a key" differs between keys.
    assert len(set(wordcount["expected"].last_txid.values())) > 1


@pytest.mark.parametrize("name", STATE_NAMES)
def test_final_counts_and_stored_txids_are_exact(wordcount, name):
    expected = wordcount["expected"]
    assert expected.counts == Counter(w for s in wordcount["sentences"] for w in s.split())
    assert_exact(name, wordcount["factories"][name], expected)


@pytest.mark.parametrize("name", STATE_NAMES)
def test_new_values_stream_gives_each_batch_its_updated_keys_with_new_values(wordcount, name):
    expected: Expected = wordcount["expected"]
    got = wordcount["new_values"][name].batches
    assert sorted(got) == sorted(wordcount["batches"])
    for batch_id, tuples in got.items():
        assert sorted((t["word"], t["count"]) for t in tuples) == \
            sorted(expected.values_after(batch_id).items()), f"batch {batch_id}"


def test_state_query_from_a_second_stream_reads_the_counts_of_every_state(wordcount):
    counts = wordcount["expected"].counts
    answers = wordcount["answers"]
    assert [t["word"] for t in answers] == QUERY_WORDS
    for t in answers:
        want = counts.get(t["word"])
        assert {name: t[_field(name)] for name in STATE_NAMES} == dict.fromkeys(STATE_NAMES, want), t
    assert answers[0]["elasticsearch_opaque"] == counts["apple"] > 0


def test_progress_state_counters_add_up_per_batch(wordcount):
    """Per batch: each of the eight states wrote each distinct word once, plus one rewrite per lost race."""
    expected: Expected = wordcount["expected"]
    progress = {p.txid: p for p in wordcount["progress"]}
    assert sorted(progress) == sorted(wordcount["batches"])
    for batch_id, p in progress.items():
        keys = len(STATE_NAMES) * len(expected.per_batch[batch_id])
        state = p.state
        assert p.rows == PER_TRIGGER
        assert state["keys_written"] == keys + state["write_conflicts"], (batch_id, state)
        looked_up = state["cache_hits"] + state["cache_misses"]
        assert looked_up == keys + state["write_conflicts"], (batch_id, state)
        assert state["keys_read"] == state["cache_misses"], (batch_id, state)
        assert state["keys_skipped"] == 0, (batch_id, state)   # nothing replayed
    # The workers' caches answer many reads (the first batch's too: a check before its writes,
    # that no key is ahead of it, read its keys through them).
    assert sum(p.state["cache_hits"] for p in progress.values()) > 0

