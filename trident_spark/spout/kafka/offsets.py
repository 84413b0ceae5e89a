"""Offset arithmetic for the Kafka spout: read limits, byte budgets and input splits.

Pure functions over ``{(topic, partition): offset}`` maps, so the rules that decide
what a batch contains can be tested without a broker. The driver-side reader
(:mod:`trident_spark.spout.kafka.source`) feeds them what it measured.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from trident_spark.errors import DataLossError, OffsetOutOfRangeError

TopicPartition = tuple[str, int]
Offsets = dict[TopicPartition, int]


def encode_offsets(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """Offsets as Spark's Kafka source writes them: ``{topic: {"partition": offset}}``.

    Examples
    --------
    >>> encode_offsets({("words", 1): 7, ("words", 0): 5})
    {'words': {'0': 5, '1': 7}}
    """
    out: dict[str, dict[str, int]] = {}
    for (topic, partition), offset in sorted(offsets.items()):
        out.setdefault(topic, {})[str(partition)] = int(offset)
    return out


def decode_offsets(encoded: Mapping[str, Mapping[str, int]]) -> Offsets:
    """Inverse of :func:`encode_offsets`.

    Examples
    --------
    >>> decode_offsets({"words": {"0": 5, "1": 7}})
    {('words', 0): 5, ('words', 1): 7}
    """
    return {
        (topic, int(partition)): int(offset)
        for topic, partitions in encoded.items()
        for partition, offset in partitions.items()
    }


def starting_offset_problems(given: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int],
                             latest: Mapping[TopicPartition, int]) -> tuple[list[str], list[str]]:
    """Explicit starting offsets outside their partition: ``(past the end, before the start)``.

    ``given`` holds the offsets of the ``starting_offsets`` mapping (-2 earliest and
    -1 latest are always valid); ``earliest`` and ``latest`` each partition's first
    offset and high watermark. An offset equal to the high watermark is valid: the
    stream starts with the next record written. Each problem is one phrase naming the
    partition, the offset and what the partition holds.

    Examples
    --------
    >>> past, before = starting_offset_problems({("t", 0): 500, ("t", 1): 3}, {("t", 0): 0, ("t", 1): 10},
    ...                                         {("t", 0): 20, ("t", 1): 30})
    >>> past
    ['t[0] starts at 500, past the end of the partition: it holds offsets [0, 20) (high watermark 20)']
    >>> print(before[0])
    t[1] starts at 3, before its first stored offset 10 (records [3, 10) were deleted by retention or ...
    """
    past: list[str] = []
    before: list[str] = []
    for (topic, partition), offset in sorted(given.items()):
        if offset < 0:
            continue
        low, high = earliest[(topic, partition)], latest[(topic, partition)]
        if offset > high:
            held = f"offsets [{low}, {high})" if high > low else f"no records (it is empty at offset {high})"
            past.append(f"{topic}[{partition}] starts at {offset}, past the end of the partition: it holds "
                        f"{held} (high watermark {high})")
        elif offset < low:
            before.append(f"{topic}[{partition}] starts at {offset}, before its first stored offset {low} "
                          f"(records [{offset}, {low}) were deleted by retention or deletion): it holds "
                          f"offsets [{low}, {high})")
    return past, before


def check_starting_offsets(given: Mapping[TopicPartition, int], earliest: Mapping[TopicPartition, int],
                           latest: Mapping[TopicPartition, int], *, address: str,
                           fail_on_data_loss: bool) -> None:
    """Refuse explicit starting offsets the partitions do not hold (when a new query starts).

    Past the high watermark: :class:`~trident_spark.errors.OffsetOutOfRangeError`.
    Before the first stored offset: :class:`~trident_spark.errors.DataLossError`
    unless ``fail_on_data_loss`` is off (then the stream starts at the earliest and
    counts the rest as lost). Each names the partition, its range and what to do.

    Examples
    --------
    >>> check_starting_offsets({("t", 0): 500}, {("t", 0): 0}, {("t", 0): 20}, address="b:9092",
    ...                        fail_on_data_loss=True)
    Traceback (most recent call last):
    ...
    trident_spark.errors.OffsetOutOfRangeError: KafkaSpout(starting_offsets=...) on b:9092: t[0] starts ...
    """
    past, before = starting_offset_problems(given, earliest, latest)
    if past:
        raise OffsetOutOfRangeError(
            f"KafkaSpout(starting_offsets=...) on {address}: {'; '.join(past)}. Give an offset from the "
            f"partition's first offset up to its high watermark, or starting_offsets='latest' (-1 for one "
            f"partition) to read only new records, or 'earliest' (-2) to read everything it holds")
    if before and fail_on_data_loss:
        raise DataLossError(
            f"KafkaSpout(starting_offsets=...) on {address}: {'; '.join(before)}. Give an offset the "
            f"partition still holds, or 'earliest' (-2), or set fail_on_data_loss=False to start at the "
            f"earliest and count the deleted records as lost")


@dataclass
class PartitionSample:
    """Records read from the head of one partition's pending range, to size a batch.

    ``offsets`` and ``sizes`` are in log order from the range's start; ``complete``
    says the sample reached the partition's high watermark.
    """

    offsets: list[int] = field(default_factory=list)
    sizes: list[int] = field(default_factory=list)
    complete: bool = False

    @property
    def total_bytes(self) -> int:
        return sum(self.sizes)

    @property
    def average_record_bytes(self) -> float | None:
        """Mean bytes per record in the sample; None when it holds no record."""
        return self.total_bytes / len(self.sizes) if self.sizes else None


def prorate_max_rows(start: Offsets, end: Offsets, max_rows: int) -> Offsets:
    """Cap a batch at ``max_rows`` records, split across partitions in proportion to backlog.

    Spark's Kafka source rule: each partition gets ``max_rows * backlog / total``
    records, rounded down, but a partition with a backlog is never starved
    (a share below one rounds up to one).

    Examples
    --------
    >>> prorate_max_rows({("t", 0): 0, ("t", 1): 0}, {("t", 0): 300, ("t", 1): 100}, 100)
    {('t', 0): 75, ('t', 1): 25}
    """
    backlog = {tp: max(0, end[tp] - start.get(tp, 0)) for tp in end}
    total = sum(backlog.values())
    if total <= max_rows:
        return dict(end)
    capped: Offsets = {}
    for tp, size in backlog.items():
        begin = start.get(tp, 0)
        share = max_rows * (size / total)
        take = math.ceil(share) if share < 1 else math.floor(share)
        capped[tp] = min(end[tp], begin + take)
    return capped


def byte_budget_end(start: int, high_watermark: int, sample: PartitionSample, budget: int,
                    average: float | None = None) -> int:
    """End offset (exclusive) of a read of at most about ``budget`` bytes from ``start``.

    Trident's rule: one fetch of *max fetch bytes* per partition per batch. Records
    in the sample are counted exactly; past the sample the count is extrapolated
    from ``average`` bytes per record (default: the sample's own average). At least
    one record is taken when any is pending, so a record larger than the budget
    cannot stall the stream.

    Examples
    --------
    >>> sample = PartitionSample(offsets=[10, 11, 12, 13], sizes=[40, 40, 40, 40])
    >>> byte_budget_end(10, 100, sample, budget=100)  # two records fit in 100 bytes
    12
    >>> byte_budget_end(10, 100, sample, budget=400)  # past the sample: 400 / 40 = 10 records
    20
    """
    if high_watermark <= start:
        return start
    used = 0
    end = start
    for offset, size in zip(sample.offsets, sample.sizes, strict=True):
        if offset >= high_watermark:
            break
        if used + size > budget and end > start:
            return end
        used += size
        end = offset + 1
    if sample.complete:
        return high_watermark
    average = average or sample.average_record_bytes
    if average is None:
        return start
    extra = int((budget - used) // average) if used < budget else 0
    return min(high_watermark, end + extra)


@dataclass
class RecordSizeEstimate:
    """Average record size of one partition over recent samples, older samples fading.

    One sample of a few kilobytes gives a noisy average; Trident's repeated fetches
    average over many. ``decay`` is the weight kept by the history at each new sample.

    Examples
    --------
    >>> est = RecordSizeEstimate()
    >>> est.add(PartitionSample(offsets=[0, 1], sizes=[100, 300]))
    200.0
    >>> round(est.add(PartitionSample(offsets=[2, 3], sizes=[100, 100])), 1)
    144.4
    """

    decay: float = 0.8
    bytes: float = 0.0
    records: float = 0.0

    def add(self, sample: PartitionSample) -> float | None:
        """Fold ``sample`` in; return the current average (None before any record)."""
        if sample.sizes:
            self.bytes = self.bytes * self.decay + sample.total_bytes
            self.records = self.records * self.decay + len(sample.sizes)
        return self.bytes / self.records if self.records else None


def estimate_range_bytes(start: int, end: int, sample: PartitionSample | None) -> int:
    """Bytes in ``[start, end)``: exact where the sample covers it, else its average.

    Examples
    --------
    >>> estimate_range_bytes(0, 4, PartitionSample(offsets=[0, 1], sizes=[10, 30]))
    80
    """
    if sample is None or not sample.sizes or end <= start:
        return 0
    counted = 0
    covered = start
    for offset, size in zip(sample.offsets, sample.sizes, strict=True):
        if offset < start:
            continue
        if offset >= end:
            break
        counted += size
        covered = offset + 1
    average = sample.average_record_bytes or 0.0
    return counted + round(max(0, end - covered) * average)


@dataclass(frozen=True)
class OffsetRange:
    """One input split: records ``[start, until)`` of one Kafka partition."""

    topic: str
    partition: int
    start: int
    until: int
    #: Where the batch's records of this partition start, when the range is a part of them
    #: (``min_partitions`` splits a partition's range): the dead-letter scan stops before it.
    batch_start: int | None = field(default=None, compare=False)

    @property
    def size(self) -> int:
        return self.until - self.start


def plan_ranges(start: Offsets, end: Offsets, min_partitions: int | None = None) -> list[OffsetRange]:
    """Split a batch into input splits: one per Kafka partition with records pending.

    With ``min_partitions``, the largest ranges are cut into equal parts until there
    are at least that many splits (Spark's ``minPartitions``), so a single hot
    partition still spreads over the cluster's cores.

    Examples
    --------
    >>> [r.size for r in plan_ranges({("t", 0): 0}, {("t", 0): 10}, min_partitions=3)]
    [4, 3, 3]
    """
    ranges = [
        OffsetRange(topic, partition, start.get((topic, partition), 0), until)
        for (topic, partition), until in sorted(end.items())
        if until > start.get((topic, partition), 0)
    ]
    if not min_partitions or len(ranges) >= min_partitions:
        return ranges
    total = sum(r.size for r in ranges)
    parts = [max(1, min(r.size, round(min_partitions * r.size / total))) for r in ranges]
    # Rounding can leave fewer splits than asked for: cut the ranges with the most
    # records per split again (a range is never cut below one record per split).
    while sum(parts) < min_partitions:
        splittable = [i for i, r in enumerate(ranges) if parts[i] < r.size]
        if not splittable:
            break
        parts[max(splittable, key=lambda i: ranges[i].size / parts[i])] += 1
    return [split for r, n in zip(ranges, parts, strict=True) for split in _split_evenly(r, n)]


def _split_evenly(r: OffsetRange, parts: int) -> Sequence[OffsetRange]:
    base, extra = divmod(r.size, parts)
    out = []
    cursor = r.start
    for i in range(parts):
        length = base + (1 if i < extra else 0)
        out.append(OffsetRange(r.topic, r.partition, cursor, cursor + length, r.start))
        cursor += length
    return out
