"""The Kafka spout as a Spark Python streaming data source (``DataSourceStreamReader``).

Spark calls ``latestOffset`` on the driver once per trigger and writes the
answer to the checkpoint's offset log *before* the batch runs; a restarted
query replays a logged batch with exactly those offsets. That makes this a
*transactional* spout in Trident's sense: a txid (batch id) always has the
same records.

An offset document looks like::

    {"offsets": {"words": {"0": 1200, "1": 1180}},
     "begin":   {"words": {"2": 0}},          # only for partitions new in this batch
     "until":   {"words": {"0": 5000, "1": 5000, "2": 0}},   # only with ending_offsets
     "batch":   {"rows": 2380, "bytes": 154700, "record_bytes": 65.0,
                 "limited_by": "max_fetch_bytes", "lost": 0, "read_limit_bytes": 100000}}

``offsets`` is the end of the batch (the next batch's start); ``batch`` is what
the read limit decided and why, kept in the log so it shows in Spark's
progress and stays fixed on replay. ``until`` carries the resolved
``ending_offsets`` from batch to batch, so a restarted query ends where the
first run would have. With adaptive batching ``batch`` also holds
``"adaptive": true``, the fullest partition's bytes (``partition_bytes``) and the
controller's decision (``adapt``: reason, the feedback batch it used, the
fixed-cost guard's reference point, the last batch's bytes and duration for the
cost slope): the next batch's limit is decided from
them and the driver's feedback file (:mod:`trident_spark.spout.kafka.adaptive`).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import (
    ReadAllAvailable,
    ReadLimit,
    ReadMaxBytes,
    ReadMaxRows,
    ReadMinRows,
    SupportsTriggerAvailableNow,
)
from pyspark.sql.types import StructType

from trident_spark.checkpoint_files import checkpoint_location, name_of
from trident_spark.errors import BrokerUnavailableError, DataLossError, InvalidArgumentError
from trident_spark.outage import Outage
from trident_spark.spout.kafka.adaptive import (
    INITIAL,
    NO_FEEDBACK,
    WARM_UP,
    AdaptiveController,
    Decision,
    Observation,
    read_feedback,
)
from trident_spark.spout.kafka.client import KafkaBrokerClient, ProbeResult
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import (
    OffsetRange,
    Offsets,
    PartitionSample,
    RecordSizeEstimate,
    TopicPartition,
    byte_budget_end,
    check_starting_offsets,
    decode_offsets,
    encode_offsets,
    estimate_range_bytes,
    plan_ranges,
    prorate_max_rows,
)
from trident_spark.spout.kafka.run import KafkaRun
from trident_spark.task_errors import reporting

log = logging.getLogger(__name__)

#: ``limited_by`` values that mean the byte limit, not the end of the data, ended a batch.
BYTE_LIMITED = ("adaptive", "max_fetch_bytes")

FORMAT_NAME = "trident_kafka"

T = TypeVar("T")


@dataclass
class _Prefetch:
    """A probe from ``previous`` (the end of the batch Spark is running), made in a thread."""

    previous: Offsets
    thread: threading.Thread | None = None
    probes: dict[TopicPartition, ProbeResult] | None = None


def _lost_range(tp: TopicPartition, needed: int, earliest: int) -> str:
    topic, partition = tp
    if needed < earliest:
        return (f"{topic}[{partition}] records [{needed}, {earliest}) were deleted "
                f"(retention or deletion); the partition now starts at {earliest}")
    return (f"{topic}[{partition}] the stream is at offset {needed} but the partition ends before it "
            f"(the topic was deleted and re-created?); it starts at {earliest}")


class KafkaDataSource(DataSource):
    """Spark data source ``trident_kafka``; its options are ``config``, a KafkaSpoutConfig as JSON,
    and ``run``, the query's KafkaRun as JSON (absent: no run settings)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        run = KafkaRun.from_json(self.options.get("run"))
        return KafkaSpoutConfig.from_json(self.options["config"]).schema_ddl(run.read_metrics)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return KafkaStreamReader(KafkaSpoutConfig.from_json(self.options["config"]), schema,
                                 KafkaRun.from_json(self.options.get("run")))


