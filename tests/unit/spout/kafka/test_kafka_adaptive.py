"""The adaptive batching controller on simulated batches: d = fixed + cost_per_byte x bytes (+ noise).

Each simulated batch reads ``limit`` bytes from its fullest partition (a backlog
larger than any limit), unless the simulation says the data ran out.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import pytest

from trident_spark.spout.kafka.adaptive import (
    AT_BOUND,
    AT_FLOOR,
    DECREASE,
    FIXED_COST,
    INCREASE,
    NOT_CUT,
    ON_TARGET,
    AdaptiveController,
    Feedback,
    Observation,
    feedback_path,
    read_feedback,
    write_feedback,
)

TARGET = 1000.0
MiB = 1 << 20


def simulate(controller: AdaptiveController, cost: Callable[[int, int], float], batches: int,
             available: int | None = None, record_bytes: float = 100.0) -> list[tuple[int, float, str]]:
    """(limit, duration, reason of the next decision) per batch; ``cost(batch, bytes) -> ms``."""
    limit, reference, previous = controller.initial(), None, None
    out = []
    for i in range(batches):
        read = limit if available is None else min(limit, available)
        d = cost(i, read)
        decision = controller.next(limit, Observation(d, read, read >= limit, record_bytes), reference,
                                   previous)
        out.append((limit, d, decision.reason))
        limit, reference, previous = decision.limit, decision.reference, decision.previous
    return out


def linear(fixed: float, per_kib: float) -> Callable[[int, int], float]:
    return lambda _i, b: fixed + per_kib * b / 1024


def first_within(runs: list[tuple[int, float, str]], tolerance: float, start: int = 0) -> int:
    """Batches after ``start`` until one is within ``tolerance`` of the target."""
    for i, (_, d, _) in enumerate(runs[start:]):
        if abs(d - TARGET) <= tolerance * TARGET:
            return i
    raise AssertionError(f"never within {tolerance:.0%}: {[round(d) for _, d, _ in runs[start:]]}")


def stays_within(runs: list[tuple[int, float, str]], tolerance: float) -> bool:
    return all(abs(d - TARGET) <= tolerance * TARGET for _, d, _ in runs)


@pytest.mark.parametrize(("fixed", "per_kib"), [
    (0, 2.0),      # no fixed cost: target at 500 KiB
    (300, 1.4),    # a typical Spark batch overhead: target at 500 KiB
    (700, 0.5),    # fixed cost dominates the first batches: target at 600 KiB
    (50, 20.0),    # expensive records: target below the initial limit (47.5 KiB)
])
def test_converges_within_10_batches_and_stays(fixed, per_kib):
    runs = simulate(AdaptiveController(TARGET), linear(fixed, per_kib), 30)
    assert first_within(runs, 0.10) <= 10
    assert stays_within(runs[10:], 0.10)


def test_increase_never_overshoots_on_a_linear_cost():
    # The average cost per byte includes the fixed cost, so it over-estimates the marginal cost.
    runs = simulate(AdaptiveController(TARGET), linear(400, 0.3), 20)
    assert max(d for _, d, _ in runs) <= TARGET
    assert [reason for _, _, reason in runs][:2] == [INCREASE, INCREASE]


def test_growth_per_batch_is_at_most_4x():
    runs = simulate(AdaptiveController(TARGET), linear(0, 0.001), 4)
    limits = [limit for limit, _, _ in runs]
    assert limits == [64 * 1024, 256 * 1024, MiB, MiB]
    assert runs[-1][2] == AT_BOUND


@pytest.mark.parametrize("factor", [4.0, 0.25])
def test_recovers_within_10_batches_after_a_step_in_per_record_cost(factor):
    def cost(i: int, b: int) -> float:
        return 300 + (1.4 if i < 20 else 1.4 * factor) * b / 1024

    runs = simulate(AdaptiveController(TARGET, max_bytes=4 * MiB), cost, 45)
    assert stays_within(runs[10:20], 0.10)
    assert first_within(runs, 0.10, start=20) <= 10
    assert stays_within(runs[31:], 0.10)


def test_with_noise_most_batches_stay_within_25_percent():
    rng = random.Random(5)

    def cost(i: int, b: int) -> float:
        per_kib = 1.4 if i < 40 else 4.2  # and a step at batch 40
        return (300 + per_kib * b / 1024) * rng.gauss(1.0, 0.10)

    runs = simulate(AdaptiveController(TARGET), cost, 80)
    assert first_within(runs, 0.25) <= 10
    assert first_within(runs, 0.25, start=40) <= 10
    settled = runs[10:40] + runs[50:]
    inside = sum(abs(d - TARGET) <= 0.25 * TARGET for _, d, _ in settled)
    assert inside >= 0.9 * len(settled), [round(d) for _, d, _ in settled]


def test_dead_band_holds_the_limit():
    c = AdaptiveController(TARGET)
    for d in (905, 1000, 1095):
        decision = c.next(100_000, Observation(d, 100_000, cut_by_limit=True))
        assert (decision.limit, decision.reason) == (100_000, ON_TARGET)


def test_no_increase_when_the_data_ran_out_before_the_limit():
    runs = simulate(AdaptiveController(TARGET), linear(100, 1.0), 5, available=20_000)
    assert [limit for limit, _, _ in runs] == [64 * 1024] * 5
    assert {reason for _, _, reason in runs} == {NOT_CUT}


def test_decrease_starts_from_what_the_batch_read():
    # A limit of 1 MiB, but only 100 KB was there and it took 3x the target.
    decision = AdaptiveController(TARGET).next(MiB, Observation(3000, 100_000, cut_by_limit=False))
    assert (decision.limit, decision.reason) == (50_000, DECREASE)
    assert decision.reference == (100_000, 3000)


def test_decrease_is_by_target_over_duration_at_most_half():
    c = AdaptiveController(TARGET)
    assert c.next(100_000, Observation(1250, 100_000, True)).limit == 80_000
    assert c.next(100_000, Observation(10_000, 100_000, True)).limit == 50_000


def test_never_above_the_bound():
    c = AdaptiveController(TARGET, max_bytes=200_000)
    runs = simulate(c, linear(0, 0.01), 10)
    assert max(limit for limit, _, _ in runs) == 200_000
    assert c.next(500_000, Observation(100, 200_000, True)).limit == 200_000  # a lowered bound applies


def test_never_below_one_record():
    # Each record costs more than the target: shrink to one record, then hold there.
    runs = simulate(AdaptiveController(TARGET), lambda _i, b: 5000.0 * max(1, b // 1000), 20,
                    record_bytes=1000.0)
    assert min(limit for limit, _, _ in runs) == 1000
    assert runs[-1][0] == 1000 and runs[-1][2] == AT_FLOOR


def test_fixed_cost_above_the_target_stops_the_shrinking():
    # 1500 ms whatever the size: shrinking cannot reach 1000 ms and would only fall behind.
    runs = simulate(AdaptiveController(TARGET), linear(1500, 0.5), 20)
    limits = [limit for limit, _, _ in runs]
    assert min(limits) >= 64 * 1024 // 4
    assert limits[-1] == limits[-5]
    assert runs[-1][2] == FIXED_COST


def test_after_a_fixed_cost_hold_a_higher_per_record_cost_shrinks_again():
    def cost(i: int, b: int) -> float:
        return 1500 + (0.5 if i < 10 else 20.0) * b / 1024

    runs = simulate(AdaptiveController(TARGET), cost, 14)
    held = runs[9][0]
    assert runs[9][2] == FIXED_COST
    assert runs[10][2] == DECREASE and runs[11][0] < held


# --- feedback file ----------------------------------------------------------------------


def test_feedback_round_trip_and_replace(tmp_path):
    assert read_feedback(tmp_path) is None
    write_feedback(tmp_path, 3, 812.04)
    write_feedback(tmp_path, 4, 640.0)
    feedback = read_feedback(tmp_path)
    assert feedback is not None and (feedback.batch_id, feedback.duration_ms) == (4, 640.0)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["trident-adaptive-feedback.json"]


def test_unreadable_feedback_is_no_feedback(tmp_path):
    feedback_path(tmp_path).write_text("{not json")
    assert read_feedback(tmp_path) is None


def test_after_batch_writes_only_for_adaptive_spouts(tmp_path):
    """The runtime tells every spout a batch finished (``Spout.after_batch``, the first of a run
    marked as the warm-up: ``BatchRunner``); only an adaptive KafkaSpout records it."""
    from trident_spark.spout import KafkaSpout
    from trident_spark.spout.base import BatchFeedback

    KafkaSpout("127.0.0.1:9092", ["words"]).after_batch(BatchFeedback(0, 10.0, tmp_path, warmup=True))
    assert read_feedback(tmp_path) is None
    spout = KafkaSpout("127.0.0.1:9092", ["words"], adaptive_target_ms=800)
    spout.after_batch(BatchFeedback(7, 250.0, tmp_path, warmup=True))
    feedback = read_feedback(tmp_path)
    assert feedback is not None and feedback.batch_id == 7 and 250 <= feedback.duration_ms < 1000
    assert feedback.warmup  # the run's first batch: workers starting, code loading
    spout.after_batch(BatchFeedback(8, 0.0, tmp_path, warmup=False))
    assert read_feedback(tmp_path) == Feedback(8, pytest.approx(0, abs=50), warmup=False)
    spout.after_batch(BatchFeedback(8, 0.0, None))  # no checkpoint: nothing to do
