"""Spouts: where a stream's batches come from."""

from trident_spark.spout.base import Spout, SpoutRun
from trident_spark.spout.feeder import FeederBatchSpout
from trident_spark.spout.fixed import FixedBatchSpout
from trident_spark.spout.kafka import KafkaSpout

__all__ = ["FeederBatchSpout", "FixedBatchSpout", "KafkaSpout", "Spout", "SpoutRun"]
