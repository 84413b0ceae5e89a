"""storm-kafka-client's ``TridentKafkaState`` and its updater: a partition's tuples as Kafka records.

Trident calls, per partition of a batch that has tuples, ``beginCommit(txid)``, the
updater's ``updateState`` (here :meth:`TridentKafkaState.updateState`), then ``commit(txid)``.

* At least once (``exactly_once=False``, Storm's behaviour): records are sent as
  ``updateState`` makes them; ``commit`` waits for every delivery, and a failed one fails the
  batch (``FailedException``), which is replayed: a replay may send records again.
* Exactly once (``exactly_once=True``): ``beginCommit`` opens (once) the partition's
  transactional producer, whose ``init_transactions`` fences any older producer of the same
  partition and ends its open transaction, and reads the txid the partition last committed
  (the marker, ``broker.read_marker``). A batch already committed there is skipped whole;
  otherwise ``updateState`` only makes the records and ``commit`` sends them in one Kafka
  transaction that also commits the marker ``txid``. A ``read_committed`` consumer sees each
  batch's records of a partition once, or not yet.

  Why held until ``commit`` rather than sent into a transaction begun at ``beginCommit``: on
  Apache Kafka both are exact (an attempt killed inside its transaction leaves records that
  the next attempt's producer aborts, and the broker hides aborted records from read_committed
  readers), and holding was as fast or faster (``bench/kafka_output.py``, medians of 5 runs of
  200k records: 170k records/s held against 112k sent as made, with one ``updateState`` call
  per batch as the state stage makes; 100k against 93k with four). Held,
  the transaction lasts only as long as the sending, so a slow mapper or updater cannot push
  it past ``transaction.timeout.ms``; and the output stays exact on brokers that serve aborted
  records to read_committed readers (Tansu).
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import FailedException, TridentSparkError
from trident_spark.fields import TridentTuple
from trident_spark.operation import StateUpdater, TridentCollector
from trident_spark.state import State
from trident_spark.state.errors import StateAheadError, StateConfigError, StateUnavailableError
from trident_spark.state.redaction import redact_text

from . import broker
from .mapper import to_bytes

__all__ = ["KafkaRecord", "KafkaRecordError", "TridentKafkaState", "TridentKafkaStateUpdater"]

log = logging.getLogger(__name__)


class KafkaRecordError(TridentSparkError, TypeError):
    """A tuple cannot become a Kafka record: its mapper or topic selector failed, or a value has
    no bytes. The message names the tuple, the part (key, value, header) and its field.

    Examples
    --------
    >>> str(KafkaRecordError("Kafka output: the value of tuple {'word': 'cat'} (field 'count'): "
    ...                      "KeyError: no field"))
    "Kafka output: the value of tuple {'word': 'cat'} (field 'count'): KeyError: no field"
    """


@dataclass(frozen=True)
class KafkaRecord:
    """One record to send: topic, key, value and headers as bytes."""

    topic: str
    key: bytes | None
    value: bytes | None
    headers: list[tuple[str, bytes | None]] | None = None


class TridentKafkaState(State):
    """One partition's Kafka output (storm-kafka-client's ``TridentKafkaState``).

    Made on the executor by :meth:`TridentKafkaStateFactory.makeState
    <trident_spark.kafka.TridentKafkaStateFactory.makeState>` and kept by the process for the
    next batches of the run; it connects at its first ``beginCommit``.

    Attributes
    ----------
    partition_index : int
        The partition it writes for (part of its ``transactional.id`` in exactly-once mode).
    records_sent, batches_skipped : int
        Records handed to Kafka, and batches found already committed (exactly once) and skipped.

    Examples
    --------
    >>> from trident_spark.kafka import (TridentKafkaStateFactory, DefaultTopicSelector,
    ...                                  FieldNameBasedTupleToKafkaMapper)
    >>> from trident_spark.fields import Fields, TridentTuple
    >>> factory = (TridentKafkaStateFactory("127.0.0.1:9092", exactly_once=True)
    ...            .withKafkaTopicSelector(DefaultTopicSelector("counts"))
    ...            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))
    >>> state = factory.makeState({}, 2, 4)
    >>> state.transactional_id
    'trident-spark-counts-2'
    >>> state.record(TridentTuple(["cat", 3], Fields(["word", "count"])))
    KafkaRecord(topic='counts', key=b'cat', value=b'3', headers=None)
    """

    def __init__(self, factory: Any, partition_index: int, num_partitions: int) -> None:
        # factory: the TridentKafkaStateFactory that made it (not imported: it imports this module)
        self.factory = factory
        self.partition_index = partition_index
        self.num_partitions = num_partitions
        self.exactly_once = factory.exactly_once
        self.address = redact_text(factory.bootstrap())
        self.transactional_id = (f"{factory.transactionalId()}-{partition_index}" if self.exactly_once
                                 else None)
        self.records_sent = 0
        self.batches_skipped = 0
        self._producer: Any = None
        self._consumer: Any = None      # topic checks and, exactly once, the marker group
        self._known_topics: set[str] = set()
        self._marker_ready = False
        self._txid: int | None = None
        self._skip = False
        self._in_transaction = False
        self._pending: list[KafkaRecord] = []
        self._failures: list[str] = []

    def __repr__(self) -> str:
        mode = "exactly once" if self.exactly_once else "at least once"
        return f"TridentKafkaState({self.address}, partition {self.partition_index}, {mode})"

    # -- Trident's calls ----------------------------------------------------------------------

    def beginCommit(self, txid: int) -> None:
        """Batch ``txid`` begins in this partition: connect (once), and in exactly-once mode
        learn whether this partition already committed it (then the batch is skipped)."""
        self._pending = []
        self._failures = []
        self._txid = txid
        self._skip = False
        if not self.exactly_once:
            self._ensure_producer()
            return
        if self._in_transaction:     # an earlier batch failed in commit: nothing of it is kept
            self._discard_producer()
        self._ensure_producer()
        committed = broker.read_marker(self._marker_consumer(), self.transactional_id or "", self.address,
                                       self.factory.marker_topic, self.factory.timeout)
        batch = txid + self.factory.txid_offset
        if committed is not None and committed > batch:
            raise StateAheadError(f"kafka://{self.address}/{self.transactional_id}",
                                  [f"partition {self.partition_index}"], stored_txid=committed,
                                  batch_txid=batch, txid_offset=self.factory.txid_offset)
        if committed == batch:
            self._skip = True
            self.batches_skipped += 1
            log.info("Kafka output %s: txid %d already committed, the replay sends nothing",
                     self.transactional_id, batch)

    def updateState(self, tuples: Sequence[TridentTuple], collector: TridentCollector | None = None) -> None:
        """Make each tuple's record (the topic selector's topic, the mapper's key, value and
        headers) and send it, or keep it for ``commit``'s transaction (exactly once).

        A tuple whose topic is ``None`` is skipped with a warning (Storm's behaviour).
        """
        if self._txid is None:
            raise StateConfigError("TridentKafkaState.updateState outside a batch: Trident calls "
                                   "beginCommit(txid) first (use it through partitionPersist)")
        if self._skip:
            return
        records = [r for r in map(self.record, tuples) if r is not None]
        self._check_topics({r.topic for r in records})
        if self.exactly_once:
            self._pending.extend(records)
            return
        for record in records:
            self._send(record)

    def commit(self, txid: int) -> None:
        """Batch ``txid``'s records of this partition are all made: at least once, wait for every
        delivery; exactly once, send them and the marker in one transaction and commit it.

        Raises
        ------
        FailedException
            A delivery or the transaction failed: the batch is replayed (exactly once, nothing of
            this attempt is visible to a ``read_committed`` consumer).
        """
        try:
            if self.exactly_once:
                if not self._skip:
                    self._commit_transaction(txid)
            else:
                self._flush(txid)
        finally:
            self._txid = None
            self._pending = []

    def close(self) -> None:
        """Abort an open transaction, wait for sent records (a few seconds at most), disconnect."""
        self._discard_producer(flush=not self._in_transaction)
        if self._consumer is not None:
            with contextlib.suppress(Exception):  # best effort: the state is not used afterwards
                self._consumer.close()
            self._consumer = None

    # -- records ------------------------------------------------------------------------------

    def record(self, tuple: TridentTuple) -> KafkaRecord | None:
        """``tuple`` as a Kafka record, or ``None`` if its topic selector gives no topic.

        Raises
        ------
        KafkaRecordError
            The selector or mapper failed on it, or a part has no bytes: the message names the
            tuple, the part and its field.
        """
        factory = self.factory
        topic = self._part(tuple, "topic", factory.topicSelector.getTopic)
        if topic is None:
            log.warning("Kafka output: skipping tuple %r, the topic selector returned None", tuple)
            return None
        if not isinstance(topic, str) or not topic:
            raise KafkaRecordError(f"Kafka output: the topic selector gave {topic!r} for tuple {tuple!r}, "
                                   "not a topic name")
        mapper = factory.mapper
        key = self._bytes(tuple, "key", self._part(tuple, "key", mapper.getKeyFromTuple))
        value = self._bytes(tuple, "value", self._part(tuple, "value", mapper.getMessageFromTuple))
        headers = self._part(tuple, "headers", mapper.getHeadersFromTuple)
        encoded = None
        if headers is not None:
            try:
                pairs = [(str(name), item) for name, item in headers]
            except (TypeError, ValueError) as exc:
                raise KafkaRecordError(f"Kafka output: the headers of tuple {tuple!r} are not (name, value) "
                                       f"pairs: {exc}") from None
            encoded = [(name, self._bytes(tuple, name, item)) for name, item in pairs]
        return KafkaRecord(topic, key, value, encoded)

    def _where(self, tuple: TridentTuple, part: str) -> str:
        name = {"key": "the key", "value": "the value", "topic": "the topic", "headers": "the headers"}.get(
            part, f"header {part!r}")
        field = self.factory.mapper.fieldFor(part) if part not in ("topic", "headers") else None
        return f"{name} of tuple {tuple!r}" + (f" (field {field!r})" if field else "")

    def _part(self, tuple: TridentTuple, part: str, get: Any) -> Any:
        try:
            return get(tuple)
        except Exception as exc:  # the user's mapper or selector: name where
            raise KafkaRecordError(f"Kafka output: cannot make {self._where(tuple, part)}: "
                                   f"{type(exc).__name__}: {exc}") from exc

    def _bytes(self, tuple: TridentTuple, part: str, value: Any) -> bytes | None:
        try:
            return to_bytes(value)
        except Exception as exc:  # str() raised, or a str that is not UTF-8 (lone surrogates)
            raise KafkaRecordError(f"Kafka output: cannot serialize {self._where(tuple, part)}: "
                                   f"{type(value).__name__} value: {type(exc).__name__}: {exc}") from exc

    # -- the broker ---------------------------------------------------------------------------

    def _marker_consumer(self) -> Any:
        if self._consumer is None:
            from confluent_kafka import Consumer

            group = self.transactional_id or "trident-spark-kafka-output"
            self._consumer = Consumer(broker.consumer_config(self.factory.bootstrap(),
                                                             self.factory.producerProperties, group))
        return self._consumer

    def check_broker(self, topic: str | None = None) -> None:
        """The broker answers within the factory's ``timeout``, and ``topic`` (if given) exists."""
        broker.check_reachable(self._marker_consumer(), self.address, self.factory.timeout)
        if topic is not None:
            self._check_topics({topic})

    def _check_topics(self, topics: set[str]) -> None:
        for topic in sorted(topics - self._known_topics):
            if not broker.topic_exists(self._marker_consumer(), self.address, topic, self.factory.timeout):
                raise StateConfigError(
                    f"Kafka output: topic {topic!r} does not exist on {self.address}; create it "
                    f"before the topology runs (the Kafka state does not create output topics)")
            self._known_topics.add(topic)

    def _ensure_producer(self) -> Any:
        if self._producer is not None:
            return self._producer
        from confluent_kafka import KafkaError, KafkaException, Producer

        factory = self.factory
        config = broker.producer_config(factory.bootstrap(), factory.producerProperties,
                                        self.transactional_id, factory.timeout)
        # The broker answers before anything is made: an unreachable one fails here, naming it.
        broker.check_reachable(self._marker_consumer(), self.address, factory.timeout)
        try:
            producer = Producer(config)
        except KafkaException as exc:
            raise StateConfigError(f"Kafka output on {self.address}: invalid producer properties: "
                                   f"{redact_text(str(exc))}") from None
        if self.transactional_id is not None:
            if not self._marker_ready:
                broker.ensure_topic(self._marker_consumer(), config, self.address, factory.marker_topic,
                                    factory.timeout)
                self._marker_ready = True
            try:
                producer.init_transactions(factory.timeout)
            except KafkaException as exc:
                error = exc.args[0]
                if broker.is_unavailable(error):
                    raise StateUnavailableError(self.address, f"init_transactions of transactional.id "
                                                              f"{self.transactional_id!r}: {error}") from None
                unsupported = error.code() in (KafkaError._UNSUPPORTED_FEATURE,
                                               KafkaError.UNSUPPORTED_VERSION,
                                               KafkaError.UNSUPPORTED_FOR_MESSAGE_FORMAT)
                raise StateConfigError(
                    f"Kafka output on {self.address}: cannot start transactions for transactional.id "
                    f"{self.transactional_id!r}: {redact_text(str(error))}"
                    + ("; the broker does not support transactions, which exactly_once=True needs: use "
                       "exactly_once=False (at least once) or a broker with transactions" if unsupported else
                       "; check the producer properties and the broker's transaction settings (ACLs on "
                       "the transactional id, transaction.state.log.*)")) from None
            log.info("Kafka output %s: transactional producer ready on %s", self.transactional_id,
                     self.address)
        self._producer = producer
        return producer

    def _discard_producer(self, *, flush: bool = False) -> None:
        """Let the producer go: abort its open transaction (a new producer's init_transactions would
        abort it anyway, and fence this one), or wait a little for its sent records."""
        producer, self._producer = self._producer, None
        in_transaction, self._in_transaction = self._in_transaction, False
        if producer is None:
            return
        try:
            if in_transaction:
                producer.abort_transaction(min(self.factory.timeout, 10.0))
            elif flush:
                producer.flush(min(self.factory.timeout, 10.0))
        except Exception as exc:
            log.info("Kafka output %s: dropping the producer: %s", self.transactional_id or self.address,
                     redact_text(str(exc)))

    def _on_delivery(self, error: Any, message: Any) -> None:
        if error is not None and len(self._failures) < 5:
            self._failures.append(f"topic {message.topic()!r}: {error}")

    def _send(self, record: KafkaRecord) -> None:
        producer = self._producer
        while True:
            try:
                producer.produce(record.topic, value=record.value, key=record.key, headers=record.headers,
                                 on_delivery=self._on_delivery)
                break
            except BufferError:  # the local queue is full: let deliveries drain it
                producer.poll(0.05)
        self.records_sent += 1

    def _flush(self, txid: int) -> None:
        producer = self._producer
        if producer is None:
            return
        remaining = producer.flush(self.factory.timeout)
        if remaining or self._failures:
            problems = list(self._failures) + ([f"{remaining} not delivered within "
                                                f"{self.factory.timeout:g} s"] if remaining else [])
            if remaining:
                self._discard_producer()      # its queue still holds them: start afresh for the replay
            raise FailedException(
                f"Kafka output on {self.address}, partition {self.partition_index}, txid {txid}: records "
                f"were not delivered ({'; '.join(redact_text(p) for p in problems)}); the batch is replayed")

    def _commit_transaction(self, txid: int) -> None:
        from confluent_kafka import KafkaException, TopicPartition

        factory = self.factory
        producer = self._ensure_producer()
        batch = txid + factory.txid_offset
        step = "begin_transaction"
        try:
            producer.begin_transaction()
            self._in_transaction = True
            step = "produce"
            for record in self._pending:
                self._send(record)
            step = "send_offsets_to_transaction (the txid marker)"
            marker = [TopicPartition(factory.marker_topic, 0, batch + 1)]
            producer.send_offsets_to_transaction(marker, self._marker_consumer().consumer_group_metadata(),
                                                 factory.timeout)
            step = "commit_transaction"
            started = time.monotonic()
            producer.commit_transaction(factory.timeout)
            self._in_transaction = False
            log.debug("Kafka output %s: txid %d committed, %d records, %.3f s", self.transactional_id, batch,
                      len(self._pending), time.monotonic() - started)
        except KafkaException as exc:
            error = exc.args[0] if exc.args else exc
            # Whatever the error (fenced by a newer attempt, a broker timeout, a failed delivery):
            # abort what can be aborted, drop the producer; the replay's new producer fences this
            # one, finds out from the marker whether this transaction committed after all, and
            # sends the batch again only if it did not.
            self._discard_producer()
            raise FailedException(
                f"Kafka output {self.transactional_id} on {self.address}: txid {batch} failed in {step}: "
                f"{redact_text(str(error))}; the batch is replayed") from None


class TridentKafkaStateUpdater(StateUpdater[TridentKafkaState]):
    """storm-kafka-client's ``TridentKafkaStateUpdater``: hands the partition's tuples to the state.

    Examples
    --------
    >>> from trident_spark.kafka import TridentKafkaStateFactory, DefaultTopicSelector
    >>> from trident_spark.kafka import FieldNameBasedTupleToKafkaMapper
    >>> factory = (TridentKafkaStateFactory("127.0.0.1:9092")
    ...            .withKafkaTopicSelector(DefaultTopicSelector("counts"))
    ...            .withTridentTupleToKafkaMapper(FieldNameBasedTupleToKafkaMapper("word", "count")))
    >>> # stream.partitionPersist(factory, ["word", "count"], TridentKafkaStateUpdater(), [])
    >>> TridentKafkaStateUpdater()
    TridentKafkaStateUpdater()
    """

    def updateState(self, state: TridentKafkaState, tuples: list[TridentTuple],
                    collector: TridentCollector) -> None:
        state.updateState(tuples, collector)

    def __repr__(self) -> str:
        return "TridentKafkaStateUpdater()"
