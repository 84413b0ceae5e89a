"""KafkaSpout options that cannot work fail when the spout is built (or its query starts), each
naming the option, the topic and partition, and what to write instead."""

from __future__ import annotations

import doctest
import importlib

import pytest

from trident_spark.errors import DataLossError, OffsetOutOfRangeError
from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.client import ProbeResult
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import PartitionSample
from trident_spark.spout.kafka.source import KafkaStreamReader

BROKER = "127.0.0.1:9092"
STARTING_EXAMPLE = ("starting_offsets={'words': {0: 1200, 1: -2}} (partition 0 from offset 1200, "
                    "partition 1 from the earliest)")
ENDING_EXAMPLE = ("ending_offsets={'words': {0: 5000, 1: -1}} (partition 0 up to offset 5000, "
                  "partition 1 up to the latest)")
SCHEMA_ADVICE = ("Write the fields as 'name TYPE, ...' (Spark DDL), e.g. "
                 "value_schema='user STRING, clicks INT, tags ARRAY<STRING>'")


def spout_error(**options) -> str:
    options.setdefault("topics", ["words"])
    with pytest.raises(ValueError) as info:
        KafkaSpout(BROKER, **options)
    return str(info.value)


# --- the shape of starting_offsets / ending_offsets -----------------------------------------


def test_a_list_of_partitions_instead_of_a_mapping_names_the_shapes_and_an_example():
    assert spout_error(starting_offsets={"words": [0, 1]}) == (
        "KafkaSpout(starting_offsets=...): topic 'words' maps to [0, 1] (list), not to {partition: offset}; "
        "use 'earliest', 'latest' or {topic: {partition: offset}} (offset -2 = earliest, -1 = latest), "
        f"e.g. {STARTING_EXAMPLE}")


def test_ending_offsets_of_the_wrong_shape_name_their_own_shapes():
    assert spout_error(ending_offsets={"words": 500}) == (
        "KafkaSpout(ending_offsets=...): topic 'words' maps to 500 (int), not to {partition: offset}; "
        f"use 'latest' or {{topic: {{partition: offset}}}} (offset -1 = latest), e.g. {ENDING_EXAMPLE}")


@pytest.mark.parametrize("offsets", [[0, 1], 42, None])
def test_something_that_is_neither_a_word_nor_a_mapping(offsets):
    assert spout_error(starting_offsets=offsets) == (
        f"KafkaSpout(starting_offsets={offsets!r}) is not an offset specification: use 'earliest', 'latest' "
        f"or {{topic: {{partition: offset}}}} (offset -2 = earliest, -1 = latest), e.g. {STARTING_EXAMPLE}")


def test_a_json_string_is_pointed_at_the_mapping():
    message = spout_error(starting_offsets='{"words": {"0": 5}}')
    assert message.startswith(
        "KafkaSpout(starting_offsets='{\"words\": {\"0\": 5}}'): use 'earliest', 'latest' or "
        "{topic: {partition: offset}} (offset -2 = earliest, -1 = latest) (a JSON string is not read: pass "
        "the mapping itself), e.g. ")


@pytest.mark.parametrize("partition", ["x", -1, 1.0, True])
def test_a_partition_that_is_not_a_partition_number(partition):
    assert spout_error(starting_offsets={"words": {partition: 5}}) == (
        f"KafkaSpout(starting_offsets=...): words[{partition!r}]: {partition!r} is not a partition number "
        f"(0, 1, ...); write e.g. {STARTING_EXAMPLE}")


@pytest.mark.parametrize("offset", [1.5, True, "soon", None])
def test_an_offset_that_is_not_an_integer(offset):
    assert spout_error(starting_offsets={"words": {0: offset}}) == (
        f"KafkaSpout(starting_offsets=...): words[0] -> {offset!r} is not a partition number and an offset; "
        f"write e.g. {STARTING_EXAMPLE}")


