"""Offset arithmetic of the Kafka spout: what a batch contains, decided without a broker."""

from __future__ import annotations

import itertools
import random

import pytest

from trident_spark.spout.kafka.offsets import (
    OffsetRange,
    PartitionSample,
    RecordSizeEstimate,
    byte_budget_end,
    decode_offsets,
    encode_offsets,
    estimate_range_bytes,
    plan_ranges,
    prorate_max_rows,
)

# --- encode / decode ------------------------------------------------------------------


def test_encode_offsets_groups_by_topic_with_string_partitions_in_order():
    encoded = encode_offsets({("words", 1): 7, ("clicks", 0): 3, ("words", 0): 5})
    assert encoded == {"clicks": {"0": 3}, "words": {"0": 5, "1": 7}}
    assert list(encoded) == ["clicks", "words"]
    assert list(encoded["words"]) == ["0", "1"]


def test_decode_offsets_inverts_encode():
    offsets = {("words", 0): 5, ("words", 1): 7, ("clicks", 12): 0, ("a.b-c_d", 3): 10**12}
    assert decode_offsets(encode_offsets(offsets)) == offsets


def test_decode_offsets_accepts_int_like_values_from_json():
    assert decode_offsets({"t": {"10": "42"}}) == {("t", 10): 42}


def test_encode_of_empty_is_empty():
    assert encode_offsets({}) == {}
    assert decode_offsets({}) == {}


# --- prorate_max_rows ----------------------------------------------------------------


def test_prorate_splits_in_proportion_to_backlog():
    start = {("t", 0): 0, ("t", 1): 0}
    end = {("t", 0): 300, ("t", 1): 100}
    assert prorate_max_rows(start, end, 100) == {("t", 0): 75, ("t", 1): 25}


def test_prorate_counts_backlog_from_start_not_from_zero():
    start = {("t", 0): 1000, ("t", 1): 50}
    end = {("t", 0): 1300, ("t", 1): 150}
    assert prorate_max_rows(start, end, 100) == {("t", 0): 1075, ("t", 1): 75}


def test_prorate_rounds_down():
    start = {("t", 0): 0, ("t", 1): 0, ("t", 2): 0}
    end = {("t", 0): 100, ("t", 1): 100, ("t", 2): 100}
    # 10 * 1/3 = 3.33 each: floor gives 3 + 3 + 3 = 9 rows, never more than asked
    assert prorate_max_rows(start, end, 10) == {("t", 0): 3, ("t", 1): 3, ("t", 2): 3}


def test_prorate_never_starves_a_partition_with_backlog():
    start = {("t", 0): 0, ("t", 1): 0}
    end = {("t", 0): 10_000, ("t", 1): 1}
    # share of t[1] is 100 * 1/10001 < 1: rounded up to one record
    assert prorate_max_rows(start, end, 100) == {("t", 0): 99, ("t", 1): 1}


def test_prorate_leaves_a_partition_without_backlog_where_it_is():
    start = {("t", 0): 0, ("t", 1): 40}
    end = {("t", 0): 1000, ("t", 1): 40}
    assert prorate_max_rows(start, end, 10) == {("t", 0): 10, ("t", 1): 40}


def test_prorate_no_cap_when_total_fits():
    start = {("t", 0): 0, ("t", 1): 5}
    end = {("t", 0): 60, ("t", 1): 45}
    assert prorate_max_rows(start, end, 100) == end
    assert prorate_max_rows(start, end, 1_000_000) == end


def test_prorate_total_exactly_max_is_not_capped():
    start = {("t", 0): 0, ("t", 1): 0}
    end = {("t", 0): 70, ("t", 1): 30}
    assert prorate_max_rows(start, end, 100) == end


def test_prorate_partition_missing_from_start_begins_at_zero():
    end = {("t", 0): 100, ("new", 0): 300}
    assert prorate_max_rows({("t", 0): 0}, end, 40) == {("t", 0): 10, ("new", 0): 30}


