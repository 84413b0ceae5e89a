"""read_range against a consumer that answers nothing: a log that ends before the range."""

from __future__ import annotations

import pyarrow as pa
import pytest

from trident_spark.errors import DataLossError
from trident_spark.spout.kafka_config import KafkaSpoutConfig
from trident_spark.spout.kafka_offsets import OffsetRange
from trident_spark.spout.kafka_read import _read


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


def read(fail_on_data_loss: bool) -> list[pa.RecordBatch]:
    config = KafkaSpoutConfig("127.0.0.1:9092", topics=("events",), fail_on_data_loss=fail_on_data_loss)
    schema = pa.schema([("value", pa.string())])
    return list(_read(config, schema, OffsetRange("events", 0, 20, 30), EmptyLogConsumer()))


def test_a_range_past_the_end_of_the_log_is_data_loss_naming_it():
    with pytest.raises(DataLossError) as info:
        read(fail_on_data_loss=True)
    message = str(info.value)
    assert "events[0] on 127.0.0.1:9092 now ends before offset 20" in message
    assert "[20, 30)" in message and "fail_on_data_loss=False" in message


def test_without_fail_on_data_loss_the_range_is_skipped():
    assert read(fail_on_data_loss=False) == []
