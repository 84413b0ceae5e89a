"""Driver-side broker access for the Kafka spout: partitions, offsets and size samples.

Runs in Spark's long-lived Python process for the stream's source (one per
query), so one consumer is kept open between batches. It never joins a
consumer group: partitions are assigned explicitly.

The end of each partition is read from fetch responses (the high watermark
they carry), not from ListOffsets: some Kafka-compatible brokers (Tansu) answer
ListOffsets(latest) with a stale value, while fetch responses are right.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from dataclasses import dataclass

from confluent_kafka import Consumer, KafkaError, KafkaException
from confluent_kafka import TopicPartition as KafkaTopicPartition

from trident_spark.errors import BrokerUnavailableError, UnknownTopicError
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import Offsets, PartitionSample, TopicPartition
from trident_spark.spout.kafka.pool import LIBRDKAFKA_LOG

log = logging.getLogger(__name__)

_EARLIEST = -2


@dataclass
class ProbeResult:
    """What one probe learned about a partition."""

    high_watermark: int
    sample: PartitionSample
    out_of_range: bool = False


class KafkaBrokerClient:
    """Metadata, earliest offsets and head-of-range probes against one cluster.

    Examples
    --------
    >>> client = KafkaBrokerClient(config)                     # doctest: +SKIP
    >>> client.topic_partitions()                              # doctest: +SKIP
    [('sentences', 0), ('sentences', 1)]
    """

    def __init__(self, config: KafkaSpoutConfig) -> None:
        self.config = config
        self._consumer: Consumer | None = None

    # --- connection ------------------------------------------------------------------
    def _conn(self) -> Consumer:
        if self._consumer is None:
            self._consumer = Consumer(self.config.consumer_conf(**self._probe_settings()),
                                      logger=LIBRDKAFKA_LOG)
        return self._consumer

    def _probe_settings(self) -> dict[str, object]:
        """librdkafka settings of the driver's consumer: fetch about a sample, no more.

        A probe needs the head of each partition and a fetch response's high
        watermark. Left to the defaults, librdkafka prefetches up to 100k messages
        per partition, and a broker that ignores ``max.partition.fetch.bytes``
        (Tansu) answers with whole stored batches, megabytes of them, up to
        ``fetch.max.bytes`` (50 MB by default); all that was parsed and thrown
        away on every batch.
        """
        sample = self.config.size_sample_bytes
        settings: dict[str, object] = {
            "group.id": f"trident-spark-driver-{uuid.uuid4().hex[:8]}",
            "fetch.wait.max.ms": 20,
            "max.partition.fetch.bytes": sample,
            "queued.min.messages": 1,
        }
        if "fetch.max.bytes" not in self.config.kafka_options:
            # Room for the samples of a few partitions per request; librdkafka
            # wants it at least message.max.bytes (default 1,000,000).
            floor = int(self.config.kafka_options.get("message.max.bytes", 1_000_000))
            settings["fetch.max.bytes"] = max(4 * sample, floor)
        return settings

    def close(self) -> None:
        if self._consumer is not None:
            self._consumer.close()
            self._consumer = None

    def _unavailable(self, what: str, cause: object) -> BrokerUnavailableError:
        return BrokerUnavailableError(
            f"Kafka at {self.config.address} did not answer {what} within "
            f"{self.config.timeout_s:g} s ({cause}). Check that the broker is running and that "
            "bootstrap_servers= is the address clients should use."
        )

    # --- metadata --------------------------------------------------------------------
    def topic_partitions(self) -> list[TopicPartition]:
        """Every partition of the subscribed topics (or of the topics matching the pattern)."""
        try:
            metadata = self._conn().list_topics(timeout=self.config.timeout_s)
        except KafkaException as exc:
            raise self._unavailable("a metadata request", exc.args[0]) from exc
        if self.config.pattern:
            regex = re.compile(self.config.pattern)
            names = sorted(t for t in metadata.topics if regex.fullmatch(t) and not t.startswith("__"))
        else:
            missing = [t for t in self.config.topics if t not in metadata.topics
                       or metadata.topics[t].error is not None]
            if missing:
                known = sorted(t for t in metadata.topics if not t.startswith("__"))
                raise UnknownTopicError(
                    f"KafkaSpout: topic {', '.join(map(repr, missing))} does not exist on "
                    f"{self.config.address} (topics there: {', '.join(known) or 'none'}). "
                    "Create it first, or fix topics=."
                )
            names = list(self.config.topics)
        return [(name, p) for name in names for p in sorted(metadata.topics[name].partitions)]

    def check_topic(self, topic: str, option: str) -> None:
        """Fail naming ``option`` when ``topic`` (one the spout writes, not reads) does not exist."""
        try:
            metadata = self._conn().list_topics(timeout=self.config.timeout_s)
        except KafkaException as exc:
            raise self._unavailable("a metadata request", exc.args[0]) from exc
        found = metadata.topics.get(topic)
        if found is None or found.error is not None:
            raise UnknownTopicError(
                f"KafkaSpout({option}={topic!r}): no such topic on {self.config.address}; create it "
                "(any number of partitions) before the stream starts")

    def earliest_offsets(self, partitions: list[TopicPartition]) -> Offsets:
        """The first offset still stored in each partition (its low watermark)."""
        if not partitions:
            return {}
        request = [KafkaTopicPartition(t, p, _EARLIEST) for t, p in partitions]
        try:
            answer = self._conn().offsets_for_times(request, timeout=self.config.timeout_s)
        except KafkaException as exc:
            raise self._unavailable("a ListOffsets request", exc.args[0]) from exc
        return {(tp.topic, tp.partition): max(0, tp.offset) for tp in answer}

    # --- probes ----------------------------------------------------------------------
    def probe(self, starts: Offsets, sample_bytes: int) -> dict[TopicPartition, ProbeResult]:
        """Read up to ``sample_bytes`` from each partition's ``start``; learn its high watermark.

        Each partition ends its probe on end-of-partition (the sample then covers
        everything pending), once the sample holds ``sample_bytes``, or when the
        start offset no longer exists (``out_of_range``).
        """
        if not starts:
            return {}
        consumer = self._conn()
        results = {tp: ProbeResult(-1, PartitionSample()) for tp in starts}
        sampled = dict.fromkeys(starts, 0)  # bytes so far: summing sizes per record is quadratic
        pending = set(starts)
        consumer.assign([KafkaTopicPartition(t, p, o) for (t, p), o in starts.items()])
        deadline = time.monotonic() + self.config.timeout_s
        try:
            while pending:
                if time.monotonic() > deadline:
                    raise self._unavailable(
                        f"fetches for {', '.join(f'{t}[{p}]' for t, p in sorted(pending))}",
                        "no fetch response",
                    )
                for msg in consumer.consume(num_messages=10_000, timeout=0.1):
                    tp = (msg.topic(), msg.partition())
                    if tp not in pending:
                        continue
                    done = self._take(msg, results[tp], sampled, sample_bytes)
                    if done:
                        pending.discard(tp)
                        if not results[tp].sample.complete:
                            consumer.pause([KafkaTopicPartition(*tp)])
                for tp in self._behind_log_end(consumer, starts, pending):
                    results[tp].out_of_range = True
                    pending.discard(tp)
        finally:
            # Pause flags outlive an assignment in librdkafka: clear them for the next probe.
            consumer.resume([KafkaTopicPartition(t, p) for t, p in starts])
            consumer.unassign()
        return results

    @staticmethod
    def _behind_log_end(consumer: Consumer, starts: Offsets, pending: set[TopicPartition]
                        ) -> list[TopicPartition]:
        """Partitions whose log now ends before the wanted start (offsets reset).

        Some brokers answer such a fetch with no records and no error; the high
        watermark of the answer shows it.
        """
        behind = []
        for tp in pending:
            _, high = consumer.get_watermark_offsets(KafkaTopicPartition(*tp), cached=True)
            if 0 <= high < starts[tp]:
                behind.append(tp)
        return behind

    def _take(self, msg: object, result: ProbeResult, sampled: dict[TopicPartition, int],
              sample_bytes: int) -> bool:
        err = msg.error()  # type: ignore[attr-defined]
        tp = (msg.topic(), msg.partition())  # type: ignore[attr-defined]
        if err is not None:
            code = err.code()
            if code == KafkaError._PARTITION_EOF:
                result.high_watermark = msg.offset()  # type: ignore[attr-defined]
                result.sample.complete = True
                return True
            if code in (KafkaError._AUTO_OFFSET_RESET, KafkaError.OFFSET_OUT_OF_RANGE):
                result.out_of_range = True
                return True
            if code == KafkaError.UNKNOWN_TOPIC_OR_PART:
                raise UnknownTopicError(
                    f"KafkaSpout: {tp[0]}[{tp[1]}] disappeared from {self.config.address} ({err.str()})"
                )
            if err.fatal() or not err.retriable():
                raise self._unavailable(f"a fetch for {tp[0]}[{tp[1]}]", err.str())
            return False
        value = msg.value() or b""  # type: ignore[attr-defined]
        key = msg.key() or b""  # type: ignore[attr-defined]
        result.sample.offsets.append(msg.offset())  # type: ignore[attr-defined]
        size = len(key) + len(value)
        result.sample.sizes.append(size)
        sampled[tp] += size
        if sampled[tp] >= sample_bytes:
            _, high = self._conn().get_watermark_offsets(KafkaTopicPartition(*tp), cached=True)
            result.high_watermark = high
            return True
        return False
