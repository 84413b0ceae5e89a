"""engine='jvm': the spout's settings mapped onto the options of Spark's ``kafka`` source."""

from __future__ import annotations

import json

import pytest

from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.jvm import jvm_options

BROKER = "b1:9092,b2:9092"


def options(**kwargs):
    kwargs.setdefault("topics", ("t",))
    measured = {k: kwargs.pop(k) for k in ("partitions", "record_bytes") if k in kwargs}
    return jvm_options(KafkaSpoutConfig(BROKER, **kwargs), **measured)


def test_minimal_options():
    assert options(topics=("a", "b")) == {
        "kafka.bootstrap.servers": BROKER,
        "subscribe": "a,b",
        "startingOffsets": "earliest",
        "failOnDataLoss": "true",
    }


def test_pattern_becomes_subscribe_pattern():
    opts = options(topics=(), pattern=r"events-\d+")
    assert opts["subscribePattern"] == r"events-\d+"
    assert "subscribe" not in opts


def test_starting_offsets_latest_and_json():
    assert options(starting_offsets="latest")["startingOffsets"] == "latest"
    opts = options(starting_offsets={"t": {"1": -1, "0": 42}})
    assert json.loads(opts["startingOffsets"]) == {"t": {"0": 42, "1": -1}}
    assert opts["startingOffsets"] == '{"t": {"0": 42, "1": -1}}'


def test_fail_on_data_loss_false():
    assert options(fail_on_data_loss=False)["failOnDataLoss"] == "false"


def test_max_fetch_bytes_becomes_max_offsets_per_trigger():
    # 12 partitions x 100,000 B per partition / 1,000-byte records
    opts = options(max_fetch_bytes=100_000, partitions=12, record_bytes=1000.0)
    assert opts["maxOffsetsPerTrigger"] == "1200"


def test_max_fetch_bytes_rounds_down():
    assert options(max_fetch_bytes=1000, partitions=3, record_bytes=300.0)["maxOffsetsPerTrigger"] == "10"


def test_max_fetch_bytes_allows_one_record_per_partition_at_least():
    # records bigger than the budget: still one per partition, as the Python spout does
    assert options(max_fetch_bytes=100, partitions=4, record_bytes=5000.0)["maxOffsetsPerTrigger"] == "4"


def test_the_smaller_of_max_fetch_bytes_and_max_offsets_wins():
    assert options(max_fetch_bytes=100_000, partitions=12, record_bytes=1000.0,
                   max_offsets_per_trigger=500)["maxOffsetsPerTrigger"] == "500"
    assert options(max_fetch_bytes=100_000, partitions=12, record_bytes=1000.0,
                   max_offsets_per_trigger=5000)["maxOffsetsPerTrigger"] == "1200"


def test_max_offsets_per_trigger_alone():
    assert options(max_offsets_per_trigger=777)["maxOffsetsPerTrigger"] == "777"


@pytest.mark.parametrize("measured", [{}, {"partitions": 4}, {"record_bytes": 100.0},
                                      {"partitions": 0, "record_bytes": 100.0}])
def test_max_fetch_bytes_without_measurements_is_an_error(measured):
    with pytest.raises(ValueError, match="max_fetch_bytes on engine='jvm' needs the partition count and "
                                         "the measured record size"):
        options(max_fetch_bytes=1000, **measured)


def test_min_offsets_with_trigger_delay_in_milliseconds():
    opts = options(min_offsets_per_trigger=1000, max_trigger_delay_s=2.5)
    assert opts["minOffsetsPerTrigger"] == "1000"
    assert opts["maxTriggerDelay"] == "2500ms"
    assert options(min_offsets_per_trigger=1)["maxTriggerDelay"] == "900000ms"


def test_trigger_delay_only_with_min_offsets():
    assert "maxTriggerDelay" not in options(max_trigger_delay_s=3.0)


def test_min_partitions_and_headers():
    opts = options(min_partitions=16, include_headers=True)
    assert opts["minPartitions"] == "16"
    assert opts["includeHeaders"] == "true"
    assert "includeHeaders" not in options()
    assert "minPartitions" not in options()


def test_kafka_options_pass_through_with_the_kafka_prefix():
    opts = options(kafka_options={"security.protocol": "SASL_SSL", "sasl.mechanism": "SCRAM-SHA-512",
                                  "request.timeout.ms": 30000, "ssl.endpoint.identification.algorithm": "",
                                  "check.crcs": True})
    assert opts["kafka.security.protocol"] == "SASL_SSL"
    assert opts["kafka.sasl.mechanism"] == "SCRAM-SHA-512"
    assert opts["kafka.request.timeout.ms"] == "30000"
    assert opts["kafka.ssl.endpoint.identification.algorithm"] == ""
    assert opts["kafka.check.crcs"] == "true"  # Java spells booleans in lower case


def test_all_values_are_strings():
    opts = options(max_offsets_per_trigger=5, min_offsets_per_trigger=2, min_partitions=3,
                   include_headers=True, kafka_options={"x.y": 1})
    assert all(isinstance(v, str) for v in opts.values())
