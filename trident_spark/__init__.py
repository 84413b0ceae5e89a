"""trident-spark: Storm Trident's programming model and exactly-once state on PySpark.

Examples
--------
>>> from trident_spark import TridentTopology, Fields
>>> Fields("word", "count")
Fields('word', 'count')
"""

import logging

from trident_spark.arrow_operation import ArrowCombinerAggregator, ArrowFilter, ArrowFunction
from trident_spark.errors import FailedException, TopologyError, TridentSparkError
from trident_spark.fields import Fields, TridentTuple
from trident_spark.grouped import ChainedAggregatorDeclarer, GroupedStream
from trident_spark.joins import JoinOutFieldsMode, JoinType
from trident_spark.operation import TridentCollector
from trident_spark.runner import install_runner
from trident_spark.runtime.spark_runner import SparkRunner
from trident_spark.state.redaction import install_log_redaction
from trident_spark.stream import Stream
from trident_spark.topology import TridentTopology
from trident_spark.trident_state import TridentState

__all__ = [
    "ArrowCombinerAggregator",
    "ArrowFilter",
    "ArrowFunction",
    "ChainedAggregatorDeclarer",
    "FailedException",
    "Fields",
    "GroupedStream",
    "JoinOutFieldsMode",
    "JoinType",
    "Stream",
    "TopologyError",
    "TridentCollector",
    "TridentSparkError",
    "TridentState",
    "TridentTopology",
    "TridentTuple",
]
__version__ = "0.1.0"

# The DSL hands its graphs to a runner and imports none: the package wires the Spark one in
# (it loads the planner and the runtime only when a topology is planned).
install_runner(SparkRunner())
# A library leaves logging to the application: no output unless it configures logging.
logging.getLogger(__name__).addHandler(logging.NullHandler())
# Whatever handlers the application sets, our records show no password, key or token.
install_log_redaction(__name__)
