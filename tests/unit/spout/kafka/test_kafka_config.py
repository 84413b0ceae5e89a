"""KafkaSpout settings: validation messages, the Spark schema, librdkafka settings, JSON."""

from __future__ import annotations

import pytest

from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.config import (
    CONSUMER_DEFAULTS,
    KafkaSpoutConfig,
    parse_trigger_delay,
)

BROKER = "127.0.0.1:9092"


def config(**kwargs):
    kwargs.setdefault("topics", ("t",))
    return KafkaSpoutConfig(BROKER, **kwargs)


# --- validation ------------------------------------------------------------------------


@pytest.mark.parametrize("bootstrap", ["", None])
def test_bootstrap_servers_required(bootstrap):
    expected = r"bootstrap_servers=\.\.\.\) is required, e\.g\. '127\.0\.0\.1:9092'"
    with pytest.raises(ValueError, match=expected):
        KafkaSpoutConfig(bootstrap, topics=("t",))


def test_topics_and_pattern_both_given():
    with pytest.raises(ValueError, match=r"give exactly one of topics=\[\.\.\.\] or pattern='regex'"):
        KafkaSpoutConfig(BROKER, topics=("t",), pattern="t.*")


def test_neither_topics_nor_pattern():
    with pytest.raises(ValueError, match="give exactly one of topics"):
        KafkaSpoutConfig(BROKER)
    with pytest.raises(ValueError, match="give exactly one of topics"):
        KafkaSpout(BROKER)


def test_bad_pattern_regex():
    with pytest.raises(ValueError) as info:
        KafkaSpoutConfig(BROKER, pattern="events[")
    assert str(info.value).startswith(
        "KafkaSpout(pattern='events[') is not a valid regex: unterminated character set")


@pytest.mark.parametrize("offsets", ["oldest", "EARLIEST", ""])
def test_bad_starting_offsets(offsets):
    with pytest.raises(ValueError) as info:
        config(starting_offsets=offsets)
    message = str(info.value)
    assert f"KafkaSpout(starting_offsets={offsets!r})" in message
    assert "use 'earliest', 'latest' or {topic: {partition: offset}}" in message
    assert "offset -2 = earliest, -1 = latest" in message


@pytest.mark.parametrize(
    "name",
    ["max_fetch_bytes", "max_offsets_per_trigger", "min_offsets_per_trigger", "min_partitions",
     "size_sample_bytes", "arrow_batch_rows"],
)
@pytest.mark.parametrize("value", [0, -5, 1.5, "100"])
def test_limits_must_be_positive_integers(name, value):
    with pytest.raises(ValueError, match=rf"KafkaSpout\({name}={value!r}\) must be a positive integer"):
        config(**{name: value})


def test_min_offsets_exceeding_max_offsets():
    with pytest.raises(ValueError, match="min_offsets_per_trigger=500 exceeds max_offsets_per_trigger=100"):
        config(min_offsets_per_trigger=500, max_offsets_per_trigger=100)


def test_min_offsets_equal_to_max_offsets_is_fine():
    assert config(min_offsets_per_trigger=100, max_offsets_per_trigger=100).max_offsets_per_trigger == 100


def test_json_needs_value_schema():
    with pytest.raises(ValueError, match=r"value_format='json'\) needs value_schema=, a Spark DDL string"):
        config(value_format="json")


@pytest.mark.parametrize(
    ("kwargs", "fragment"),
    [
        ({"value_format": "xml"},
         "KafkaSpout(value_format='xml'): use 'str', 'bytes', 'json', 'avro' or 'protobuf'"),
        ({"key_format": "json"}, "KafkaSpout(key_format='json'): use 'str', 'bytes', 'avro' or 'protobuf'"),
        ({"on_malformed": "drop"}, "KafkaSpout(on_malformed='drop'): use 'fail', 'skip' or 'dead_letter'"),
    ],
)
def test_bad_formats(kwargs, fragment):
    with pytest.raises(ValueError) as info:
        config(**kwargs)
    assert fragment in str(info.value)