def test_prorate_never_goes_past_end():
    rng = random.Random(7)
    for _ in range(300):
        n = rng.randint(1, 6)
        start = {("t", p): rng.randint(0, 1000) for p in range(n)}
        end = {tp: s + rng.choice([0, 1, 2, rng.randint(0, 10_000)]) for tp, s in start.items()}
        max_rows = rng.randint(1, 5000)
        capped = prorate_max_rows(start, end, max_rows)
        assert set(capped) == set(end)
        for tp in end:
            assert start[tp] <= capped[tp] <= end[tp]
            if end[tp] > start[tp]:
                assert capped[tp] > start[tp], "a partition with backlog was starved"
        backlog = sum(end[tp] - start[tp] for tp in end)
        taken = sum(capped[tp] - start[tp] for tp in end)
        if backlog <= max_rows:
            assert capped == end
        else:
            # floors keep the total at max_rows, plus at most one record per rounded-up partition
            assert taken <= max_rows + n


# --- byte_budget_end -----------------------------------------------------------------

FOUR_40 = PartitionSample(offsets=[10, 11, 12, 13], sizes=[40, 40, 40, 40])


@pytest.mark.parametrize(
    ("budget", "end"),
    [(40, 11), (79, 11), (80, 12), (100, 12), (119, 12), (120, 13), (159, 13)],
)
def test_byte_budget_counts_sampled_records_exactly(budget, end):
    assert byte_budget_end(10, 100, FOUR_40, budget) == end


def test_byte_budget_extrapolates_past_the_sample_with_its_average():
    # 4 sampled records use 160 bytes; 240 left / 40 per record = 6 more
    assert byte_budget_end(10, 100, FOUR_40, budget=400) == 20
    # 250 left / 40 = 6.25: whole records only
    assert byte_budget_end(10, 100, FOUR_40, budget=410) == 20


def test_byte_budget_exactly_the_sample_stops_at_its_end():
    assert byte_budget_end(10, 100, FOUR_40, budget=160) == 14


def test_byte_budget_extrapolation_uses_the_average_of_uneven_records():
    sample = PartitionSample(offsets=[0, 1], sizes=[10, 30])  # average 20
    assert byte_budget_end(0, 1000, sample, budget=100) == 2 + 3


def test_byte_budget_extrapolation_never_passes_the_high_watermark():
    assert byte_budget_end(10, 16, FOUR_40, budget=10_000) == 16


def test_byte_budget_takes_one_record_bigger_than_the_budget():
    sample = PartitionSample(offsets=[5, 6, 7], sizes=[5000, 10, 10])
    assert byte_budget_end(5, 8, sample, budget=100) == 6


def test_byte_budget_takes_one_oversized_record_even_when_the_sample_is_complete():
    sample = PartitionSample(offsets=[5, 6], sizes=[5000, 10], complete=True)
    assert byte_budget_end(5, 7, sample, budget=100) == 6


def test_byte_budget_one_oversized_record_alone_in_the_sample():
    sample = PartitionSample(offsets=[5], sizes=[5000])
    assert byte_budget_end(5, 1000, sample, budget=100) == 6


def test_byte_budget_complete_sample_within_budget_reads_to_high_watermark():
    sample = PartitionSample(offsets=[10, 11], sizes=[40, 40], complete=True)
    # the high watermark may sit past the last record (transaction markers, compaction)
    assert byte_budget_end(10, 15, sample, budget=1000) == 15


def test_byte_budget_complete_sample_over_budget_still_cuts():
    sample = PartitionSample(offsets=[10, 11, 12], sizes=[40, 40, 40], complete=True)
    assert byte_budget_end(10, 13, sample, budget=80) == 12


@pytest.mark.parametrize("start", [100, 150])
def test_byte_budget_nothing_pending_returns_start(start):
    assert byte_budget_end(start, 100, FOUR_40, budget=1000) == start
    assert byte_budget_end(start, 100, PartitionSample(), budget=1000) == start


