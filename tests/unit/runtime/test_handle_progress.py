"""The run handle's progress path without Spark: bounded memory, rotated files, replays counted once.

``TopologyHandle._on_progress`` is what Spark's listener calls after every batch; here it is
called with Spark-shaped progress documents, on a stand-in session that has what the handle
asks of one (a listener registry, a context whose status store fails like one without jobs).
"""

from __future__ import annotations

import gc
import json
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from trident_spark.errors import TopologyError
from trident_spark.runtime.handle import PENDING_METRICS, TopologyHandle
from trident_spark.runtime.progress import PROGRESS_FILE, BatchProgress
from trident_spark.runtime.progress_log import ProgressTail, progress_files
from trident_spark.runtime.replayed_rows import SparkReads, with_attempts

QUERY_ID = "5b0c6d39-6a3d-4f59-9d1c-7f9c7d0b4a11"


class Streams:
    def __init__(self) -> None:
        self.listeners: list[Any] = []

    def addListener(self, listener: Any) -> None:
        self.listeners.append(listener)

    def removeListener(self, listener: Any) -> None:
        self.listeners.remove(listener)


class Context:
    defaultParallelism = 2
    master = "local[2]"


class Session:
    """What TopologyHandle uses of a SparkSession; Spark's measures of a batch come back empty."""

    def __init__(self) -> None:
        self.streams = Streams()
        self.sparkContext = Context()


class Query:
    id = QUERY_ID
    name = "words"


