"""Knee detection on synthetic sweeps: flat, then linear, then a sharp rise."""

from __future__ import annotations

import random

import pytest

from trident_spark.tuning.knee import (
    FLAT,
    GROWING,
    OUTLIER,
    SHARP,
    KneePoint,
    TooFewPointsError,
    find_knee,
)

SIZES = [1024 * 2**i for i in range(8)]  # 1k .. 128k
LABELS = {s: f"{s // 1024}k" for s in SIZES}


def curve(latency, sizes=SIZES, records_per_byte=0.02):
    """Points whose batches hold records_per_byte * size records and take latency(records) ms."""
    points = []
    for size in sizes:
        records = size * records_per_byte
        points.append(KneePoint(size, records, latency(records)))
    return points


def flat_linear_sharp(records, limit=655.36):
    """300 ms of bookkeeping, 1 ms per record, and 12 ms per record beyond `limit` records."""
    return 300 + 1.0 * records + 12.0 * max(0.0, records - limit)


def test_flat_then_linear_then_sharp_finds_the_size_before_the_rise():
    analysis = find_knee(curve(flat_linear_sharp), label=LABELS)
    # records per batch: 20, 41, 82, 164, 328, 655, 1311, 2621 -> the rise starts above 655
    assert analysis.knee.size == 32 * 1024
    assert analysis.sizes(FLAT) == [1024, 2048, 4096]    # 320, 341, 382 ms: within 25% of 320
    assert analysis.sizes(GROWING) == [8192, 16384, 32768]
    assert analysis.sizes(SHARP) == [65536, 131072]
    assert analysis.growing_ms_per_record == pytest.approx(1.0)
    assert analysis.sharp_ms_per_record == pytest.approx(1.0 + 12.0 * 655.36 / 655.36, rel=0.01)
    assert "the knee is 32k" in analysis.reason
    assert "at 64k it rises sharply" in analysis.reason
    assert not analysis.notes


def test_throughput_falling_counts_as_a_sharp_rise_even_straight_after_the_flat_regime():
    # flat up to 8k, then a cliff: no growing regime to compare slopes with
    def cliff(records):
        return 400 + (0 if records < 100 else 8 * records)

    analysis = find_knee(curve(cliff), label=LABELS)
    assert analysis.knee.size == 4096
    assert analysis.sizes(SHARP)[0] == 8192
    assert "throughput" in analysis.reason


def test_no_sharp_rise_takes_the_largest_size_and_says_so():
    analysis = find_knee(curve(lambda r: 300 + 0.5 * r), label=LABELS)
    assert analysis.knee.size == SIZES[-1]
    assert analysis.sharp_index is None
    assert SHARP not in analysis.regimes
    assert any("no sharp rise up to the largest size, 128k" in note for note in analysis.notes)
    assert "no sharp rise was measured" in analysis.reason


def test_throughput_saturating_without_a_rise_is_noted():
    # bookkeeping is negligible against 5 ms per record: the throughput hardly moves at the end
    analysis = find_knee(curve(lambda r: 5 + 5.0 * r), label=LABELS)
    assert analysis.knee.size == SIZES[-1]
    assert any("throughput grew only" in note for note in analysis.notes)


@pytest.mark.parametrize("seed", range(20))
def test_noisy_points_still_find_the_knee(seed):
    rng = random.Random(seed)
    points = [KneePoint(p.size, p.records_per_batch, p.latency_ms * rng.uniform(0.92, 1.08))
              for p in curve(flat_linear_sharp)]
    assert find_knee(points, label=LABELS).knee.size == 32 * 1024


def test_a_lone_slow_point_in_the_growing_regime_is_an_outlier_not_the_knee():
    points = curve(flat_linear_sharp)
    slow = points[3]  # 8k: 464 ms, measured at 1,200 ms (a GC pause)
    points[3] = KneePoint(slow.size, slow.records_per_batch, 1200.0)
    analysis = find_knee(points, label=LABELS)
    assert analysis.regimes[3] == OUTLIER
    assert analysis.knee.size == 32 * 1024
    assert any("8k is out of line" in note for note in analysis.notes)


