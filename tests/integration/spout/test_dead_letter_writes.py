"""The dead-letter writer against the session's Kafka broker (Apache Kafka), without Spark: each
dead letter once, whatever earlier attempts of a range wrote."""

from __future__ import annotations

import pytest
from confluent_kafka import Consumer, KafkaError, TopicPartition

from trident_spark.errors import UnknownTopicError
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.dead_letters import DeadLetter, send_dead_letters, source_of
from trident_spark.spout.kafka.offsets import OffsetRange
from trident_spark.spout.kafka.pool import borrowed_consumer
from trident_spark.spout.kafka.read import read_conf
from trident_spark.spout.kafka.run import KafkaRun

pytestmark = pytest.mark.integration


def dead_letters(bootstrap: str, topic: str,
                 partitions: int = 1) -> list[tuple[tuple, bytes | None, bytes | None]]:
    """Every record of ``topic``: (its source from the headers, key, value), in partition order."""
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dl-test", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    out = []
    try:
        for partition in range(partitions):
            consumer.assign([TopicPartition(topic, partition, 0)])
            while True:
                msg = consumer.poll(10)
                assert msg is not None, f"no end-of-partition event from {topic}[{partition}]"
                if msg.error() is not None:
                    assert msg.error().code() == KafkaError._PARTITION_EOF
                    break
                out.append((source_of(msg.headers()), msg.key(), msg.value()))
    finally:
        consumer.close()
    return out


def letter(offset: int, topic: str = "src", partition: int = 0) -> DeadLetter:
    return DeadLetter(topic, partition, offset, f"k{offset}".encode(), f"bad {offset}".encode(),
                      1_700_000_000_000 + offset, [("origin", b"test")], f"value {offset} is not Avro")


def send(config: KafkaSpoutConfig, r: OffsetRange, letters: list[DeadLetter], writer: str = "/ckpt/a") -> int:
    with borrowed_consumer(read_conf(config)) as consumer:
        return send_dead_letters(config, r, letters, consumer, KafkaRun(writer))


def spout_config(bootstrap: str, dlq: str) -> KafkaSpoutConfig:
    return KafkaSpoutConfig(bootstrap, topics=("src",), on_malformed="dead_letter", dead_letter_topic=dlq,
                            timeout_s=10)


def test_each_dead_letter_once_across_attempts_batches_and_streams(kafka_bootstrap, new_topic):
    dlq = new_topic(prefix="dlq")
    config = spout_config(kafka_bootstrap, dlq)
    batch0 = OffsetRange("src", 0, 0, 10)
    assert send(config, batch0, [letter(2), letter(5)]) == 2  # an attempt that wrote only some
    assert send(config, batch0, [letter(2), letter(5), letter(7)]) == 1  # the replay writes the rest
    assert send(config, batch0, [letter(2), letter(5), letter(7)]) == 0  # and again nothing
    batch1 = OffsetRange("src", 0, 10, 20)
    assert send(config, batch1, [letter(12)]) == 1
    assert send(config, batch1, [letter(12)]) == 0
    # another stream (checkpoint) reading the same records writes its own
    assert send(spout_config(kafka_bootstrap, dlq), batch1, [letter(12)], "/ckpt/b") == 1
    found = dead_letters(kafka_bootstrap, dlq)
    assert [(source, key) for source, key, _ in found] == [
        (("/ckpt/a", "src", 0, 2), b"k2"), (("/ckpt/a", "src", 0, 5), b"k5"),
        (("/ckpt/a", "src", 0, 7), b"k7"),
        (("/ckpt/a", "src", 0, 12), b"k12"), (("/ckpt/b", "src", 0, 12), b"k12")]
    assert found[0][2] == b"bad 2"


def test_split_ranges_of_one_batch_find_each_others_letters(kafka_bootstrap, new_topic):
    """min_partitions cuts a partition's range: the later part may write first; the scan goes on
    to the batch's start, not the part's."""
    dlq = new_topic(prefix="dlq")
    config = spout_config(kafka_bootstrap, dlq)
    send(config, OffsetRange("src", 0, 0, 5), [letter(1)])  # an earlier batch
    first, second = OffsetRange("src", 0, 5, 10, 5), OffsetRange("src", 0, 10, 15, 5)
    assert send(config, second, [letter(11)]) == 1
    assert send(config, first, [letter(6)]) == 1
    assert send(config, second, [letter(11)]) == 0
    assert send(config, first, [letter(6)]) == 0
    assert [s[0][3] for s in dead_letters(kafka_bootstrap, dlq)] == [1, 11, 6]


def test_a_long_dead_letter_partition_is_read_back_in_steps(kafka_bootstrap, new_topic, monkeypatch):
    from trident_spark.spout.kafka import dead_letters as module

    monkeypatch.setattr(module, "SCAN_CHUNK", 3)
    dlq = new_topic(prefix="dlq", partitions=2)
    config = spout_config(kafka_bootstrap, dlq)
    assert send(config, OffsetRange("src", 0, 0, 100), [letter(i) for i in range(0, 20, 2)]) == 10
    assert send(config, OffsetRange("src", 0, 0, 100), [letter(i) for i in range(20)]) == 10
    assert sorted(s[0][3] for s in dead_letters(kafka_bootstrap, dlq, 2)) == list(range(20))


