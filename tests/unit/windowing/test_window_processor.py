"""The window logic of one task (``trident_spark.windowing.processor``) against a direct computation."""

from __future__ import annotations

import random

import pytest

from trident_spark.errors import TopologyError
from trident_spark.windowing import (
    Duration,
    InMemoryWindowsStore,
    SlidingCountWindow,
    SlidingDurationWindow,
    TumblingCountWindow,
    TumblingDurationWindow,
    WindowProcessor,
    WindowsStoreAheadError,
)


def count_windows(stream: list[int], n: int, slide: int) -> list[list[int]]:
    """Every ``slide`` tuples, the last ``n`` (or fewer)."""
    return [stream[max(0, end - n):end] for end in range(slide, len(stream) + 1, slide)]


def duration_windows(stamped: list[tuple[int, int]], length: int, slide: int,
                     until: int) -> dict[int, list[int]]:
    """Windows ending at multiples of ``slide`` up to ``until``: the values with ts in [end - length, end)."""
    found: dict[int, list[int]] = {}
    for end in range(slide, until + 1, slide):
        inside = [v for ts, v in stamped if end - length <= ts < end]
        if inside:
            found[end] = inside
    return found


def batches_of(values: list[int], sizes: list[int]) -> list[list[int]]:
    out, i = [], 0
    for size in sizes:
        out.append(values[i:i + size])
        i += size
    return out


@pytest.mark.parametrize(("n", "slide"), [(5, 5), (5, 2), (3, 1), (7, 3), (1, 1)])
def test_count_windows_close_in_the_batch_of_their_last_tuple(n, slide):
    rng = random.Random(n * 31 + slide)
    values = list(range(60))
    sizes = [rng.randint(0, 9) for _ in range(15)]
    sizes.append(60 - sum(sizes)) if sum(sizes) < 60 else None
    config = TumblingCountWindow.of(n) if n == slide else SlidingCountWindow.of(n, slide)
    store = InMemoryWindowsStore()
    processor = WindowProcessor(store, "q/1/0", config)
    got: list[list[int]] = []
    seen = 0
    for txid, batch in enumerate(batches_of(values, sizes)):
        result = processor.run_batch(txid, 1000 * txid, [[v] for v in batch])
        seen += len(batch)
        # each window closes in the batch whose tuple closes it
        assert all(w[-1][0] in batch for w in result.windows)
        got.extend([v[0] for v in w] for w in result.windows)
        # nothing is kept that no window can read any more
        assert sum(1 for k in store.getAllKeys() if "/t/" in k) <= n
    assert got == count_windows(values[:seen], n, slide)


def test_a_replayed_batch_closes_the_same_windows_once_and_leaves_the_same_store():
    store = InMemoryWindowsStore()
    processor = WindowProcessor(store, "q/1/0", SlidingCountWindow.of(4, 2))
    batches = [[1, 2, 3], [4, 5], [6, 7, 8, 9], [10]]
    clean = [processor.run_batch(t, 0, [[v] for v in b]).windows for t, b in enumerate(batches)]
    replayed_store = InMemoryWindowsStore()
    replaying = WindowProcessor(replayed_store, "q/1/0", SlidingCountWindow.of(4, 2))
    got = []
    for t, b in enumerate(batches):
        for _ in range(3):  # attempts that fail after the window ran
            replaying.run_batch(t, 0, [[v] for v in b])
        got.append(replaying.run_batch(t, 0, [[v] for v in b]).windows)
    assert got == clean
    assert sorted(replayed_store.getAllKeys()) == sorted(store.getAllKeys())


def test_a_replay_may_bring_other_tuples_and_is_computed_from_the_batch_before():
    processor = WindowProcessor(InMemoryWindowsStore(), "q/1/0", TumblingCountWindow.of(3))
    processor.run_batch(0, 0, [[1], [2]])
    assert processor.run_batch(1, 0, [[3], [4]]).windows == [[[1], [2], [3]]]
    # an opaque replay of batch 1 with other tuples: the windows from batch 0's state
    assert processor.run_batch(1, 0, [[30]]).windows == [[[1], [2], [30]]]
    assert processor.run_batch(2, 0, [[5], [6], [7]]).windows == [[[5], [6], [7]]]


@pytest.mark.parametrize(("length", "slide"), [(1000, 1000), (3000, 1000), (6000, 2000), (2500, 500)])
def test_processing_time_windows_close_in_the_first_batch_after_their_end(length, slide):
    rng = random.Random(length + slide)
    config = (TumblingDurationWindow.of(Duration.of(length)) if length == slide
              else SlidingDurationWindow.of(Duration.of(length), Duration.of(slide)))
    processor = WindowProcessor(InMemoryWindowsStore(), "q/2/1", config)
    now, value, stamped, got = 10_000, 0, [], {}
    for txid in range(25):
        now += rng.choice([0, 300, 700, 1000, 2300, 5000])
        batch = list(range(value, value + rng.randint(0, 4)))
        value += len(batch)
        result = processor.run_batch(txid, now, [[v] for v in batch])
        for end, window in zip(result.ends, result.windows, strict=True):
            assert end <= now and end not in got
            got[end] = [v[0] for v in window]
        stamped.extend((now, v) for v in batch)
    assert got == duration_windows(stamped, length, slide, (now // slide) * slide)


def test_event_time_windows_close_at_the_watermark_and_late_tuples_are_dropped_and_counted():
    config = SlidingDurationWindow.of(Duration.seconds(4), Duration.seconds(2))
    processor = WindowProcessor(InMemoryWindowsStore(), "q/3/0", config, event_time=True, lateness_ms=1000)
    r0 = processor.run_batch(0, 0, [["a"], ["b"]], [1000, 2500])
    assert r0.windows == []  # watermark 1500: no window ends by then
    r1 = processor.run_batch(1, 0, [["c"], ["d"]], [5200, 1800])  # watermark 4200
    assert list(zip(r1.ends, r1.windows, strict=True)) == [(2000, [["a"], ["d"]]),
                                                           (4000, [["a"], ["b"], ["d"]])]
    r2 = processor.run_batch(2, 0, [["late"], ["e"]], [3000, 9000])  # 3000 < 4200: late
    assert r2.late == 1
    assert list(zip(r2.ends, r2.windows, strict=True)) == [(6000, [["b"], ["c"]]), (8000, [["c"]])]


def test_a_store_ahead_of_the_stream_is_refused_with_what_to_do():
    store = InMemoryWindowsStore()
    processor = WindowProcessor(store, "q/1/0", TumblingCountWindow.of(2))
    for t in range(5):
        processor.run_batch(t, 0, [[t]])
    with pytest.raises(WindowsStoreAheadError, match=r"up to 4 but the stream is at batch 0.*new table"):
        processor.run_batch(0, 0, [[0]])


def test_window_configs_check_their_sizes():
    with pytest.raises(TopologyError, match=r"slide .*longer than the window"):
        SlidingCountWindow.of(2, 5)
    with pytest.raises(TopologyError, match="at least 1"):
        TumblingCountWindow.of(0)
    with pytest.raises(TopologyError, match="is a Duration"):
        TumblingDurationWindow.of(10)  # type: ignore[arg-type]
    assert Duration.days(1) == Duration.hours(24)