def test_a_lone_slow_point_in_the_flat_regime_is_an_outlier():
    points = curve(flat_linear_sharp)
    points[1] = KneePoint(points[1].size, points[1].records_per_batch, 900.0)
    analysis = find_knee(points, label=LABELS)
    assert analysis.regimes[1] == OUTLIER
    assert analysis.knee.size == 32 * 1024


def test_sharp_rise_right_after_the_smallest_size_asks_for_smaller_sizes():
    analysis = find_knee([KneePoint(1024, 10, 300), KneePoint(2048, 20, 2000), KneePoint(4096, 40, 6000)],
                         label=LABELS)
    assert analysis.knee.size == 1024
    assert any("sweep smaller sizes" in note for note in analysis.notes)


def test_too_few_points_is_a_clear_error():
    with pytest.raises(TooFewPointsError,
                       match=r"at least 3 batch sizes .* got 2 \(sizes measured: 1k, 2k\)"):
        find_knee([KneePoint(1024, 10, 300), KneePoint(2048, 20, 310)], label=LABELS)


def test_sizes_past_the_end_of_the_slice_count_once():
    # 4k and 8k both read the whole slice (100 records a batch): one point, so too few
    points = [KneePoint(1024, 25, 300), KneePoint(2048, 50, 310), KneePoint(4096, 100, 320),
              KneePoint(8192, 100, 322)]
    with pytest.raises(TooFewPointsError, match=r"got 2 \(sizes measured: 1k, 4k, 8k\)"):
        find_knee(points[:1] + points[2:], label=LABELS)
    assert [p.size for p in find_knee(points, label=LABELS).points] == [1024, 2048, 4096]


def test_points_are_sorted_by_records_per_batch():
    points = curve(flat_linear_sharp)
    assert find_knee(list(reversed(points)), label=LABELS).knee.size == 32 * 1024


def test_a_noisy_flat_curve_has_no_sharp_rise():
    """Measured on examples/wordcount.py (2 cores): latency wanders between 0.8 and 2 s while the
    batch grows 270-fold and throughput rises all the way; the fitted growing slope comes out
    negative, which must not make every later rise look steep."""
    measured = [(4, 115, 1406), (8, 241, 1401), (16, 484, 1268), (32, 970, 809), (64, 1942, 1374),
                (128, 3889, 1535), (256, 7780, 2004), (512, 15564, 1879), (1024, 31130, 1795)]
    analysis = find_knee([KneePoint(size * 1024, records, latency) for size, records, latency in measured])
    assert analysis.sharp_index is None
    assert analysis.knee.size == 1024 * 1024
    assert any("no sharp rise" in note for note in analysis.notes)


def test_the_per_record_cost_coming_out_from_under_a_fixed_cost_is_not_a_sharp_rise():
    """Also measured on examples/wordcount.py, at larger sizes: ~2 s of per-batch overhead up to
    62k records, then the Python Split's cost per record shows (slope 8x the flat stretch's fit)
    while throughput still grows 30%: the growing regime starting, not the knee."""
    measured = [(16, 485, 2196), (32, 969, 1943), (64, 1940, 1637), (128, 3889, 2020), (256, 7778, 2667),
                (512, 15563, 2074), (1024, 31129, 2436), (2048, 62255, 1912), (4096, 124502, 2546),
                (8192, 249072, 3912)]
    analysis = find_knee([KneePoint(size * 1024, records, latency) for size, records, latency in measured])
    assert analysis.sharp_index is None
    assert analysis.knee.size == 8192 * 1024


def test_a_steep_step_under_a_large_fixed_cost_is_still_sharp():
    """1 s fixed + 1 ms a record, then 5 ms a record past 200 records: throughput still grows a
    little, but each extra record costs 5x the growing regime's and near the batch average."""
    points = []
    for records in (25, 50, 100, 200, 400):
        latency = 1000 + records + (4 * (records - 200) if records > 200 else 0)
        points.append(KneePoint(records, records, latency))
    analysis = find_knee(points)
    assert analysis.knee.size == 200 and analysis.regimes[-1] == "sharp"