def test_byte_budget_empty_incomplete_sample_takes_nothing():
    assert byte_budget_end(10, 100, PartitionSample(), budget=1000) == 10


def test_byte_budget_empty_complete_sample_reads_to_high_watermark():
    # only markers pending: nothing to count, move past them
    assert byte_budget_end(10, 12, PartitionSample(complete=True), budget=1000) == 12


def test_byte_budget_with_offset_gaps_ends_after_the_last_record_taken():
    sample = PartitionSample(offsets=[10, 12, 15, 16], sizes=[40, 40, 40, 40])
    assert byte_budget_end(10, 100, sample, budget=80) == 13
    assert byte_budget_end(10, 100, sample, budget=120) == 16
    assert byte_budget_end(10, 100, sample, budget=40) == 11


def test_byte_budget_ignores_sampled_records_at_or_past_the_high_watermark():
    sample = PartitionSample(offsets=[10, 11, 12, 13], sizes=[40, 40, 40, 40])
    assert byte_budget_end(10, 12, sample, budget=1000) == 12


def test_byte_budget_extrapolates_with_a_given_average():
    # the sample is counted exactly; past it, 240 bytes left / 80 per record = 3 more
    assert byte_budget_end(10, 100, FOUR_40, budget=400, average=80.0) == 14 + 3
    assert byte_budget_end(10, 100, FOUR_40, budget=100, average=1.0) == 12


def test_byte_budget_given_average_extrapolates_an_empty_sample():
    assert byte_budget_end(10, 100, PartitionSample(), budget=1000, average=100.0) == 20


def test_byte_budget_given_average_does_not_matter_for_a_complete_sample():
    sample = PartitionSample(offsets=[10, 11], sizes=[40, 40], complete=True)
    assert byte_budget_end(10, 15, sample, budget=1000, average=1_000_000.0) == 15


# --- RecordSizeEstimate --------------------------------------------------------------


def test_record_size_estimate_starts_with_the_first_sample():
    est = RecordSizeEstimate()
    assert est.add(PartitionSample()) is None
    assert est.add(PartitionSample(offsets=[0, 1], sizes=[100, 300])) == 200.0


def test_record_size_estimate_fades_older_samples():
    est = RecordSizeEstimate(decay=0.5)
    est.add(PartitionSample(offsets=[0], sizes=[1000]))
    # (1000 * 0.5 + 100) / (1 * 0.5 + 1)
    assert est.add(PartitionSample(offsets=[1], sizes=[100])) == pytest.approx(400.0)
    for offset in range(2, 40):
        average = est.add(PartitionSample(offsets=[offset], sizes=[100]))
    assert average == pytest.approx(100.0, abs=1e-6)


def test_record_size_estimate_weights_by_records_not_by_samples():
    est = RecordSizeEstimate(decay=1.0)
    est.add(PartitionSample(offsets=[0], sizes=[1000]))
    assert est.add(PartitionSample(offsets=list(range(1, 10)), sizes=[100] * 9)) == 190.0


def test_record_size_estimate_keeps_its_value_on_an_empty_sample():
    est = RecordSizeEstimate()
    est.add(PartitionSample(offsets=[0, 1], sizes=[10, 30]))
    assert est.add(PartitionSample(complete=True)) == 20.0


def test_record_size_estimate_without_history():
    est = RecordSizeEstimate(decay=0.0)
    est.add(PartitionSample(offsets=[0], sizes=[1000]))
    assert est.add(PartitionSample(offsets=[1], sizes=[10])) == 10.0


def _sampled_bytes(sample, start, end):
    return sum(size for offset, size in zip(sample.offsets, sample.sizes, strict=True)
               if start <= offset < end)


def _random_sample(rng, start):
    offsets = []
    cursor = start
    for _ in range(rng.randint(0, 12)):
        cursor += rng.choice([0, 0, 0, 1, 3])  # gaps now and then
        offsets.append(cursor)
        cursor += 1
    sizes = [rng.choice([1, 10, 100, 1000, rng.randint(1, 5000)]) for _ in offsets]
    return offsets, sizes


