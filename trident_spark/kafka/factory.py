"""storm-kafka-client's ``TridentKafkaStateFactory``: settings of a Kafka output, picklable.

Built on the driver with Storm's ``with*`` calls, pickled to Spark's executors with the
topology, where ``makeState`` makes each partition's :class:`~.state.TridentKafkaState`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from trident_spark.state import StateFactory
from trident_spark.state.errors import StateConfigError
from trident_spark.state.redaction import redact_options, redact_text

from .mapper import TridentTupleToKafkaMapper
from .selector import DefaultTopicSelector, KafkaTopicSelector
from .state import TridentKafkaState

__all__ = ["DEFAULT_MARKER_TOPIC", "TridentKafkaStateFactory"]

#: The topic whose partition 0 carries each exactly-once partition's committed txid (as a
#: consumer group's offset; no record is written to it). Created with 1 partition if missing.
DEFAULT_MARKER_TOPIC = "trident-spark-txids"

_ID = re.compile(r"[A-Za-z0-9._-]+")


class TridentKafkaStateFactory(StateFactory):
    """Writes a stream's tuples to Kafka with ``partitionPersist`` (storm-kafka-client's
    ``TridentKafkaStateFactory``), at least once (Storm's behaviour) or exactly once.

    Parameters
    ----------
    bootstrap_servers : str, optional
        The brokers, ``"host:port,host:port"``; or give ``bootstrap.servers`` in
        :meth:`withProducerProperties` (Storm's way).
    exactly_once : bool, default False
        ``False``: records are sent as the batch runs, ``commit`` waits for them, a failed
        delivery replays the batch (which may send records again). ``True``: each partition of
        each batch is one Kafka transaction, tied to the batch's txid; a replayed batch sends
        nothing that was committed, so a ``read_committed`` consumer sees every record once.
        Needs a broker with transactions.
    transactional_id : str, optional
        Exactly once: the prefix of each partition's ``transactional.id`` (``<prefix>-<partition>``)
        and consumer-group name (the committed-txid marker). Keep it for the life of the
        checkpoint; a new checkpoint needs a new one. Default ``trident-spark-<topic>`` for a
        :class:`DefaultTopicSelector`; required with any other selector, and whenever two
        topologies write the same topic.
    marker_topic : str, default "trident-spark-txids"
        Exactly once: the topic whose partition 0 carries the markers (created with 1 partition
        if missing; no record is written to it).
    txid_offset : int, default 0
        Added to each batch id before comparing with the marker (as the built-in states'
        ``txid_offset``): restart an existing output on a new checkpoint with it.
    timeout : float, default 30
        Seconds to wait for the broker (metadata, ``init_transactions``, a commit, a flush).

    Examples
    --------
    >>> from trident_spark.kafka import (TridentKafkaStateFactory, DefaultTopicSelector,
    ...                                  FieldNameBasedTupleToKafkaMapper, TridentKafkaStateUpdater)
    >>> factory = (TridentKafkaStateFactory(bootstrap_servers="127.0.0.1:9092", exactly_once=True)
    ...            .withKafkaTopicSelector(DefaultTopicSelector("counts"))
    ...            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count"))
    ...            .withProducerProperties({"sasl.password": "s3cret", "linger.ms": 20}))
    >>> factory
    TridentKafkaStateFactory(127.0.0.1:9092, exactly once, transactional_id='trident-spark-counts', \
topic selector DefaultTopicSelector('counts'), mapper FieldNameBasedTupleToKafkaMapper('word', 'count'), \
producer properties {'sasl.password': '***', 'linger.ms': 20})
    >>> # stream.partitionPersist(factory, ["word", "count"], TridentKafkaStateUpdater(), [])
    """

    def __init__(self, bootstrap_servers: str | None = None, *, exactly_once: bool = False,
                 transactional_id: str | None = None, marker_topic: str = DEFAULT_MARKER_TOPIC,
                 txid_offset: int = 0, timeout: float = 30.0) -> None:
        if bootstrap_servers is not None and not (isinstance(bootstrap_servers, str) and bootstrap_servers):
            raise StateConfigError(f"TridentKafkaStateFactory: bootstrap_servers must be 'host:port[,...]', "
                                   f"got {bootstrap_servers!r}")
        if not isinstance(exactly_once, bool):
            raise StateConfigError(f"TridentKafkaStateFactory: exactly_once must be True or False, "
                                   f"got {exactly_once!r}")
        if transactional_id is not None and not (isinstance(transactional_id, str)
                                                 and _ID.fullmatch(transactional_id)):
            raise StateConfigError(f"TridentKafkaStateFactory: transactional_id must be letters, digits, "
                                   f"'.', '_' or '-', got {transactional_id!r}")
        if not isinstance(marker_topic, str) or not _ID.fullmatch(marker_topic):
            raise StateConfigError(f"TridentKafkaStateFactory: marker_topic must be a topic name, "
                                   f"got {marker_topic!r}")
        if not isinstance(txid_offset, int) or isinstance(txid_offset, bool) or txid_offset < 0:
            raise StateConfigError(f"TridentKafkaStateFactory: txid_offset must be an int >= 0, "
                                   f"got {txid_offset!r}")
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise StateConfigError(f"TridentKafkaStateFactory: timeout must be seconds > 0, got {timeout!r}")
        self.bootstrap_servers = bootstrap_servers
        self.exactly_once = exactly_once
        self.transactional_id = transactional_id
        self.marker_topic = marker_topic
        self.txid_offset = txid_offset
        self.timeout = float(timeout)
        self.mapper: TridentTupleToKafkaMapper = None  # type: ignore[assignment]  # set by with...()
        self.topicSelector: KafkaTopicSelector = None  # type: ignore[assignment]
        self.producerProperties: dict[str, Any] = {}

    # -- Storm's builder calls ------------------------------------------------------------------

    def withTridentTupleToKafkaMapper(self, mapper: TridentTupleToKafkaMapper) -> TridentKafkaStateFactory:
        """The tuple-to-record mapper (key, value, headers); returns this factory."""
        if not all(callable(getattr(mapper, m, None)) for m in ("getKeyFromTuple", "getMessageFromTuple")):
            raise StateConfigError(f"withTridentTupleToKafkaMapper: expected a TridentTupleToKafkaMapper "
                                   f"(getKeyFromTuple, getMessageFromTuple), got {mapper!r}")
        if not isinstance(mapper, TridentTupleToKafkaMapper):
            mapper = _DuckMapper(mapper)
        self.mapper = mapper
        return self

    def withKafkaTopicSelector(self, selector: KafkaTopicSelector) -> TridentKafkaStateFactory:
        """The topic selector; returns this factory."""
        if not callable(getattr(selector, "getTopic", None)):
            raise StateConfigError("withKafkaTopicSelector: expected a KafkaTopicSelector (getTopic(tuple)), "
                                   f"got {selector!r}")
        self.topicSelector = selector
        return self

    def withProducerProperties(self, props: Mapping[str, Any]) -> TridentKafkaStateFactory:
        """librdkafka producer settings (``{"acks": "all", "sasl.password": ...}``), on top of the
        defaults (idempotence on, Java's ``murmur2_random`` partitioner, ``linger.ms`` 5); returns
        this factory. Secret values never show in reprs, errors or logs."""
        if not isinstance(props, Mapping) or not all(isinstance(k, str) for k in props):
            raise StateConfigError(f"withProducerProperties: expected a dict of librdkafka settings, "
                                   f"got {type(props).__name__}")
        if "transactional.id" in props:
            raise StateConfigError("withProducerProperties: do not set 'transactional.id'; give "
                                   "TridentKafkaStateFactory(exactly_once=True, transactional_id=PREFIX): "
                                   "each partition gets PREFIX-<partition>")
        self.producerProperties = dict(props)
        return self

    # -- settings -------------------------------------------------------------------------------

    def bootstrap(self) -> str:
        """The bootstrap servers, from the constructor or ``bootstrap.servers`` in the properties."""
        found = self.bootstrap_servers or self.producerProperties.get("bootstrap.servers")
        if not found:
            raise StateConfigError("TridentKafkaStateFactory: no brokers: give bootstrap_servers= or "
                                   "'bootstrap.servers' in withProducerProperties")
        return str(found)

    def transactionalId(self) -> str:
        """Exactly once: the prefix of each partition's ``transactional.id`` and marker group."""
        if self.transactional_id is not None:
            return self.transactional_id
        selector = self.topicSelector
        if isinstance(selector, DefaultTopicSelector) and _ID.fullmatch(selector.topicName):
            return f"trident-spark-{selector.topicName}"
        raise StateConfigError(
            f"TridentKafkaStateFactory(exactly_once=True) with the topic selector {self.topicSelector!r} "
            "needs transactional_id=NAME: a name kept for the life of the checkpoint, different for "
            "every topology output")

    def check(self) -> None:
        """Raise :class:`StateConfigError` unless the factory has a mapper, a selector and brokers."""
        if self.mapper is None:
            raise StateConfigError("TridentKafkaStateFactory: no mapper; call .withTridentTupleToKafkaMapper("
                                   "FieldNameBasedTupleToKafkaMapper(key_field, value_field))")
        if self.topicSelector is None:
            raise StateConfigError("TridentKafkaStateFactory: no topic selector; call "
                                   ".withKafkaTopicSelector(DefaultTopicSelector(topic))")
        self.bootstrap()
        if self.exactly_once:
            self.transactionalId()

    def check_available(self) -> None:
        """On the driver before the run starts: the settings (:meth:`check`), the broker answers
        within ``timeout`` (else :class:`~trident_spark.state.StateUnavailableError` naming it),
        and a :class:`DefaultTopicSelector`'s topic exists (else ``StateConfigError``)."""
        self.check()
        probe = TridentKafkaState(self, 0, 1)
        try:
            probe.check_broker(self.topicSelector.topicName
                               if isinstance(self.topicSelector, DefaultTopicSelector) else None)
        finally:
            probe.close()

    def makeState(self, conf: dict[str, Any], partition_index: int, num_partitions: int) -> TridentKafkaState:
        """Trident's ``makeState``: partition ``partition_index``'s Kafka output (connects at its
        first batch)."""
        self.check()
        return TridentKafkaState(self, partition_index, num_partitions)

    def __repr__(self) -> str:
        parts = [redact_text(self.bootstrap_servers or str(self.producerProperties.get("bootstrap.servers")))]
        if self.exactly_once:
            try:
                parts += ["exactly once", f"transactional_id={self.transactionalId()!r}"]
            except StateConfigError:
                parts += ["exactly once", "transactional_id=None"]
        else:
            parts.append("at least once")
        parts.append(f"topic selector {self.topicSelector!r}")
        parts.append(f"mapper {self.mapper!r}")
        if self.producerProperties:
            parts.append(f"producer properties {redact_options(self.producerProperties)}")
        return f"TridentKafkaStateFactory({', '.join(parts)})"


class _DuckMapper(TridentTupleToKafkaMapper):
    """A mapper object with Storm's two methods that does not subclass the ABC."""

    def __init__(self, mapper: Any) -> None:
        self.inner = mapper

    def getKeyFromTuple(self, tuple: Any) -> Any:
        return self.inner.getKeyFromTuple(tuple)

    def getMessageFromTuple(self, tuple: Any) -> Any:
        return self.inner.getMessageFromTuple(tuple)

    def getHeadersFromTuple(self, tuple: Any) -> Any:
        get = getattr(self.inner, "getHeadersFromTuple", None)
        return get(tuple) if callable(get) else None

    def fieldFor(self, part: str) -> str | None:
        get = getattr(self.inner, "fieldFor", None)
        return get(part) if callable(get) else None

    def __repr__(self) -> str:
        return repr(self.inner)
