"""Records written to stop a stream, through Kafka (Tansu) and Spark: the 20-byte Avro record
claiming 2**62 nulls (its writer schema from an in-process Schema Registry, a real HTTP server),
JSON nested 100,000 deep, and a 1.5 MB malformed record sent to a dead-letter topic whose
producer takes at most 1,000,000 bytes. Each is one malformed record: counted, skipped or sent
on (cut to fit), and the other records' counts are exact; with ``on_malformed="fail"`` the stream
fails with a clear error, not a hang (each test is bounded by a pytest timeout)."""

from __future__ import annotations

import json

import pytest

from tests.integration.spout.test_dead_letter_writes import dead_letter_records
from tests.schema_registry_server import schema_registry
from tests.unit.spout.formats.test_avro_bounds import READER, WRITER, avro, zigzag
from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.errors import MalformedRecordError
from trident_spark.local.kafka import produce
from trident_spark.spout import KafkaSpout
from trident_spark.spout.formats.schema_registry import clear_cache, wire_format
from trident_spark.spout.kafka.dead_letters import TRUNCATED, source_of

pytestmark = pytest.mark.integration


def run_counts(spark, spout, checkpoint, field="user"):
    """Run ``spout`` to its end counting records per ``field`` of the value; (counts, handle)."""
    topology = TridentTopology()
    sink = (topology.newStream("hostile", spout).map(lambda t: [t["value"][field]], [field])
            .groupBy([field]).aggregate(Count(), ["count"]).collect())
    handle = topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark)
    return sink, handle


def totals(sink, field="user") -> dict[str, int]:
    out: dict[str, int] = {}
    for t in sink.tuples:
        out[t[field]] = out.get(t[field], 0) + t["count"]
    return out


@pytest.mark.timeout(400)
def test_the_20_byte_avro_record_is_one_malformed_record_or_a_clear_failure(spark, kafka_bootstrap,
                                                                            new_topic, tmp_path):
    clear_cache()
    topic = new_topic(partitions=2)
    with schema_registry() as registry:
        writer = registry.register(f"{topic}-value", json.dumps(WRITER))
        hostile = wire_format(writer, b"\x08abcd" + zigzag(2**62))
        assert len(hostile) == 20

        def click(user: str) -> bytes:
            return wire_format(writer, avro(WRITER, {"user": user, "tags": [None]}))

        produce(kafka_bootstrap, topic, [(None, click("ann"), 0), (None, click("bob"), 1), (None, hostile, 0),
                                         (None, click("ann"), 0), (None, click("cy"), 1)])

        def spout(on_malformed: str) -> KafkaSpout:
            return KafkaSpout(kafka_bootstrap, [topic], value_format="avro", value_schema=READER,
                              schema_registry_url=registry.url, on_malformed=on_malformed)

        sink, handle = run_counts(spark, spout("skip"), tmp_path / "skip")
        try:
            handle.awaitTermination(180)
        finally:
            handle.stop()
        assert totals(sink) == {"ann": 2, "bob": 1, "cy": 1}
        assert [(p.rows, p.malformed_records) for p in handle.progress] == [(5, 1)]

        _, failing = run_counts(spark, spout("fail"), tmp_path / "fail")
        try:
            with pytest.raises(MalformedRecordError) as info:
                failing.awaitTermination(180)
        finally:
            failing.stop()
    assert (f"KafkaSpout: record {topic}[0]@1 cannot be read: value is refused before reading it as Avro "
            "of its registered schema: an array block claims 4611686018427387904 items that take no "
            "bytes (null)") in str(info.value)


@pytest.mark.timeout(400)
def test_json_100000_deep_and_a_1_5_mb_record_reach_the_dead_letter_topic_and_the_stream_goes_on(
        spark, kafka_bootstrap, new_topic, tmp_path):
    # The source topic takes records up to 4 MB; the dead-letter topic keeps the broker's default
    # (about 1 MB), so the 1.5 MB letter is refused by the broker if it is sent whole.
    topic, dlq = new_topic(config={"max.message.bytes": "4000000"}), new_topic(prefix="dlq")
    deep = b"[" * 100_000 + b"]" * 100_000
    big = b"{" + b"x" * 1_500_000  # malformed, and over the dead-letter producer's 1,000,000 bytes
    good = [json.dumps({"user": u}).encode() for u in ("ann", "bob", "ann")]
    produce(kafka_bootstrap, topic, [good[0], deep, good[1], big, b"{not json", good[2]],
            config={"message.max.bytes": 4_000_000})
    spout = KafkaSpout(kafka_bootstrap, [topic], value_format="json", value_schema="user STRING",
                       on_malformed="dead_letter", dead_letter_topic=dlq)
    sink, handle = run_counts(spark, spout, tmp_path / "ckpt")
    try:
        handle.awaitTermination(180)
    finally:
        handle.stop()
    assert totals(sink) == {"ann": 2, "bob": 1}
    assert [(p.rows, p.malformed_records) for p in handle.progress] == [(6, 3)]
    letters = dead_letter_records(kafka_bootstrap, dlq)
    assert [source_of(list(h.items()))[1:] for h, _, _ in letters] == [(topic, 0, 1), (topic, 0, 3),
                                                                       (topic, 0, 4)]
    (deep_headers, _, deep_value), (big_headers, _, big_value), (_, _, small_value) = letters
    assert deep_value == deep and TRUNCATED not in deep_headers
    assert deep_headers["trident.error"] == (b"value is not JSON matching value_schema (nested deeper than "
                                             b"Python's JSON reader goes: RecursionError)")
    assert big_headers[TRUNCATED] == b'{"value": 1500001}' and big.startswith(big_value)
    assert 900_000 < len(big_value) < 1_000_000
    assert small_value == b"{not json"