def spark_progress(txid: int, rows: int = 1000, **overrides: Any) -> dict[str, Any]:
    """A StreamingQueryProgress as Spark's JSON has it: a Kafka spout over 8 partitions."""
    start = {"words": {str(p): txid * rows // 8 for p in range(8)}}
    end = {"words": {str(p): (txid + 1) * rows // 8 for p in range(8)}}
    progress = {
        "id": QUERY_ID, "runId": "0a8e1f4c-2f53-4b8e-9b4e-2f4cdd4b2a90", "name": "words",
        "timestamp": f"2024-05-01T10:{txid // 60 % 60:02d}:{txid % 60:02d}.000Z", "batchId": txid,
        "batchDuration": 850, "numInputRows": rows, "inputRowsPerSecond": rows / 1.0,
        "processedRowsPerSecond": rows / 0.85,
        "durationMs": {"addBatch": 800, "getBatch": 1, "latestOffset": 20, "queryPlanning": 9,
                       "triggerExecution": 850, "walCommit": 12},
        "stateOperators": [],
        "sources": [{
            "description": "trident_kafka",
            "startOffset": json.dumps({"offsets": start}),
            "endOffset": json.dumps({"offsets": end, "batch": {"bytes": rows * 60, "record_bytes": 60.0,
                                                               "limited_by": "max_fetch_bytes",
                                                               "lost": 0, "read_limit_bytes": 100_000}}),
            "latestOffset": json.dumps({"offsets": end}),
            "numInputRows": rows, "inputRowsPerSecond": rows / 1.0, "processedRowsPerSecond": rows / 0.85,
        }],
        "sink": {"description": "ForeachBatchSink", "numOutputRows": -1},
        "observedMetrics": {"words_spout": {"malformed_records": 0, "read_ms": 41.5}},
    }
    progress.update(overrides)
    return progress


def task_counters(rows: int = 1000) -> dict[Any, float]:
    """What a batch's tasks count: state counters and three stages."""
    counters: dict[Any, float] = {"store_reads": 2, "store_writes": 2, "keys_written": 300,
                                  "cache_hits": 250, "cache_misses": 50}
    for kind, name, ms, rows_in, rows_out in (("python", "each(Split)", 120.0, rows, rows * 5),
                                              ("state_get", "persistentAggregate(Count) / multiGet",
                                               8.0, 300, 300),
                                              ("state_put", "persistentAggregate(Count) / multiPut",
                                               9.0, 300, 300)):
        for metric, value in (("ms", ms), ("rows_in", rows_in), ("rows_out", rows_out), ("tasks", 2)):
            counters[("stage", kind, name, metric)] = value
    return counters


def make_handle(checkpoint: Path, **options: Any) -> TopologyHandle:
    handle = TopologyHandle(Session(), checkpoint, **options)  # type: ignore[arg-type]
    handle._add("words", Query())  # type: ignore[arg-type]
    (checkpoint / "words").mkdir(parents=True, exist_ok=True)
    return handle


def run_batches(handle: TopologyHandle, first: int, last: int) -> None:
    """Batches ``first..last-1`` as the runtime reports them: the runner's counters, then
    Spark's progress event; every 10th batch's event never comes (its counters wait)."""
    for txid in range(first, last):
        handle._record_metrics("words", ["each(Split)", "persistentAggregate(Count)"], txid, task_counters())
        if txid % 10 != 7:
            handle._on_progress(QUERY_ID, spark_progress(txid))


def traced_bytes() -> int:
    gc.collect()
    return tracemalloc.get_traced_memory()[0]


# --- memory stays flat ----------------------------------------------------------------------------
@pytest.mark.slow  # 20,000 batches under tracemalloc: about 17 s, a quarter of the unit tests' time
def test_a_20000_batch_run_of_the_handle_keeps_memory_flat_and_its_files_bounded(tmp_path):
    file_bytes, kept = 512 * 1024, 3
    handle = make_handle(tmp_path, progress_file_bytes=file_bytes, progress_files_kept=kept)
    tracemalloc.start()
    try:
        run_batches(handle, 0, 1000)  # past the 100 batches kept and the first rotations: steady state
        after_1000 = traced_bytes()
        run_batches(handle, 1000, 20_000)
        after_20000 = traced_bytes()
    finally:
        tracemalloc.stop()

    # Bound: 64 KiB of growth over 19,000 more batches, about 3 bytes a batch; keeping every
    # batch's progress, as the handle did, grows by about 4 KiB a batch here (75 MiB).
    assert after_20000 - after_1000 < 64 * 1024, (after_1000, after_20000)
    progress = handle.progress
    assert len(progress) == 100
    assert [p.txid for p in progress][-3:] == [19_996, 19_998, 19_999]  # 19,997's event never came
    assert len(handle._metrics) <= 1  # only the last batch's may still wait for its event
    files = progress_files(tmp_path / "words")
    line_bytes = len(progress[-1].to_json()) + 1
    assert len(files) == kept + 1
    assert all(f.stat().st_size <= file_bytes for f in files)
    assert sum(f.stat().st_size for f in files) <= (kept + 1) * file_bytes
    # what is kept is the newest batches, oldest first, each once
    txids = [b["txid"] for b in ProgressTail(tmp_path / "words" / PROGRESS_FILE).read()]
    assert txids == [t for t in range(20_000) if t % 10 != 7][-len(txids):]
    assert len(txids) >= kept * (file_bytes // line_bytes)


def test_progress_keeps_the_last_progress_history_batches(tmp_path):
    handle = make_handle(tmp_path, progress_history=3)
    for txid in range(5):
        handle._on_progress(QUERY_ID, spark_progress(txid))
    assert [p.txid for p in handle.progress] == [2, 3, 4]
    assert [p.warmup for p in handle.progress] == [False, False, False]  # the warm-up was batch 0
    lines = (tmp_path / "words" / PROGRESS_FILE).read_text().splitlines()
    assert [BatchProgress.from_json(line).txid for line in lines] == [0, 1, 2, 3, 4]


@pytest.mark.parametrize("bad", [0, -1, 2.5, "100", True, None])
def test_progress_history_must_be_a_positive_int(tmp_path, bad):
    with pytest.raises(TopologyError) as info:
        TopologyHandle(Session(), tmp_path, progress_history=bad)  # type: ignore[arg-type]
    assert str(info.value) == ("run(): progress_history must be an int >= 1 (the batches of progress "
                               f"handle.progress keeps in memory, 100 by default), got {bad!r}")


def test_counters_of_batches_whose_progress_never_comes_do_not_pile_up(tmp_path):
    handle = make_handle(tmp_path)
    for txid in range(5):
        handle._record_metrics("words", [], txid, task_counters())
    handle._on_progress(QUERY_ID, spark_progress(3))  # events come in order: 0..2 never will
    assert sorted(handle._metrics) == [("words", 4)]
    for txid in range(5, 5 + 3 * PENDING_METRICS):  # no event at all (the listener was removed)
        handle._record_metrics("words", [], txid, task_counters())
    assert len(handle._metrics) == PENDING_METRICS
    assert min(handle._metrics)[1] == 5 + 2 * PENDING_METRICS  # the newest are kept


def test_the_wait_for_progress_events_sees_the_last_batch_with_a_bounded_history(tmp_path):
    handle = make_handle(tmp_path, progress_history=1)

    class Finished(Query):
        lastProgress = spark_progress(1)
        recentProgress = [spark_progress(0), spark_progress(1)]

    handle._queries["words"] = Finished()  # type: ignore[assignment]
    handle._on_progress(QUERY_ID, spark_progress(1))
    handle._on_progress("another query", spark_progress(9))  # not ours: ignored
    handle._wait_for_progress_events(idle_timeout=0.0)
    assert [p.txid for p in handle.progress] == [1]


def test_the_wait_ends_after_the_last_batchs_callbacks_even_when_an_empty_trigger_came_last(tmp_path):
    # availableNow may end with a progress of no batch (no addBatch): the wait is for the last
    # batch that ran, and until every callback has seen it (a CLI prints its line there).
    import threading
    import time

    handle = make_handle(tmp_path)
    printed: list[int] = []

    def slow_print(batch: BatchProgress) -> None:
        time.sleep(0.3)
        printed.append(batch.txid)

    handle.on_progress(slow_print)
    no_batch = spark_progress(2)
    no_batch["durationMs"] = {"latestOffset": 3, "triggerExecution": 3}

    class Finished(Query):
        lastProgress = no_batch
        recentProgress = [spark_progress(0), spark_progress(1), no_batch]

    handle._queries["words"] = Finished()  # type: ignore[assignment]
    handle._on_progress(QUERY_ID, spark_progress(0))
    late = threading.Thread(target=handle._on_progress, args=(QUERY_ID, spark_progress(1)))
    late.start()
    handle._wait_for_progress_events(idle_timeout=10.0)
    assert printed == [0, 1]
    late.join()


# --- a replayed batch counts its rows once --------------------------------------------------------
def test_a_batch_replayed_in_the_run_reports_the_rows_of_one_attempt(tmp_path):
    handle = make_handle(tmp_path)
    seen: list[BatchProgress] = []
    handle.on_progress(seen.append)
    # Three attempts of 3,999 rows: Spark had counted 7,998 rows before the attempt that
    # succeeded, and reports the sum of all three; its observed metrics are one attempt's.
    before = SparkReads(7998)
    handle._record_metrics("words", [], 5, with_attempts(task_counters(3999), 3, before))
    handle._on_progress(QUERY_ID, spark_progress(
        5, rows=3 * 3999, observedMetrics={"words_spout": {"malformed_records": 1, "read_ms": 41.5}}))

    batch = seen[0]
    assert (batch.rows, batch.attempts, batch.malformed_records) == (3999, 3, 1)
    assert batch.input_rows_per_second == pytest.approx(3999.0)
    assert batch.processed_rows_per_second == pytest.approx(3999 / 0.85)
    assert batch.stages[0] == {"name": "source", "kind": "source", "ms": 41.5, "rows_in": None,
                               "rows_out": 3999, "tasks": None}
    assert batch.state == {"store_reads": 2, "store_writes": 2, "keys_written": 300, "cache_hits": 250,
                           "cache_misses": 50}  # nothing of the replay's accounting leaks in
    assert batch.line().startswith("[words] batch 5: 3,999 rows, 719,820 B, 850 ms, limited by "
                                   "max_fetch_bytes, 1 malformed skipped, 3 attempts; state: ")
    written = BatchProgress.from_json((tmp_path / "words" / PROGRESS_FILE).read_text())
    assert (written.rows, written.attempts) == (3999, 3)


def test_a_batch_run_once_keeps_spark_s_count(tmp_path):
    handle = make_handle(tmp_path)
    handle._record_metrics("words", [], 0, with_attempts(task_counters(), 1, SparkReads(5)))
    handle._on_progress(QUERY_ID, spark_progress(0, rows=1000))
    (batch,) = handle.progress
    assert (batch.rows, batch.attempts) == (1000, 1)
    assert ", attempts" not in batch.line() and " attempts" not in batch.line()


def test_a_replay_spark_did_not_measure_keeps_spark_s_count_and_shows_the_attempts(tmp_path):
    handle = make_handle(tmp_path)
    handle._record_metrics("words", [], 0, with_attempts(task_counters(), 2, None))
    handle._on_progress(QUERY_ID, spark_progress(0, rows=1000))
    (batch,) = handle.progress
    assert (batch.rows, batch.attempts) == (1000, 2)
    assert ", 2 attempts" in batch.line()


class JavaProgressEvent:
    """A progress event as py4j hands it to the listener: each method call is a round trip."""

    def __init__(self, progress: dict[str, Any]) -> None:
        self.calls: list[str] = []
        self._progress = progress

    def progress(self) -> JavaProgressEvent:
        self.calls.append("progress")
        return self

    def json(self) -> str:
        self.calls.append("json")
        return json.dumps(self._progress)


def test_the_listener_reads_a_progress_event_as_its_json_in_two_calls(tmp_path):
    from trident_spark.runtime.handle import _JsonProgressBridge

    handle = make_handle(tmp_path)
    event = JavaProgressEvent(spark_progress(4, rows=800))
    _JsonProgressBridge(handle).onQueryProgress(event)
    # PySpark's own bridge reads every field of the event through py4j (~450 round trips a batch)
    assert event.calls == ["progress", "json"]
    assert [(p.txid, p.rows) for p in handle.progress] == [(4, 800)]
