"""The driver's decision when records the stream needs were deleted (retention): fail or skip ahead.

Tansu cannot delete records, so this branch is checked here on the decision
logic, with a stub in place of the broker client.
"""

from __future__ import annotations

import pytest

from trident_spark.errors import DataLossError
from trident_spark.spout.kafka.client import ProbeResult
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import PartitionSample
from trident_spark.spout.kafka.source import KafkaStreamReader

TP = ("events", 0)


class RetentionClient:
    """Partition events[0] now starts at 100: a probe from below that is out of range."""

    def __init__(self) -> None:
        self.probed: list[dict] = []

    def probe(self, starts, sample_bytes):
        self.probed.append(dict(starts))
        if starts[TP] < 100:
            return {TP: ProbeResult(-1, PartitionSample(), out_of_range=True)}
        return {TP: ProbeResult(150, PartitionSample(offsets=list(range(100, 150)), sizes=[10] * 50,
                                                    complete=True))}

    def earliest_offsets(self, partitions):
        return {tp: 100 for tp in partitions}

    def topic_partitions(self):
        return [TP]

    def close(self):
        pass


def reader(fail_on_data_loss: bool) -> tuple[KafkaStreamReader, RetentionClient]:
    config = KafkaSpoutConfig("127.0.0.1:9092", topics=("events",), fail_on_data_loss=fail_on_data_loss)
    made = KafkaStreamReader(config, None)  # type: ignore[arg-type]
    client = RetentionClient()
    made._client = client  # type: ignore[assignment]
    return made, client


def test_deleted_records_fail_naming_topic_partition_and_offsets():
    made, _ = reader(fail_on_data_loss=True)
    with pytest.raises(DataLossError) as info:
        made._probe({TP: 40})
    message = str(info.value)
    assert "events[0] records [40, 100) were deleted (retention or deletion)" in message
    assert "the partition now starts at 100" in message and "127.0.0.1:9092" in message
    assert "fail_on_data_loss=False" in message


def test_without_fail_on_data_loss_the_stream_skips_ahead_and_counts():
    made, client = reader(fail_on_data_loss=False)
    begin = {TP: 40}
    probes, lost = made._probe(begin)
    assert lost == 60
    assert begin == {TP: 100}  # the batch starts at what is still there
    assert probes[TP].high_watermark == 150
    assert client.probed == [{TP: 40}, {TP: 100}]


def test_the_skip_is_recorded_in_the_batch_offsets():
    from pyspark.sql.streaming.datasource import ReadAllAvailable

    made, _ = reader(fail_on_data_loss=False)
    document = made.latestOffset({"offsets": {"events": {"0": 40}}}, ReadAllAvailable())
    made.stop()
    assert document["offsets"] == {"events": {"0": 150}}
    assert document["begin"] == {"events": {"0": 100}}  # replay plans from 100, not 40
    assert document["batch"]["lost"] == 60 and document["batch"]["rows"] == 50
    assert [(r.start, r.until) for r in (p.offset_range for p in made.partitions(
        {"offsets": {"events": {"0": 40}}}, document))] == [(100, 150)]
