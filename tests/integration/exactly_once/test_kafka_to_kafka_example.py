"""examples/kafka_to_kafka.py on Spark: sentences in, each batch's new word counts out, exactly once.

The example's topology (``build_topology``) runs on the session's Spark and broker; its output
topic, read to its end with read_committed, holds exactly one record per batch and word the
batch touched, with the word's count after that batch; ``latest_counts`` (what the example
prints) gives every word's total.
"""

from __future__ import annotations

from collections import Counter

import pytest
from exactly_once_support import batch_sentences, load_topic, make_sentences, unique_tag
from kafka_output_support import expected_records, read_committed

from examples.kafka_to_kafka import WORD, build_topology, latest_counts, word_state
from trident_spark.local.kafka import create_topic

pytestmark = pytest.mark.integration


def test_the_example_writes_each_batchs_new_counts_to_kafka_once(spark, kafka_bootstrap, tmp_path):
    tag = unique_tag()
    sentences, counts = f"k2k-in-{tag}", f"k2k-out-{tag}"
    records = load_topic(kafka_bootstrap, sentences, make_sentences(400, seed=3), partitions=2)
    create_topic(kafka_bootstrap, counts, 2)
    checkpoint = tmp_path / "checkpoint"
    topology = build_topology(kafka_bootstrap, sentences, counts, word_state(None, checkpoint),
                              max_fetch_bytes=4000)
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    try:
        handle.awaitTermination(240)
    finally:
        handle.stop()

    batches = batch_sentences(checkpoint / "kafka-to-kafka", records)
    assert len(batches) > 1                                   # several batches, each its transactions
    assert read_committed(kafka_bootstrap, counts, 2) == expected_records(batches)
    latest, _ = latest_counts(kafka_bootstrap, counts)
    assert latest == Counter(w for _, _, s in records for w in WORD.findall(s.lower()))