def test_a_topic_name_that_is_not_a_string():
    assert spout_error(starting_offsets={0: {0: 5}}).startswith(
        "KafkaSpout(starting_offsets=...): 0 is not a topic name; use 'earliest', 'latest' or ")


# --- negative offsets: only Kafka's -2 (earliest) and -1 (latest) ------------------------------


def test_minus_five_is_refused_before_librdkafka_sees_it():
    assert spout_error(starting_offsets={"words": {"0": -5}}) == (
        "KafkaSpout(starting_offsets=...): words[0] starts at -5; use an offset >= 0, or -2 for earliest, "
        f"-1 for latest (no other negative value is an offset), e.g. {STARTING_EXAMPLE}")


def test_ending_offsets_allow_only_minus_one():
    assert spout_error(ending_offsets={"words": {1: -5}}) == (
        "KafkaSpout(ending_offsets=...): words[1] ends at -5; use an offset >= 0, or -1 for latest "
        f"(no other negative value is an offset), e.g. {ENDING_EXAMPLE}")


def test_the_valid_forms_are_kept_with_partitions_as_strings():
    spout = KafkaSpout(BROKER, ["words"], starting_offsets={"words": {0: -2, "1": -1, 2: 0, 3: "7"}},
                       ending_offsets={"words": {0: -1, 1: 10}})
    assert spout.config.starting_offsets == {"words": {"0": -2, "1": -1, "2": 0, "3": 7}}
    assert spout.config.ending_offsets == {"words": {"0": -1, "1": 10}}


def test_the_config_checks_offsets_given_to_it_directly():
    with pytest.raises(ValueError, match=r"words\[0\] starts at -3; use an offset >= 0"):
        KafkaSpoutConfig(BROKER, topics=("words",), starting_offsets={"words": {"0": -3}})


def test_an_end_before_the_start_would_read_nothing():
    message = spout_error(starting_offsets={"words": {0: 100, 1: 5}},
                          ending_offsets={"words": {0: 50, 1: -1}})
    assert message == (
        "KafkaSpout: words[0] starts at 100 (starting_offsets) but ends at 50 (ending_offsets), before it "
        "starts, so nothing would be read from it; give an ending offset >= 100, or -1 to end at the latest")
    spout = KafkaSpout(BROKER, ["words"], starting_offsets={"words": {0: 100}},
                       ending_offsets={"words": {0: 100}})
    assert spout.config.ending_offsets == {"words": {"0": 100}}  # empty, but what was asked


# --- offsets for topics the spout does not read --------------------------------------------------


def test_offsets_for_a_topic_that_is_not_subscribed():
    assert spout_error(topics=["words"], starting_offsets={"word": {0: 5}}) == (
        "KafkaSpout(starting_offsets=...) names topic 'word', not among topics=['words']: give offsets only "
        "for the topics the spout reads")


def test_offsets_for_a_topic_the_pattern_does_not_match():
    assert spout_error(topics=None, pattern=r"events-\d+", ending_offsets={"clicks": {0: 5}}) == (
        "KafkaSpout(ending_offsets=...) names topic 'clicks', not matched by pattern='events-\\\\d+': give "
        "offsets only for the topics the spout reads")


# --- value_schema: its shape at build time (Spark's parse: tests/integration/spout) --------------


@pytest.mark.parametrize(("schema", "reason"), [
    ("n INT, word", "field 'word' has no type"),
    ("n INT,, word STRING", "field 2 is empty (two commas?)"),
    ("n INT,", "it ends with a comma"),
    ("   ", "it is empty"),
    ("tags ARRAY<STRING", "a bracket is not closed (expected '>')"),
    ("tags ARRAY<STRING>>", "'>' closes nothing (or the wrong bracket)"),
    ("`user name STRING", "a ` quote is not closed"),
])
def test_a_value_schema_of_the_wrong_shape_is_named_with_an_example(schema, reason):
    assert spout_error(value_format="json", value_schema=schema) == (
        f"KafkaSpout(value_schema={schema!r}) is not a valid Spark schema: {reason}. {SCHEMA_ADVICE}")