@pytest.mark.parametrize(
    ("option", "reason"),
    [
        ("enable.auto.commit", "tracks offsets in Spark's checkpoint"),
        ("auto.offset.reset", "fail_on_data_loss="),
        ("enable.partition.eof", "end-of-partition events"),
        ("bootstrap.servers", "pass bootstrap_servers= instead"),
        ("group.id", "never joins a consumer group"),
    ],
)
def test_reserved_kafka_options_are_refused(option, reason):
    with pytest.raises(ValueError) as info:
        config(kafka_options={option: "x"})
    message = str(info.value)
    assert f"KafkaSpout(kafka_options={{{option!r}: ...}}) is not allowed" in message
    assert reason in message


def test_bad_engine():
    with pytest.raises(ValueError, match=r"KafkaSpout\(engine='scala'\): use 'python' or 'jvm'"):
        KafkaSpout(BROKER, ["t"], engine="scala")


def test_bad_timeout_duration():
    with pytest.raises(ValueError, match=r"KafkaSpout\(timeout=\): cannot read 'soon' as a duration"):
        KafkaSpout(BROKER, ["t"], timeout="soon")


# --- schema_ddl ------------------------------------------------------------------------

BASE_COLUMNS = "topic STRING, partition INT, offset BIGINT, timestamp TIMESTAMP"


def test_schema_default_is_text_key_and_value():
    assert config().schema_ddl() == f"key STRING, value STRING, {BASE_COLUMNS}"


def test_schema_bytes():
    assert (config(value_format="bytes", key_format="bytes").schema_ddl()
            == f"key BINARY, value BINARY, {BASE_COLUMNS}")


def test_schema_json_value_becomes_a_struct():
    ddl = config(value_format="json", value_schema="user STRING, clicks INT").schema_ddl()
    assert ddl == f"key STRING, value STRUCT<user: STRING, clicks: INT>, {BASE_COLUMNS}"


def test_schema_json_with_nested_types_keeps_their_commas():
    ddl = config(value_format="json",
                 value_schema="id BIGINT, tags ARRAY<STRING>, price DECIMAL(10, 2), "
                              "m MAP<STRING, INT>, s STRUCT<a: INT, b: STRING>").schema_ddl()
    assert ddl.startswith(
        "key STRING, value STRUCT<id: BIGINT, tags: ARRAY<STRING>, price: DECIMAL(10, 2), "
        "m: MAP<STRING, INT>, s: STRUCT<a: INT, b: STRING>>, topic STRING"
    )


def test_schema_json_accepts_struct_style_colons():
    ddl = config(value_format="json", value_schema="user: STRING, clicks: INT").schema_ddl()
    assert "value STRUCT<user: STRING, clicks: INT>" in ddl


def test_schema_headers_column():
    assert (config(include_headers=True).schema_ddl()
            == f"key STRING, value STRING, {BASE_COLUMNS}, headers ARRAY<STRUCT<key: STRING, value: BINARY>>")


def test_schema_malformed_column_when_skipping():
    assert (config(on_malformed="skip").schema_ddl()
            == f"key STRING, value STRING, {BASE_COLUMNS}, malformed STRING")
    assert config(on_malformed="skip", include_headers=True).schema_ddl().endswith(
        "headers ARRAY<STRUCT<key: STRING, value: BINARY>>, malformed STRING")


# --- consumer_conf ---------------------------------------------------------------------


def test_consumer_conf_defaults():
    conf = config().consumer_conf()
    assert conf["bootstrap.servers"] == BROKER
    assert conf["fetch.queue.backoff.ms"] == 10
    assert conf["enable.auto.commit"] is False
    assert conf["enable.partition.eof"] is True
    assert conf["auto.offset.reset"] == "error"
    assert conf == {"bootstrap.servers": BROKER, **CONSUMER_DEFAULTS}


def test_consumer_conf_passes_user_options_through_and_overrides_win():
    options = {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN", "sasl.username": "u",
               "sasl.password": "p", "fetch.queue.backoff.ms": 50}
    conf = config(kafka_options=options).consumer_conf(**{"queued.min.messages": 1000})
    assert {k: conf[k] for k in options} == options
    assert conf["queued.min.messages"] == 1000
    assert conf["enable.auto.commit"] is False