def test_a_missing_dead_letter_topic_is_named(kafka_bootstrap):
    config = spout_config(kafka_bootstrap, "no-such-dead-letters")
    expected = (r"KafkaSpout\(dead_letter_topic='no-such-dead-letters'\): no such topic on "
                r"127\.0\.0\.1:\d+; create it")
    with pytest.raises(UnknownTopicError, match=expected):
        send(config, OffsetRange("src", 0, 0, 10), [letter(1)])


# --- a dead letter over the size limit never stops the stream (Tansu does not enforce a topic's
# max.message.bytes: the producer's message.max.bytes, librdkafka's 1,000,000 bytes by default, is
# the limit here, as a broker's would be) ---


def dead_letter_records(bootstrap: str, topic: str) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "dl-test", "enable.partition.eof": True,
                         "enable.auto.commit": False})
    out = []
    try:
        consumer.assign([TopicPartition(topic, 0, 0)])
        while True:
            msg = consumer.poll(10)
            assert msg is not None, f"no end-of-partition event from {topic}[0]"
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF
                return out
            out.append((dict(msg.headers() or []), msg.key(), msg.value()))
    finally:
        consumer.close()


def huge(offset: int, size: int = 1_500_000) -> DeadLetter:
    return DeadLetter("src", 0, offset, b"k-huge", bytes(range(256)) * (size // 256) + b"!" * (size % 256),
                      1_700_000_000_000, [("origin", b"test")], "value is not JSON matching value_schema")


def test_a_1_5_mb_dead_letter_is_sent_cut_to_fit_and_the_others_arrive(kafka_bootstrap, new_topic):
    from trident_spark.spout.kafka.dead_letters import TRUNCATED

    dlq = new_topic(prefix="dlq")
    config = spout_config(kafka_bootstrap, dlq)
    r = OffsetRange("src", 0, 0, 10)
    assert send(config, r, [letter(1), huge(2), letter(3)]) == 3
    assert send(config, r, [letter(1), huge(2), letter(3)]) == 0  # a replay finds all three
    found = dead_letter_records(kafka_bootstrap, dlq)
    assert [(source_of(list(h.items()))[3], key) for h, key, _ in found] == [
        (1, b"k1"), (2, b"k-huge"), (3, b"k3")]
    headers, _, value = found[1]
    assert headers[TRUNCATED] == b'{"value": 1500000}'
    assert 900_000 < len(value) < 1_000_000 and huge(2).value.startswith(value)
    assert headers["origin"] == b"test"
    assert headers["trident.error"] == b"value is not JSON matching value_schema"
    assert TRUNCATED not in found[0][0] and found[0][2] == b"bad 1"


def test_a_letter_refused_for_its_size_is_sent_in_its_smallest_form(kafka_bootstrap, new_topic, monkeypatch):
    """A broker whose limit is below the producer's refuses the cut letter: played by letting the
    letter through uncut (the limit taken as 100 MB), so librdkafka refuses it."""
    from trident_spark.spout.kafka import dead_letters as module

    monkeypatch.setattr(module, "record_limit", lambda config: 100_000_000)
    dlq = new_topic(prefix="dlq")
    config = spout_config(kafka_bootstrap, dlq)
    assert send(config, OffsetRange("src", 0, 0, 10), [huge(4), letter(5)]) == 2
    found = dead_letter_records(kafka_bootstrap, dlq)
    assert sorted(source_of(list(h.items()))[3] for h, _, _ in found) == [4, 5]
    smallest = next((h, k, v) for h, k, v in found if v != b"bad 5")
    assert smallest[0][module.TRUNCATED] == b'{"value": 1500000, "headers": 10}'
    assert smallest[2] == huge(4).value[:1024] and "origin" not in smallest[0]


def test_a_letter_too_large_in_every_form_is_skipped_and_counted(kafka_bootstrap, new_topic):
    from trident_spark.spout.kafka.dead_letters import skipped_dead_letters

    dlq = new_topic(prefix="dlq")
    config = KafkaSpoutConfig(kafka_bootstrap, topics=("src",), on_malformed="dead_letter",
                              dead_letter_topic=dlq, timeout_s=10,
                              kafka_options={"message.max.bytes": 1000})
    wordy = DeadLetter("src", 0, 6, b"k6", b"bad 6", None, [], "value is not JSON " + "x" * 3000)
    before = skipped_dead_letters()
    r = OffsetRange("src", 0, 0, 10)
    assert send(config, r, [letter(5), wordy, letter(7)]) == 2
    assert skipped_dead_letters() == before + 1
    assert [source_of(list(h.items()))[3] for h, _, _ in dead_letter_records(kafka_bootstrap, dlq)] == [5, 7]
    assert send(config, r, [letter(5), wordy, letter(7)]) == 0  # a replay: skipped again, no failure
    assert skipped_dead_letters() == before + 2
