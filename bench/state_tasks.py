"""bench/state.py's state task outside Spark: the executor's own ``persist`` on one partition's
input of each batch, run in this process and timed with its store round trips, in scenarios
(same Python worker each batch or alternating ones; cache sizes)."""

from __future__ import annotations

import contextlib
import statistics
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from rich.table import Table


class StoreTimer:
    """Seconds spent in store round trips in this process: wraps ``BatchingMap``'s read and
    write methods (the layer right in front of the store) while in use. Only this process."""

    def __init__(self) -> None:
        self.read_s = self.write_s = 0.0
        self._saved: list[tuple[str, Any]] = []

    def __enter__(self) -> StoreTimer:
        from trident_spark.state.batching import BatchingMap

        for name, slot in (("multiGetVersioned", "read_s"), ("multiGetEncoded", "read_s"),
                           ("multiPutIfVersion", "write_s"), ("multiPutEncoded", "write_s")):
            original = BatchingMap.__dict__[name]

            def timed(this: Any, *args: Any, _original: Any = original, _slot: str = slot) -> Any:
                started = time.perf_counter()
                try:
                    return _original(this, *args)
                finally:
                    setattr(self, _slot, getattr(self, _slot) + time.perf_counter() - started)

            self._saved.append((name, original))
            setattr(BatchingMap, name, timed)
        return self

    def __exit__(self, *exc: object) -> None:
        from trident_spark.state.batching import BatchingMap

        for name, original in self._saved:
            setattr(BatchingMap, name, original)
        self._saved.clear()


def partition_batches(sentences: list[str], batch: int, batches: int) -> list[tuple[list[str], list[int]]]:
    """One shuffle partition's input of each batch: the (word, count) rows of the words whose
    CRC-32 is even (about half the batch's distinct words, as with 2 shuffle partitions)."""
    import zlib

    out = []
    for at in range(0, min(len(sentences), batch * batches), batch):
        counts = Counter(w for s in sentences[at:at + batch] for w in s.split())
        mine = [(w, n) for w, n in counts.items() if zlib.crc32(w.encode()) % 2 == 0]
        out.append(([w for w, _ in mine], [n for _, n in mine]))
    return out


def profile_task(factory: Any, inputs: list[tuple[list[str], list[int]]],
                 workers: str) -> list[dict[str, Any]]:
    """Run the executor's own ``persist`` (state_stage.py) on each batch's partition input in this
    process, timing it and its store round trips. ``workers``: one letter per batch naming the
    Python worker that runs it ("AAAA": always the same; "ABAB": another each time), each worker
    with its own opened states, as Spark's Python workers have."""
    import pyarrow as pa

    from trident_spark.builtin import Count
    from trident_spark.builtin.updaters import MapCombinerAggStateUpdater
    from trident_spark.executor import state_stage
    from trident_spark.fields import Fields

    step = state_stage.StateStep("bench", factory, MapCombinerAggStateUpdater(Count(), Fields("word")),
                                 Fields("word", "count"), ["word", "count"],
                                 {"word": pa.string(), "count": pa.int64()})
    opened: dict[str, dict[bytes, Any]] = {}
    seen: dict[str, dict[str, int]] = {}
    saved = dict(state_stage._OPENED)
    rows = []
    try:
        for txid, ((words, counts), worker) in enumerate(zip(inputs, workers, strict=False)):
            state_stage._OPENED.clear()
            state_stage._OPENED.update(opened.get(worker, {}))
            batch = pa.RecordBatch.from_pydict({"word": words, "count": counts})
            with StoreTimer() as timer:
                started = time.perf_counter()
                out = list(state_stage.persist(step, txid, {}, -1, iter([batch])))
                total = time.perf_counter() - started
            opened[worker] = dict(state_stage._OPENED)
            _run, _generation, state = next(iter(opened[worker].values()))  # (run id, generation, state)
            now = state.stats.snapshot()
            before, seen[worker] = seen.get(worker, {}), now
            rows.append({"worker": worker, "keys": len(words), "ms": total * 1000,
                         "store_read_ms": timer.read_s * 1000, "store_write_ms": timer.write_s * 1000,
                         "other_ms": (total - timer.read_s - timer.write_s) * 1000,
                         "emitted": sum(b.num_rows for b in out)}
                        | {k: v - before.get(k, 0) for k, v in now.items()})
    finally:
        for states in opened.values():
            for _run, _generation, opened_state in states.values():
                with contextlib.suppress(Exception):
                    opened_state.close()
        state_stage._OPENED.clear()
        state_stage._OPENED.update(saved)
    return rows


#: (scenario, state settings, which Python worker runs each batch's task)
TASK_SCENARIOS: tuple[tuple[str, dict[str, Any], str], ...] = (
    ("same worker, cache_size=1000 (default)", {}, "AAAAAA"),
    ("same worker, cache_size=10000", {"cache_size": 10_000}, "AAAAAA"),
    ("alternating workers, cache_size=10000", {"cache_size": 10_000}, "ABABAB"),
    ("no cache (cache_size=0)", {"cache_size": 0}, "AAAAAA"))


def profile_tasks(kinds: list[str], factory_for: Callable[[str, dict[str, Any]], Any], sentences: list[str],
                  batch: int, warm: int) -> dict[str, Any]:
    """Each backend's state task outside Spark, in the scenarios of ``TASK_SCENARIOS``;
    ``factory_for(kind, settings)`` makes a fresh state of that backend."""
    inputs = partition_batches(sentences, batch, 6)
    out: dict[str, Any] = {}
    for kind in kinds:
        for name, settings, workers in TASK_SCENARIOS:
            rows = profile_task(factory_for(kind, settings), inputs, workers)
            warm_rows = rows[warm:]
            out.setdefault(kind, {})[name] = {
                "batches": rows,
                "mean": {k: statistics.fmean(r[k] for r in warm_rows) for k in
                         ("keys", "ms", "store_read_ms", "store_write_ms", "other_ms", "store_reads",
                          "store_writes", "keys_read", "write_conflicts")}}
    return out


def print_tasks(console: Any, tasks: dict[str, Any], warm: int) -> None:
    table = Table(title=f"one state task outside Spark: the executor's persist() on one partition's rows of "
                        f"each batch, in this process (means over batches {warm}+)")
    for column in ("backend", "scenario", "keys", "task ms", "store read ms", "store write ms",
                   "rest ms", "round trips r/w", "keys read", "lost writes"):
        table.add_column(column, justify="left" if column in ("backend", "scenario") else "right")
    for kind, scenarios in tasks.items():
        for name, got in scenarios.items():
            m = got["mean"]
            table.add_row(kind, name, f"{m['keys']:,.0f}", f"{m['ms']:.1f}", f"{m['store_read_ms']:.1f}",
                          f"{m['store_write_ms']:.1f}", f"{m['other_ms']:.1f}",
                          f"{m['store_reads']:.1f}/{m['store_writes']:.1f}", f"{m['keys_read']:,.0f}",
                          f"{m['write_conflicts']:,.0f}")
    console.print(table)