def test_byte_budget_end_invariants_on_random_partitions():
    for seed in range(500):
        rng = random.Random(seed)
        start = rng.randint(0, 1000)
        offsets, sizes = _random_sample(rng, start)
        last = offsets[-1] + 1 if offsets else start
        complete = rng.random() < 0.4
        high = last + rng.choice([0, 1, 5]) if complete else last + rng.randint(0, 500)
        sample = PartitionSample(offsets=offsets, sizes=sizes, complete=complete)
        budget = rng.randint(1, 20_000)
        average = rng.choice([None, None, rng.uniform(1, 3000)])
        end = byte_budget_end(start, high, sample, budget, average)
        context = (f"seed={seed} start={start} high={high} sample={sample} budget={budget} "
                   f"average={average} end={end}")

        assert start <= end <= high, context
        if offsets and offsets[0] < high:
            assert end > start, "a pending record was not taken: " + context
        taken = [o for o in offsets if start <= o < end]
        if end <= last and len(taken) > 1:
            assert _sampled_bytes(sample, start, end) <= budget, context
        if complete and sum(sizes) <= budget:
            assert end == high, context
        # more budget never means a smaller batch
        assert byte_budget_end(start, high, sample, budget * 2, average) >= end, context


# --- estimate_range_bytes ------------------------------------------------------------


def test_estimate_counts_sampled_records_exactly_and_extrapolates_the_rest():
    sample = PartitionSample(offsets=[0, 1], sizes=[10, 30])
    assert estimate_range_bytes(0, 4, sample) == 10 + 30 + 2 * 20
    assert estimate_range_bytes(0, 2, sample) == 40
    assert estimate_range_bytes(0, 1, sample) == 10


def test_estimate_skips_sampled_records_before_start():
    sample = PartitionSample(offsets=[0, 1, 2], sizes=[10, 30, 50])
    assert estimate_range_bytes(1, 3, sample) == 80
    assert estimate_range_bytes(2, 3, sample) == 50


def test_estimate_with_gaps_extrapolates_only_past_the_last_sampled_record():
    sample = PartitionSample(offsets=[0, 5], sizes=[100, 100])
    assert estimate_range_bytes(0, 6, sample) == 200
    assert estimate_range_bytes(0, 8, sample) == 400


def test_estimate_rounds_to_whole_bytes():
    sample = PartitionSample(offsets=[0, 1, 2], sizes=[1, 1, 2])  # average 4/3
    assert estimate_range_bytes(0, 6, sample) == 4 + round(3 * 4 / 3)


@pytest.mark.parametrize("sample", [None, PartitionSample()])
def test_estimate_without_sample_is_zero(sample):
    assert estimate_range_bytes(0, 100, sample) == 0


def test_estimate_of_empty_range_is_zero():
    assert estimate_range_bytes(5, 5, FOUR_40) == 0
    assert estimate_range_bytes(9, 5, FOUR_40) == 0


def test_sample_totals():
    sample = PartitionSample(offsets=[0, 1, 2], sizes=[10, 20, 60])
    assert sample.total_bytes == 90
    assert sample.average_record_bytes == 30.0
    assert PartitionSample().average_record_bytes is None
    assert PartitionSample().total_bytes == 0


# --- plan_ranges ---------------------------------------------------------------------


def test_plan_one_range_per_partition_with_data_sorted():
    start = {("b", 0): 5, ("a", 1): 0, ("a", 0): 10}
    end = {("b", 0): 7, ("a", 1): 3, ("a", 0): 12}
    assert plan_ranges(start, end) == [
        OffsetRange("a", 0, 10, 12),
        OffsetRange("a", 1, 0, 3),
        OffsetRange("b", 0, 5, 7),
    ]


