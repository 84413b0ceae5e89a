"""Protobuf records in through Kafka (Apache Kafka) and Spark, in Confluent's wire format with an
in-process Schema Registry: decoded into the stream's ``value`` struct; malformed ones to the
dead-letter topic."""

from __future__ import annotations

import sys

import pytest
from pyspark import cloudpickle

from tests.integration.spout.test_dead_letter_writes import dead_letters
from tests.schema_registry_server import schema_registry
from trident_spark import TridentTopology
from trident_spark.local.kafka import produce
from trident_spark.spout import KafkaSpout
from trident_spark.spout.formats.protobuf import example_click_class
from trident_spark.spout.formats.schema_registry import wire_format

pytestmark = pytest.mark.integration

cloudpickle.register_pickle_by_value(sys.modules[__name__])


def test_protobuf_wire_format_into_the_value_struct(spark, kafka_bootstrap, new_topic, tmp_path):
    click = example_click_class()
    topic, dlq = new_topic(partitions=2), new_topic(prefix="dlq")
    with schema_registry() as registry:
        schema_id = registry.register(f"{topic}-value", 'syntax = "proto3"; package shop; message Click {}',
                                      "PROTOBUF")
        bodies = [click(user=u, clicks=n, kind=n % 2).SerializeToString()
                  for n, u in enumerate(["ann", "bob", "cy"])]
        good = [(None, wire_format(schema_id, b"\x00" + body), n % 2) for n, body in enumerate(bodies)]
        bad = [(b"b1", wire_format(schema_id, b"\x00\xff\xff"), 0), (b"b2", b"\x0a\x03ann", 1)]
        produce(kafka_bootstrap, topic, [*good, *bad])
        spout = KafkaSpout(kafka_bootstrap, [topic], value_format="protobuf", value_schema=click,
                           schema_registry_url=registry.url, on_malformed="dead_letter",
                           dead_letter_topic=dlq)
        topology = TridentTopology()
        sink = topology.newStream("protobuf_clicks", spout).collect()
        handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
        try:
            handle.awaitTermination(120)
        finally:
            handle.stop()
    assert sorted((t["value"]["user"], t["value"]["clicks"], t["value"]["kind"]) for t in sink.tuples) == [
        ("ann", 0, "VIEW"), ("bob", 1, "BUY"), ("cy", 2, "VIEW")]
    assert sum(p.malformed_records for p in handle.progress) == 2
    assert sorted((key, value) for _, key, value in dead_letters(kafka_bootstrap, dlq)) == [
        (k, v) for k, v, _ in bad]