class KafkaInputPartition(InputPartition):
    """One Spark task's share of a batch: an offset range of one Kafka partition."""

    def __init__(self, offset_range: OffsetRange) -> None:
        super().__init__(offset_range)
        self.offset_range = offset_range


class KafkaStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """Plans batches on the driver, reads them on executors.

    Construction is cheap and opens nothing: Spark builds throwaway instances in
    its planner process and pickles one to executors for :meth:`read`.
    """

    def __init__(self, config: KafkaSpoutConfig, schema: StructType, run: KafkaRun | None = None) -> None:
        self.config = config
        self.run = run if run is not None else KafkaRun()
        self.schema = schema
        self._client: KafkaBrokerClient | None = None
        self._available_now_target: Offsets | None = None
        self._latest_seen: Offsets = {}
        self._waiting_since = time.monotonic()
        self._record_sizes: dict[TopicPartition, RecordSizeEstimate] = {}
        self._prefetch: _Prefetch | None = None
        self._until: Offsets | None = None
        self._decision: Decision | None = None
        self._fed_batch: int | None = None
        where = self.run.checkpoint
        self._outage = Outage(self.run.outage_budget_s, name_of(where) if where else ",".join(config.topics),
                              "planning the next batch", checkpoint_location(where) if where else None)

    def __getstate__(self) -> dict[str, Any]:
        # Only settings travel to executors; driver-side connections stay behind.
        return {"config": self.config, "schema": self.schema, "run": self.run}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(state["config"], state["schema"], state["run"])  # type: ignore[misc]

    @property
    def client(self) -> KafkaBrokerClient:
        if self._client is None:
            self._client = KafkaBrokerClient(self.config)
        return self._client

    def _broker(self, call: Callable[..., T], *args: Any) -> T:
        """``call(*args)`` against the broker; while the broker does not answer, wait and try
        again within the outage budget (``run(outage_budget=)``), then fail naming it.

        Runs in Spark's stream thread on the driver: the query stays up while it waits.
        Each attempt fails within ``timeout`` seconds (librdkafka calls are given it).
        """
        while True:
            try:
                return call(*args)
            except BrokerUnavailableError as exc:
                self._outage.wait(exc, "broker", self.config.address)

    # --- offsets ---------------------------------------------------------------------
    def initialOffset(self) -> dict[str, Any]:
        """Resolve ``starting_offsets`` to concrete offsets (called once, for a new query)."""
        self._wait_for_prefetch()
        partitions = self._broker(self.client.topic_partitions)
        earliest = self._broker(self.client.earliest_offsets, partitions)
        document = {"offsets": encode_offsets(self._starting_offsets(partitions, earliest))}
        if self.config.ending_offsets is not None:
            self._until = self._resolve_ending(partitions, earliest)
            document["until"] = encode_offsets(self._until)
        self._outage.end()
        return document

    def _starting_offsets(self, partitions: list[TopicPartition], earliest: Offsets) -> Offsets:
        wanted = self.config.starting_offsets
        if wanted == "earliest":
            return earliest
        if wanted == "latest":
            return self._high_watermarks(earliest)
        assert isinstance(wanted, dict)
        given = self._named_partitions("starting_offsets", wanted, partitions)
        named = {tp: earliest[tp] for tp, offset in given.items() if offset != -2}
        latest = self._high_watermarks(named) if named else {}
        check_starting_offsets(given, earliest, latest, address=self.config.address,
                               fail_on_data_loss=self.config.fail_on_data_loss)
        start = {}
        for tp in partitions:
            offset = given.get(tp, -2)
            start[tp] = earliest[tp] if offset == -2 else latest[tp] if offset == -1 else offset
        return start

    def _resolve_ending(self, partitions: list[TopicPartition], earliest: Offsets) -> Offsets:
        """``ending_offsets`` as concrete offsets: "latest" (and -1) is the high watermark now."""
        wanted = self.config.ending_offsets
        given = {} if wanted == "latest" else self._named_partitions("ending_offsets", wanted, partitions)
        latest = self._high_watermarks(earliest) if any(given.get(tp, -1) == -1 for tp in partitions) else {}
        return {tp: latest[tp] if given.get(tp, -1) == -1 else given[tp] for tp in partitions}

    def _named_partitions(self, option: str, wanted: Any, partitions: list[TopicPartition]) -> Offsets:
        given = decode_offsets(wanted)
        unknown = sorted(set(given) - set(partitions))
        if unknown:
            raise InvalidArgumentError(
                f"KafkaSpout({option}=...) names partitions that do not exist on "
                f"{self.config.address}: {', '.join(f'{t}[{p}]' for t, p in unknown)}"
            )
        return given

    def _ending(self, start: dict[str, Any]) -> Offsets | None:
        """Where the stream ends: carried in the offset documents, resolved once per query."""
        if self.config.ending_offsets is None:
            return None
        if "until" in start:
            self._until = decode_offsets(start["until"])
        elif self._until is None:  # a checkpoint from before ending_offsets was set
            partitions = self._broker(self.client.topic_partitions)
            earliest = self._broker(self.client.earliest_offsets, partitions)
            self._until = self._resolve_ending(partitions, earliest)
        return self._until

    def _high_watermarks(self, starts: Offsets) -> Offsets:
        probes = self._broker(self.client.probe, starts, 1)
        return {tp: max(starts[tp], p.high_watermark) for tp, p in probes.items()}

    def prepareForTriggerAvailableNow(self) -> None:
        """Fix the end of an ``availableNow`` run at the high watermarks seen now."""
        self._wait_for_prefetch()
        partitions = self._broker(self.client.topic_partitions)
        earliest = self._broker(self.client.earliest_offsets, partitions)
        self._available_now_target = self._high_watermarks(earliest)
        self._outage.end()

    def reportLatestOffset(self) -> dict[str, Any] | None:
        return {"offsets": encode_offsets(self._latest_seen)} if self._latest_seen else None

    def getDefaultReadLimit(self) -> ReadLimit:
        """Tell Spark the spout limits its batches; the options themselves are applied here."""
        if self.config.max_offsets_per_trigger:
            return ReadMaxRows(self.config.max_offsets_per_trigger)
        if self.config.min_offsets_per_trigger:
            return ReadMinRows(self.config.min_offsets_per_trigger)
        if self.config.fetch_bytes_bound:
            # Per partition; applied in latestOffset, where the partition count is known.
            return ReadMaxBytes(self.config.fetch_bytes_bound)
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """End of the next batch: all pending records, cut down by the read limits.

        Called by Spark once per trigger, in its planner's Python process, after the
        previous batch finished; the answer is logged before the batch runs. While the
        broker does not answer it waits, within the outage budget (:meth:`_broker`).
        """
        document = self._latest_offset(start, limit)
        self._outage.end()
        return document

    def _latest_offset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        previous = decode_offsets(start.get("offsets", {}))
        self._ending(start)
        self._decide_limit(start)
        prefetched = self._take_prefetch(previous)
        if prefetched is not None:
            planned = self._plan(previous, dict(previous), prefetched, 0, limit)
            if planned is not None and planned.get("batch", {}).get("limited_by") != "available":
                return self._prefetch_after(planned)
            # The batch would take everything pending: look again, more may have come.
        partitions = self._broker(self.client.topic_partitions)
        self._check_lost_partitions(previous, partitions)
        new = [tp for tp in partitions if tp not in previous]
        begin = {**{tp: previous[tp] for tp in partitions if tp in previous},
                 **self._broker(self.client.earliest_offsets, new)}
        probes, lost = self._probe(begin)
        planned = self._plan(previous, begin, probes, lost, limit)
        return start if planned is None else self._prefetch_after(planned)

    def _decide_limit(self, start: dict[str, Any]) -> None:
        """Adaptive batching: the next batch's per-partition byte limit, from the last one.

        The last batch's limit and sizes are in its offset document (``start``); its
        duration comes from the feedback file the driver wrote after running it.
        """
        if not self.config.adaptive:
            return
        bound = self.config.fetch_bytes_bound
        assert bound is not None and self.config.adaptive_target_ms is not None
        controller = AdaptiveController(self.config.adaptive_target_ms, max_bytes=bound)
        batch = start.get("batch") or {}
        adapt = batch.get("adapt") or {}
        last = batch.get("read_limit_bytes") if batch.get("adaptive") else None
        self._fed_batch = adapt.get("feedback_batch")
        reference = tuple(adapt["reference"]) if adapt.get("reference") else None
        previous = tuple(adapt["previous"]) if adapt.get("previous") else None
        if last is None:
            self._decision = Decision(controller.initial(), INITIAL)
            return
        feedback = read_feedback(self.run.checkpoint) if self.run.checkpoint else None
        if feedback is None or (self._fed_batch is not None and feedback.batch_id <= self._fed_batch):
            self._decision = Decision(min(bound, int(last)), NO_FEEDBACK, reference,  # type: ignore[arg-type]
                                      previous)  # type: ignore[arg-type]
            return
        self._fed_batch = feedback.batch_id
        if feedback.warmup:  # a new run: its first batch, and older measurements, are no guide
            self._decision = Decision(min(bound, int(last)), WARM_UP)
            return
        seen = Observation(feedback.duration_ms, int(batch.get("partition_bytes") or 0),
                           batch.get("limited_by") in BYTE_LIMITED, batch.get("record_bytes"))
        self._decision = controller.next(int(last), seen, reference, previous)  # type: ignore[arg-type]
        log.info("KafkaSpout adaptive batching: batch %d took %.0f ms (target %.0f) reading %d B per "
                 "partition; limit %d -> %d B (%s)", feedback.batch_id, feedback.duration_ms,
                 controller.target_ms, seen.partition_bytes, last, self._decision.limit,
                 self._decision.reason)

    def _plan(self, previous: Offsets, begin: Offsets, probes: dict[TopicPartition, ProbeResult],
              lost: int, limit: ReadLimit) -> dict[str, Any] | None:
        """The next batch's offset document, or None when there is no batch to run yet."""
        high = {tp: max(begin[tp], probes[tp].high_watermark) for tp in begin}
        self._latest_seen = dict(high)
        if self._available_now_target is not None:
            high = {tp: min(h, self._available_now_target.get(tp, begin[tp])) for tp, h in high.items()}
        if self._until is not None:  # ending_offsets: never past them; new partitions not at all
            high = {tp: max(begin[tp], min(h, self._until.get(tp, begin[tp]))) for tp, h in high.items()}
        end, limited_by = self._apply_limits(begin, high, probes, limit)
        if end == previous and not lost:
            return None
        rows = sum(end[tp] - begin[tp] for tp in end)
        if rows < self._min_rows(limit) and not self._waited_long_enough() and not lost:
            return None
        self._waiting_since = time.monotonic()
        overrides = {tp: begin[tp] for tp in end if begin[tp] != previous.get(tp)}
        return self._offset_document(begin, end, overrides, probes, limited_by, lost)

    # --- probing the next batch while this one runs ----------------------------------
    def _prefetch_after(self, document: dict[str, Any]) -> dict[str, Any]:
        """Start probing from the end of the batch just planned, while Spark runs it.

        A backlogged stream then plans its next batch without waiting on the
        broker. The probe is used only when read limits, not the end of the
        partitions, cut that next batch; otherwise it is taken again, fresh.
        """
        end = decode_offsets(document["offsets"])
        prefetch = _Prefetch(end)
        prefetch.thread = threading.Thread(target=self._run_prefetch, args=(prefetch,), daemon=True,
                                           name="trident-kafka-probe")
        self._prefetch = prefetch
        prefetch.thread.start()
        return document

    def _run_prefetch(self, prefetch: _Prefetch) -> None:
        try:
            if set(self.client.topic_partitions()) == set(prefetch.previous):
                prefetch.probes = self.client.probe(prefetch.previous, self._sample_bytes())
        except Exception as exc:  # the fresh path will meet it again and report it
            log.debug("KafkaSpout: probing ahead failed: %s", exc)

    def _wait_for_prefetch(self) -> None:
        """Let a running probe finish: the broker client is not shared between threads."""
        if self._prefetch is not None and self._prefetch.thread is not None:
            self._prefetch.thread.join()

    def _take_prefetch(self, previous: Offsets) -> dict[TopicPartition, ProbeResult] | None:
        """Wait for the probe started after the last batch; its result if it fits ``previous``."""
        self._wait_for_prefetch()
        prefetch, self._prefetch = self._prefetch, None
        if prefetch is None:
            return None
        probes = prefetch.probes
        if probes is None or prefetch.previous != previous or any(p.out_of_range for p in probes.values()):
            return None
        return probes

    def _check_lost_partitions(self, previous: Offsets, partitions: list[TopicPartition]) -> None:
        gone = sorted(set(previous) - set(partitions))
        if gone and self.config.fail_on_data_loss:
            raise DataLossError(
                f"KafkaSpout: partitions {', '.join(f'{t}[{p}]' for t, p in gone)} disappeared from "
                f"{self.config.address} (topic deleted?). Set fail_on_data_loss=False to go on without them."
            )

    def _sample_bytes(self) -> int:
        return min(self.config.size_sample_bytes, self.config.fetch_bytes_bound or 1 << 62)

    def _probe(self, begin: Offsets) -> tuple[dict[TopicPartition, ProbeResult], int]:
        """Probe every partition; where ``begin`` was lost to retention, fail or skip ahead."""
        sample_bytes = self._sample_bytes()
        probes = self._broker(self.client.probe, begin, sample_bytes)
        out_of_range = [tp for tp, p in probes.items() if p.out_of_range]
        if not out_of_range:
            return probes, 0
        earliest = self._broker(self.client.earliest_offsets, out_of_range)
        if self.config.fail_on_data_loss:
            raise DataLossError(
                f"KafkaSpout: offsets the stream needs no longer exist on {self.config.address}: "
                + "; ".join(_lost_range(tp, begin[tp], earliest[tp]) for tp in out_of_range)
                + ". Set fail_on_data_loss=False to skip ahead to what is there."
            )
        lost = sum(max(0, earliest[tp] - begin[tp]) for tp in out_of_range)
        log.warning("KafkaSpout: skipping ahead on %s: %s", self.config.address,
                    "; ".join(_lost_range(tp, begin[tp], earliest[tp]) for tp in out_of_range))
        for tp in out_of_range:
            begin[tp] = earliest[tp]
        probes.update(self._broker(self.client.probe, {tp: begin[tp] for tp in out_of_range}, sample_bytes))
        return probes, lost

    def _apply_limits(self, begin: Offsets, high: Offsets, probes: dict[TopicPartition, ProbeResult],
                      limit: ReadLimit) -> tuple[Offsets, str]:
        if isinstance(limit, ReadAllAvailable):
            return high, "available"
        end = dict(high)
        limited_by = "available"
        per_partition_bytes = self._read_limit_bytes()
        if isinstance(limit, ReadMaxBytes) and not per_partition_bytes:
            per_partition_bytes = max(1, limit.max_bytes // max(1, len(begin)))
        if per_partition_bytes:
            end = {}
            for tp in begin:
                sample = probes[tp].sample
                average = self._record_sizes.setdefault(tp, RecordSizeEstimate()).add(sample)
                end[tp] = byte_budget_end(begin[tp], high[tp], sample, per_partition_bytes, average)
            if end != high:
                adaptive_cut = self._decision is not None and per_partition_bytes < (
                    self.config.fetch_bytes_bound or per_partition_bytes)
                limited_by = "adaptive" if adaptive_cut else "max_fetch_bytes"
        max_rows = self.config.max_offsets_per_trigger
        if isinstance(limit, ReadMaxRows):
            max_rows = min(max_rows or limit.max_rows, limit.max_rows)
        if max_rows:
            capped = prorate_max_rows(begin, end, max_rows)
            if capped != end:
                end, limited_by = capped, "max_offsets_per_trigger"
        return end, limited_by

    def _read_limit_bytes(self) -> int | None:
        """The per-partition byte limit of the batch being planned (None: no byte limit)."""
        if self.config.adaptive and self._decision is not None:
            return self._decision.limit
        return self.config.max_fetch_bytes

    def _min_rows(self, limit: ReadLimit) -> int:
        if isinstance(limit, ReadAllAvailable) or self._available_now_target is not None:
            return 0
        return self.config.min_offsets_per_trigger or 0

    def _waited_long_enough(self) -> bool:
        return time.monotonic() - self._waiting_since >= self.config.max_trigger_delay_s

    def _offset_document(self, begin: Offsets, end: Offsets, overrides: Offsets,
                         probes: dict[TopicPartition, ProbeResult], limited_by: str,
                         lost: int) -> dict[str, Any]:
        samples: dict[TopicPartition, PartitionSample] = {tp: p.sample for tp, p in probes.items()}
        rows = sum(end[tp] - begin[tp] for tp in end)
        total_bytes = sum(estimate_range_bytes(begin[tp], end[tp], samples.get(tp)) for tp in end)
        sampled = [s for s in samples.values() if s.sizes]
        sample_bytes = sum(s.total_bytes for s in sampled)
        sample_count = sum(len(s.sizes) for s in sampled)
        document: dict[str, Any] = {"offsets": encode_offsets(end)}
        if overrides:
            document["begin"] = encode_offsets(overrides)
        if self._until is not None:
            document["until"] = encode_offsets(self._until)
        document["batch"] = {
            "rows": rows,
            "bytes": total_bytes,
            "record_bytes": round(sample_bytes / sample_count, 1) if sample_count else None,
            "limited_by": limited_by,
            "lost": lost,
            "partition_rows": {f"{t}[{p}]": end[(t, p)] - begin[(t, p)]
                               for t, p in sorted(end) if end[(t, p)] > begin[(t, p)]},
        }
        read_limit = self._read_limit_bytes()
        if read_limit is not None:
            document["batch"]["read_limit_bytes"] = read_limit
        if self.config.adaptive and self._decision is not None:
            document["batch"]["adaptive"] = True
            document["batch"]["partition_bytes"] = max(
                (estimate_range_bytes(begin[tp], end[tp], samples.get(tp)) for tp in end), default=0)
            document["batch"]["adapt"] = {
                "reason": self._decision.reason,
                "feedback_batch": self._fed_batch,
                "reference": list(self._decision.reference) if self._decision.reference else None,
                "previous": list(self._decision.previous) if self._decision.previous else None,
            }
        return document

    # --- planning and reading ----------------------------------------------------------
    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """One input partition per Kafka partition with records in the batch (split if asked)."""
        begin = decode_offsets(start.get("offsets", {}))
        begin.update(decode_offsets(end.get("begin", {})))
        ranges = plan_ranges(begin, decode_offsets(end.get("offsets", {})), self.config.min_partitions)
        return [KafkaInputPartition(r) for r in ranges]

    @reporting  # our errors leave the read task as data (task_errors)
    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Runs on an executor: read one offset range as Arrow record batches."""
        from pyspark.sql.pandas.types import to_arrow_schema

        from trident_spark.spout.kafka.read import read_range

        assert isinstance(partition, KafkaInputPartition)
        schema = to_arrow_schema(self.schema, timezone="UTC")
        return read_range(self.config, schema, partition.offset_range, self.run)

    def commit(self, end: dict[str, Any]) -> None:
        """Nothing to do: progress lives in Spark's checkpoint, not in a consumer group."""

    def stop(self) -> None:
        self._wait_for_prefetch()
        if self._client is not None:
            self._client.close()