def test_plan_skips_partitions_without_records():
    start = {("t", 0): 5, ("t", 1): 3, ("t", 2): 0}
    end = {("t", 0): 5, ("t", 1): 9, ("t", 2): 0}
    assert plan_ranges(start, end) == [OffsetRange("t", 1, 3, 9)]


def test_plan_partition_missing_from_start_begins_at_zero():
    assert plan_ranges({}, {("t", 0): 4}) == [OffsetRange("t", 0, 0, 4)]


def test_plan_nothing_pending_is_empty():
    assert plan_ranges({("t", 0): 4}, {("t", 0): 4}, min_partitions=8) == []
    assert plan_ranges({}, {}) == []


def test_plan_min_partitions_splits_evenly():
    ranges = plan_ranges({("t", 0): 0}, {("t", 0): 10}, min_partitions=3)
    assert ranges == [OffsetRange("t", 0, 0, 4), OffsetRange("t", 0, 4, 7), OffsetRange("t", 0, 7, 10)]


def test_plan_min_partitions_spreads_a_hot_partition():
    start = {("t", 0): 0, ("t", 1): 0}
    end = {("t", 0): 1000, ("t", 1): 2}
    ranges = plan_ranges(start, end, min_partitions=8)
    hot = [r for r in ranges if r.partition == 0]
    cold = [r for r in ranges if r.partition == 1]
    assert cold == [OffsetRange("t", 1, 0, 2)]
    assert len(hot) >= 7
    assert {r.size for r in hot} <= {1000 // len(hot), 1000 // len(hot) + 1}


def test_plan_min_partitions_already_met_leaves_ranges_whole():
    start = {("t", p): 0 for p in range(4)}
    end = {("t", p): 100 for p in range(4)}
    assert plan_ranges(start, end, min_partitions=4) == plan_ranges(start, end)
    assert len(plan_ranges(start, end, min_partitions=2)) == 4


def test_plan_min_partitions_never_makes_empty_splits():
    ranges = plan_ranges({("t", 0): 0}, {("t", 0): 3}, min_partitions=10)
    assert ranges == [OffsetRange("t", 0, 0, 1), OffsetRange("t", 0, 1, 2), OffsetRange("t", 0, 2, 3)]


def test_plan_min_partitions_reached_when_rounding_would_fall_short():
    # three equal partitions and 4 wanted: 4 * 1/3 rounds to 1 each
    start = {("t", p): 0 for p in range(3)}
    end = {("t", p): 90 for p in range(3)}
    ranges = plan_ranges(start, end, min_partitions=4)
    assert len(ranges) == 4


def test_plan_ranges_invariants_on_random_batches():
    for seed in range(500):
        rng = random.Random(seed)
        n = rng.randint(1, 6)
        start = {("t", p): rng.randint(0, 100) for p in range(n)}
        end = {tp: s + rng.choice([0, 1, 2, rng.randint(0, 300)]) for tp, s in start.items()}
        min_partitions = rng.choice([None, 1, n, rng.randint(1, 40)])
        ranges = plan_ranges(start, end, min_partitions)
        context = f"seed={seed} start={start} end={end} min_partitions={min_partitions}"

        assert all(r.size > 0 for r in ranges), "empty split: " + context
        by_partition: dict = {}
        for r in ranges:
            by_partition.setdefault((r.topic, r.partition), []).append(r)
        assert set(by_partition) == {tp for tp in end if end[tp] > start[tp]}, context
        for tp, parts in by_partition.items():
            assert parts[0].start == start[tp], context
            assert parts[-1].until == end[tp], context
            for before, after in itertools.pairwise(parts):
                assert before.until == after.start, "not contiguous: " + context
        total = sum(end[tp] - start[tp] for tp in end)
        assert sum(r.size for r in ranges) == total, context
        if min_partitions:
            assert len(ranges) >= min(min_partitions, total), context
        else:
            assert len(ranges) == len(by_partition), context


def test_offset_range_size():
    assert OffsetRange("t", 0, 10, 25).size == 15
