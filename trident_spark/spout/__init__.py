"""Spouts: where a stream's batches come from."""

from trident_spark.spout.base import Spout, SpoutRun
from trident_spark.spout.kafka.spout import KafkaSpout
from trident_spark.spout.testing.feeder import FeederBatchSpout
from trident_spark.spout.testing.fixed import FixedBatchSpout
from trident_spark.spout.user.collector import SpoutCollector
from trident_spark.spout.user.ibatch_spout import IBatchSpout
from trident_spark.spout.user.opaque import IOpaquePartitionedTridentSpout
from trident_spark.spout.user.partitioned import IPartitionedTridentSpout, ISpoutPartition
from trident_spark.spout.user.rich_spout import (
    BaseRichSpout,
    IRichSpout,
    OutputFieldsDeclarer,
    RichSpoutBatchExecutor,
    SpoutOutputCollector,
)
from trident_spark.spout.user.transaction import SpoutContext, TransactionAttempt
from trident_spark.spout.user.trident_spout import ITridentSpout

__all__ = ["BaseRichSpout", "FeederBatchSpout", "FixedBatchSpout", "IBatchSpout",
           "IOpaquePartitionedTridentSpout", "IPartitionedTridentSpout", "IRichSpout", "ISpoutPartition",
           "ITridentSpout", "KafkaSpout", "OutputFieldsDeclarer", "RichSpoutBatchExecutor", "Spout",
           "SpoutCollector", "SpoutContext", "SpoutOutputCollector", "SpoutRun", "TransactionAttempt"]
