"""read_range against a consumer that answers nothing: a log that ends before the range."""

from __future__ import annotations

import pyarrow as pa
import pytest
from confluent_kafka import KafkaError

from trident_spark.errors import DataLossError
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import OffsetRange
from trident_spark.spout.kafka.read import _read


class EmptyLogConsumer:
    """A broker whose partition now ends at offset 5: fetches return nothing, no error."""

    def assign(self, partitions):
        pass

    def unassign(self):
        pass

    def consume(self, num_messages, timeout):
        return []

    def get_watermark_offsets(self, tp, cached=False, timeout=None):
        return (0, 5)


class OutOfRangeConsumer(EmptyLogConsumer):
    """A broker that answers the fetch with OFFSET_OUT_OF_RANGE; its log holds [low, high)."""

    def __init__(self, low: int, high: int) -> None:
        self.low, self.high = low, high
        self.assigned: list[int] = []

    def assign(self, partitions):
        self.assigned += [tp.offset for tp in partitions]

    def consume(self, num_messages, timeout):
        return [OutOfRange()]

    def get_watermark_offsets(self, tp, cached=False, timeout=None):
        return (self.low, self.high)


class OutOfRange:
    def error(self):
        return KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)

    def offset(self):
        return -1001


PAST_THE_END = (
    "KafkaSpout: events[0] on 127.0.0.1:9092 now ends before offset 20, which the batch reads ([20, 30)): "
    "its log ends at offset 5 (high watermark), so records the batch was planned with are gone (the topic "
    "deleted and re-created, or its log truncated). Set fail_on_data_loss=False to skip such ranges.")


def read(fail_on_data_loss: bool, consumer=None) -> list[pa.RecordBatch]:
    config = KafkaSpoutConfig("127.0.0.1:9092", topics=("events",), fail_on_data_loss=fail_on_data_loss)
    schema = pa.schema([("value", pa.string())])
    return list(_read(config, schema, OffsetRange("events", 0, 20, 30), consumer or EmptyLogConsumer()))


def test_a_range_past_the_end_of_the_log_is_data_loss_naming_it():
    with pytest.raises(DataLossError) as info:
        read(fail_on_data_loss=True)
    message = str(info.value)
    assert "events[0] on 127.0.0.1:9092 now ends before offset 20" in message
    assert "[20, 30)" in message and "fail_on_data_loss=False" in message
    assert message == PAST_THE_END


def test_without_fail_on_data_loss_the_range_is_skipped():
    assert read(fail_on_data_loss=False) == []


def test_an_out_of_range_answer_past_the_log_end_says_so_not_a_backwards_range():
    with pytest.raises(DataLossError) as info:
        read(fail_on_data_loss=True, consumer=OutOfRangeConsumer(0, 5))
    assert str(info.value) == PAST_THE_END  # before: "offsets [20, 0) ... no longer exist"
    assert read(fail_on_data_loss=False, consumer=OutOfRangeConsumer(0, 5)) == []


def test_an_out_of_range_answer_before_the_log_start_is_retention():
    with pytest.raises(DataLossError) as info:
        read(fail_on_data_loss=True, consumer=OutOfRangeConsumer(25, 40))
    assert str(info.value) == (
        "KafkaSpout: offsets [20, 25) of events[0] no longer exist on 127.0.0.1:9092 (retention or "
        "deletion); the batch needs [20, 30). Set fail_on_data_loss=False to skip them.")