def test_a_value_schema_without_value_format_json_would_be_ignored():
    assert spout_error(value_schema="n INT") == (
        "KafkaSpout(value_schema=...) is read only with value_format='json' or 'avro' (values are 'str' "
        "here): add value_format='json', or drop value_schema=")


def test_quoted_field_names_and_comments_with_commas_keep_their_text():
    spout = KafkaSpout(BROKER, ["words"], value_format="json",
                       value_schema="`user name` STRING, `a``b`: INT, n INT COMMENT 'x, y'")
    assert spout.config.schema_ddl().startswith(
        "key STRING, value STRUCT<`user name`: STRING, `a``b`: INT, n: INT COMMENT 'x, y'>, topic STRING")


# --- a starting offset the partition does not hold (when the query starts) ----------------------


class Broker:
    """Topic ``words``: partition p holds offsets [low[p], high[p])."""

    def __init__(self, low: dict[int, int], high: dict[int, int]) -> None:
        self.low, self.high = low, high

    def topic_partitions(self):
        return [("words", p) for p in sorted(self.high)]

    def earliest_offsets(self, partitions):
        return {tp: self.low[tp[1]] for tp in partitions}

    def probe(self, starts, sample_bytes):
        return {tp: ProbeResult(self.high[tp[1]], PartitionSample([start], [10], complete=False))
                for tp, start in starts.items()}

    def close(self):
        pass


def initial_offsets(broker: Broker, **options):
    reader = KafkaStreamReader(KafkaSpoutConfig(BROKER, topics=("words",), **options), None)  # type: ignore[arg-type]
    reader._client = broker  # type: ignore[assignment]
    return reader.initialOffset()


def test_a_starting_offset_past_the_end_names_the_partitions_range_and_what_to_do():
    with pytest.raises(OffsetOutOfRangeError) as info:
        initial_offsets(Broker({0: 0, 1: 0}, {0: 20, 1: 0}), starting_offsets={"words": {"0": 500, "1": 3}})
    assert str(info.value) == (
        "KafkaSpout(starting_offsets=...) on 127.0.0.1:9092: words[0] starts at 500, past the end of the "
        "partition: it holds offsets [0, 20) (high watermark 20); words[1] starts at 3, past the end of the "
        "partition: it holds no records (it is empty at offset 0) (high watermark 0). Give an offset from "
        "the partition's first offset up to its high watermark, or starting_offsets='latest' (-1 for one "
        "partition) to read only new records, or 'earliest' (-2) to read everything it holds")


def test_a_starting_offset_at_the_high_watermark_waits_for_the_next_record():
    document = initial_offsets(Broker({0: 0}, {0: 20}), starting_offsets={"words": {"0": 20}})
    assert document["offsets"] == {"words": {"0": 20}}


def test_a_starting_offset_before_the_first_stored_one_is_data_loss_unless_allowed():
    broker = Broker({0: 10}, {0: 30})
    with pytest.raises(DataLossError) as info:
        initial_offsets(broker, starting_offsets={"words": {"0": 3}})
    assert str(info.value) == (
        "KafkaSpout(starting_offsets=...) on 127.0.0.1:9092: words[0] starts at 3, before its first stored "
        "offset 10 (records [3, 10) were deleted by retention or deletion): it holds offsets [10, 30). Give "
        "an offset the partition still holds, or 'earliest' (-2), or set fail_on_data_loss=False to start at "
        "the earliest and count the deleted records as lost")
    allowed = initial_offsets(broker, starting_offsets={"words": {"0": 3}}, fail_on_data_loss=False)
    assert allowed["offsets"] == {"words": {"0": 3}}  # the first batch skips to 10 and counts 7 lost


# --- the docstring examples -----------------------------------------------------------------------


@pytest.mark.parametrize("name", ["trident_spark.spout.kafka.config", "trident_spark.spout.kafka.offsets"])
def test_docstring_examples(name):
    failures, attempted = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0
