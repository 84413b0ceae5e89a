"""Spouts: where a stream's batches come from."""

from trident_spark.spout.base import Spout, SpoutRun
from trident_spark.spout.batch_spout import IBatchSpout
from trident_spark.spout.collector import SpoutCollector
from trident_spark.spout.feeder import FeederBatchSpout
from trident_spark.spout.fixed import FixedBatchSpout
from trident_spark.spout.kafka import KafkaSpout
from trident_spark.spout.opaque import IOpaquePartitionedTridentSpout
from trident_spark.spout.partitioned import IPartitionedTridentSpout, ISpoutPartition
from trident_spark.spout.rich_spout import (
    BaseRichSpout,
    IRichSpout,
    OutputFieldsDeclarer,
    RichSpoutBatchExecutor,
    SpoutOutputCollector,
)
from trident_spark.spout.transaction import SpoutContext, TransactionAttempt
from trident_spark.spout.trident_spout import ITridentSpout

__all__ = ["BaseRichSpout", "FeederBatchSpout", "FixedBatchSpout", "IBatchSpout",
           "IOpaquePartitionedTridentSpout", "IPartitionedTridentSpout", "IRichSpout", "ISpoutPartition",
           "ITridentSpout", "KafkaSpout", "OutputFieldsDeclarer", "RichSpoutBatchExecutor", "Spout",
           "SpoutCollector", "SpoutContext", "SpoutOutputCollector", "SpoutRun", "TransactionAttempt"]