def test_consumer_conf_does_not_change_the_defaults():
    config(kafka_options={"fetch.queue.backoff.ms": 99}).consumer_conf()
    assert CONSUMER_DEFAULTS["fetch.queue.backoff.ms"] == 10


# --- JSON round trip -------------------------------------------------------------------


def test_to_json_from_json_round_trip():
    original = KafkaSpoutConfig(
        "a:1,b:2", topics=("x", "y"), starting_offsets={"x": {"0": 5, "1": -2}},
        max_fetch_bytes=100_000, max_offsets_per_trigger=10, min_offsets_per_trigger=5,
        max_trigger_delay_s=3.5, min_partitions=4, value_format="json", value_schema="a INT",
        key_format="bytes", include_headers=True, fail_on_data_loss=False, on_malformed="skip",
        kafka_options={"security.protocol": "SSL"}, size_sample_bytes=1024, timeout_s=2.0,
        arrow_batch_rows=100,
    )
    restored = KafkaSpoutConfig.from_json(original.to_json())
    assert restored == original
    assert restored.topics == ("x", "y")


def test_round_trip_of_a_pattern_subscription():
    original = KafkaSpoutConfig(BROKER, pattern=r"events-\d+")
    assert KafkaSpoutConfig.from_json(original.to_json()) == original


# --- KafkaSpout ------------------------------------------------------------------------


def test_spout_fields():
    assert KafkaSpout(BROKER, ["t"]).fields == ["key", "value", "topic", "partition", "offset", "timestamp"]
    assert KafkaSpout(BROKER, ["t"], include_headers=True).fields == [
        "key", "value", "topic", "partition", "offset", "timestamp", "headers"]


def test_spout_fields_leave_out_the_internal_malformed_column():
    assert "malformed" not in KafkaSpout(BROKER, ["t"], on_malformed="skip").fields


def test_spout_accepts_one_topic_as_a_string():
    assert KafkaSpout(BROKER, "sentences").config.topics == ("sentences",)


def test_spout_normalises_starting_offsets_partitions_to_strings():
    spout = KafkaSpout(BROKER, ["t"], starting_offsets={"t": {0: 5, "1": -1, 2: "7"}})
    assert spout.config.starting_offsets == {"t": {"0": 5, "1": -1, "2": 7}}


@pytest.mark.parametrize(
    ("delay", "seconds"),
    [("15m", 900.0), ("30 seconds", 30.0), ("500ms", 0.5), (2, 2.0), (1.5, 1.5), ("2 hours", 7200.0)],
)
def test_spout_max_trigger_delay(delay, seconds):
    assert KafkaSpout(BROKER, ["t"], max_trigger_delay=delay).config.max_trigger_delay_s == seconds


def test_spout_default_trigger_delay_is_fifteen_minutes():
    assert KafkaSpout(BROKER, ["t"]).config.max_trigger_delay_s == 900.0


def test_bad_trigger_delay():
    with pytest.raises(ValueError, match=r"KafkaSpout\(max_trigger_delay=\): cannot read 'forever'"):
        parse_trigger_delay("forever")


def test_spout_timeout():
    assert KafkaSpout(BROKER, ["t"], timeout="5s").config.timeout_s == 5.0


def test_spout_repr():
    assert repr(KafkaSpout(BROKER, ["a", "b"])) == "KafkaSpout('127.0.0.1:9092', topics=['a', 'b'])"
    assert repr(KafkaSpout(BROKER, pattern="e.*")) == "KafkaSpout('127.0.0.1:9092', pattern='e.*')"


def test_spout_engine_default_is_python():
    assert KafkaSpout(BROKER, ["t"]).engine == "python"
    assert KafkaSpout(BROKER, ["t"], engine="jvm").engine == "jvm"


def test_spout_construction_opens_no_connection():
    # a port nothing listens on: building the spout (and its config) must not connect
    spout = KafkaSpout("127.0.0.1:1", ["t"], timeout=0.1)
    assert spout.config.address == "127.0.0.1:1"


def test_a_bool_is_not_a_limit():
    with pytest.raises(ValueError, match=r"KafkaSpout\(max_fetch_bytes=True\) must be a positive integer"):
        KafkaSpoutConfig("127.0.0.1:9092", topics=("t",), max_fetch_bytes=True)
