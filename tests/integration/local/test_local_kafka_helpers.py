"""The Kafka helpers (create_topic, produce, consume) against the session broker.

Locally the broker is Apache Kafka (see the pytest header for the provider used)."""

from __future__ import annotations

import uuid
from collections import Counter

import pytest

from trident_spark.local import kafka as kafka_helpers
from trident_spark.local.kafka import KafkaHelperError, consume, create_topic, produce

pytestmark = pytest.mark.integration


def _topic() -> str:
    return f"local-{uuid.uuid4().hex[:8]}"


def test_four_partitions_round_trip_100_records(kafka_bootstrap: str) -> None:
    topic = _topic()
    create_topic(kafka_bootstrap, topic, 4)
    records = [(f"k{i}".encode(), f"v{i}".encode(), i % 4) for i in range(100)]
    assert produce(kafka_bootstrap, topic, records) == 100

    read = consume(kafka_bootstrap, topic, count=100, timeout=30)

    assert Counter(r.partition for r in read) == {0: 25, 1: 25, 2: 25, 3: 25}
    for partition in range(4):
        in_partition = [r for r in read if r.partition == partition]
        assert [r.offset for r in in_partition] == list(range(25))
        assert [r.value for r in in_partition] == [
            f"v{i}".encode() for i in range(partition, 100, 4)
        ]
    assert {r.key for r in read} == {f"k{i}".encode() for i in range(100)}


def test_bare_values_and_str_are_produced(kafka_bootstrap: str) -> None:
    topic = _topic()
    create_topic(kafka_bootstrap, topic, 1)
    assert produce(kafka_bootstrap, topic, ["the cat", b"a dog", (None, "x", 0)]) == 3
    read = consume(kafka_bootstrap, topic, count=3)
    assert [(r.key, r.value) for r in read] == [(None, b"the cat"), (None, b"a dog"), (None, b"x")]


def test_existing_topic_is_an_error_unless_exist_ok(kafka_bootstrap: str) -> None:
    topic = _topic()
    create_topic(kafka_bootstrap, topic, 2)
    with pytest.raises(KafkaHelperError, match=f"creating topic '{topic}' on {kafka_bootstrap}"):
        create_topic(kafka_bootstrap, topic, 2)
    create_topic(kafka_bootstrap, topic, 2, exist_ok=True)
    with pytest.raises(
        KafkaHelperError, match="wanted 3 partitions with a leader, still 2 partitions"
    ):
        create_topic(kafka_bootstrap, topic, 3, exist_ok=True, timeout=1.0)


def test_producing_to_a_missing_partition_raises(kafka_bootstrap: str) -> None:
    topic = _topic()
    create_topic(kafka_bootstrap, topic, 1)
    with pytest.raises(
        KafkaHelperError, match=f"producing to '{topic}' on {kafka_bootstrap}: 1 of 1"
    ):
        produce(kafka_bootstrap, topic, [(None, b"v", 7)], timeout=10)


def test_metadata_lookup_does_not_create_topics(kafka_bootstrap: str) -> None:
    topic = _topic()
    with pytest.raises(KafkaHelperError, match="still missing"):
        kafka_helpers.wait_for_partitions(kafka_bootstrap, topic, 1, timeout=1.0)
    with pytest.raises(KafkaHelperError, match="not found"):
        consume(kafka_bootstrap, topic, count=1, timeout=1.0)
