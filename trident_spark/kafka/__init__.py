"""Kafka output for Trident topologies: storm-kafka-client's Trident classes, exactly once by txid.

``stream.partitionPersist(factory, fields, TridentKafkaStateUpdater(), [])`` sends each tuple
as a Kafka record: the topic from a :class:`KafkaTopicSelector`, the key, value and headers
from a :class:`TridentTupleToKafkaMapper` (bytes as they are, ``None`` as no key or a null
value, anything else ``str(v)`` in UTF-8).

* ``TridentKafkaStateFactory(..., exactly_once=False)``: Storm's behaviour, at least once.
* ``TridentKafkaStateFactory(..., exactly_once=True)``: one Kafka transaction per partition of
  each batch, tied to the batch's txid; a replayed batch sends nothing its partition already
  committed, and zombie attempts are fenced. ``read_committed`` consumers see each record once.

Modules, one idea each: ``mapper`` (tuple to key, value, headers), ``selector`` (tuple to
topic), ``state`` (the partition's output: Trident's beginCommit / updateState / commit),
``factory`` (the picklable settings), ``broker`` (connections, topic checks, the txid marker).

Examples
--------
>>> from trident_spark.kafka import (TridentKafkaStateFactory, TridentKafkaStateUpdater,
...                                  FieldNameBasedTupleToKafkaMapper, DefaultTopicSelector)
>>> factory = (TridentKafkaStateFactory(bootstrap_servers="127.0.0.1:9092", exactly_once=True)
...            .withKafkaTopicSelector(DefaultTopicSelector("counts"))
...            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))
>>> factory.transactionalId()
'trident-spark-counts'
"""

from .factory import DEFAULT_MARKER_TOPIC, TridentKafkaStateFactory
from .mapper import FieldNameBasedTupleToKafkaMapper, TridentTupleToKafkaMapper, to_bytes
from .selector import (
    DefaultTopicSelector,
    FieldIndexTopicSelector,
    FieldNameTopicSelector,
    KafkaTopicSelector,
)
from .state import KafkaRecord, KafkaRecordError, TridentKafkaState, TridentKafkaStateUpdater

__all__ = [
    "DEFAULT_MARKER_TOPIC",
    "DefaultTopicSelector",
    "FieldIndexTopicSelector",
    "FieldNameBasedTupleToKafkaMapper",
    "FieldNameTopicSelector",
    "KafkaRecord",
    "KafkaRecordError",
    "KafkaTopicSelector",
    "TridentKafkaState",
    "TridentKafkaStateFactory",
    "TridentKafkaStateUpdater",
    "TridentTupleToKafkaMapper",
    "to_bytes",
]
