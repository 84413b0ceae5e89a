"""Avro records in through Kafka (Apache Kafka) and Spark: decoded into the stream's ``value`` struct,
from a schema in code or Confluent's wire format with an in-process Schema Registry (a real HTTP
server in this process: tests/schema_registry_server.py); malformed records sent to the
dead-letter topic exactly once, also when the batch is replayed."""

from __future__ import annotations

import io
import json
import sys
from pathlib import Path

import fastavro
import pytest
from pyspark import cloudpickle

from tests.integration.spout.test_dead_letter_writes import dead_letters
from tests.schema_registry_server import schema_registry
from trident_spark import FailedException, TridentTopology
from trident_spark.builtin import Count
from trident_spark.local.kafka import produce
from trident_spark.operation import BaseFunction
from trident_spark.spout import KafkaSpout
from trident_spark.spout.formats.schema_registry import wire_format

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])

CLICK_V1 = {"type": "record", "name": "Click", "namespace": "shop",
            "fields": [{"name": "user", "type": "string"}]}
CLICK_V2 = {"type": "record", "name": "Click", "namespace": "shop",
            "fields": [{"name": "user", "type": "string"}, {"name": "clicks", "type": "int", "default": 0}]}


def avro(schema, record) -> bytes:
    out = io.BytesIO()
    fastavro.schemaless_writer(out, fastavro.parse_schema(schema), record)
    return out.getvalue()


class UserOf(BaseFunction):
    """The user of a click; raises FailedException the first time it is called in batch 0, so
    the whole batch is replayed after its read tasks wrote their dead letters."""

    def __init__(self, marker: Path | None = None) -> None:
        self.marker = None if marker is None else str(marker)

    def prepare(self, conf, context):
        self.context = context

    def execute(self, tuple, collector):
        if self.marker is not None and self.context.txid == 0 and not Path(self.marker).exists():
            Path(self.marker).write_text("failed once")
            raise FailedException("replay the batch")
        value = tuple.getValue(0)
        collector.emit([value["user"], value["clicks"]])


def test_avro_schema_in_code_counted_per_user(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    records = [(None, avro(CLICK_V2, {"user": user, "clicks": n}), n % 2)
               for n, user in enumerate(["ann", "bob", "ann", "cy", "ann", "bob"])]
    produce(kafka_bootstrap, topic, [*records, (None, b"\x06ann", 0)])  # the last lacks its clicks
    spout = KafkaSpout(kafka_bootstrap, [topic], value_format="avro", value_schema=CLICK_V2,
                       on_malformed="skip")
    topology = TridentTopology()
    counts = (topology.newStream("avro_code", spout).each(["value"], UserOf(), ["user", "clicks"])
              .groupBy(["user"]).aggregate(Count(), ["count"]).collect())
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        handle.awaitTermination(120)
    finally:
        handle.stop()
    totals: dict[str, int] = {}
    for t in counts.tuples:
        totals[t["user"]] = totals.get(t["user"], 0) + t["count"]
    assert totals == {"ann": 3, "bob": 2, "cy": 1}
    assert sum(p.malformed_records for p in handle.progress) == 1


def test_wire_format_with_a_registry_and_dead_letters_once_across_a_replay(spark, kafka_bootstrap, new_topic,
                                                                           tmp_path):
    topic, dlq = new_topic(partitions=2), new_topic(prefix="dlq")
    with schema_registry() as registry:
        v1 = registry.register(f"{topic}-value", json.dumps(CLICK_V1))
        v2 = registry.register(f"{topic}-value", json.dumps(CLICK_V2))
        k = registry.register(f"{topic}-key", '"string"')  # keys: Avro strings, read from subject <topic>-key

        def key(text: str) -> bytes:
            return wire_format(k, avro("string", text))

        good = [(key("k1"), wire_format(v1, avro(CLICK_V1, {"user": "old"})), 0),
                (key("k2"), wire_format(v2, avro(CLICK_V2, {"user": "ann", "clicks": 4})), 1),
                (key("k3"), wire_format(v2, avro(CLICK_V2, {"user": "bob", "clicks": 2})), 0)]
        bad = [(key("b1"), b'{"user": "json"}', 0),                               # not wire format
               (key("b2"), wire_format(404, avro(CLICK_V1, {"user": "x"})), 1),   # an id the registry lacks
               (b"b3", wire_format(v2, avro(CLICK_V2, {"user": "cy", "clicks": 1})), 1)]  # a key not framed
        produce(kafka_bootstrap, topic, [good[0], bad[0], good[1], bad[1], good[2], bad[2]])
        spout = KafkaSpout(kafka_bootstrap, [topic], value_format="avro", key_format="avro",
                           schema_registry_url=registry.url, on_malformed="dead_letter",
                           dead_letter_topic=dlq)
        topology = TridentTopology()
        sink = (topology.newStream("avro_registry", spout).shuffle()
                .each(["value"], UserOf(tmp_path / "failed"), ["user", "clicks"]).collect())
        handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
        try:
            handle.awaitTermination(120)
        finally:
            handle.stop()
    assert (tmp_path / "failed").exists()  # batch 0 was replayed
    assert sorted((t["key"], t["user"], t["clicks"]) for t in sink.tuples) == [
        ("k1", "old", 0), ("k2", "ann", 4), ("k3", "bob", 2)]
    # The replay read the source again: the batch's rows and malformed records, counted once.
    assert [(p.rows, p.malformed_records) for p in handle.progress] == [(6, 3)]
    letters = dead_letters(kafka_bootstrap, dlq)
    assert sorted((key, value) for _, key, value in letters) == sorted((k, v) for k, v, _ in bad)
    checkpoint = {source[0] for source, _, _ in letters}
    assert len(checkpoint) == 1 and checkpoint.pop().endswith("avro_registry")
    assert sorted(source[1:] for source, _, _ in letters) == [(topic, 0, 1), (topic, 1, 1), (topic, 1, 2)]
