"""A window stage's cost per batch against a plain aggregation of the same tuples, side by side.

Not a test: it prints ratios. ``--batches`` batches of ``--tuples`` integers go, in one
SparkSession and alternating rounds (this VM's speed drifts), through three contenders, each
summing with the same Python ReducerAggregator:

* **aggregate** (the baseline): ``aggregate(["n"], PySum(), ["sum"])``: one shuffle to one
  partition, then the aggregator over the batch;
* **window, memory**: ``tumblingWindow(tuples, InMemoryWindowsStoreFactory(), ...)``: one window
  per batch: the window stage sorts, stores and reads back the batch's tuples;
* **window, sqlite**: the same on a SQLite windows store (durable);
* **2-batch window, memory** / **sqlite**: ``tumblingWindow(2 * tuples, ...)``: every other batch
  stores its tuples, the next reads them back and aggregates both (a window spanning batches).

Reported: the median time per batch of each (the batches after the first) and its ratio to the
baseline. Run: ``.venv/bin/python bench/windows.py`` (``--quick`` for a smoke run).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.operation import ReducerAggregator
from trident_spark.runtime.session import local_session
from trident_spark.spout import FeederBatchSpout
from trident_spark.windowing import InMemoryWindowsStoreFactory, SqliteWindowsStoreFactory

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # type: ignore[no-untyped-call]


class PySum(ReducerAggregator[int]):
    def init(self) -> int:
        return 0

    def reduce(self, curr: int, tuple: Any) -> int:
        return int(curr + tuple[0])


def one_run(spark: Any, kind: str, batches: int, tuples: int, work: Path) -> list[float]:
    """Seconds per batch (from the progress of each batch) of one contender."""
    spout = FeederBatchSpout(["n:bigint"])
    for b in range(batches):
        spout.feed([[b * tuples + i] for i in range(tuples)])
    topology = TridentTopology()
    stream = topology.newStream("numbers", spout)
    if kind == "aggregate":
        out = stream.aggregate(["n"], PySum(), ["sum"])
    elif kind == "window, memory":
        out = stream.tumblingWindow(tuples, InMemoryWindowsStoreFactory(), ["n"], PySum(), ["sum"])
    else:
        size = 2 * tuples if kind.startswith("2-batch") else tuples
        store: Any = (InMemoryWindowsStoreFactory() if kind.endswith("memory")
                      else SqliteWindowsStoreFactory(path=str(work / f"w{time.monotonic_ns()}.db")))
        out = stream.tumblingWindow(size, store, ["n"], PySum(), ["sum"])
    sink = out.collect()
    with topology.run(work / f"ckpt-{time.monotonic_ns()}", trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
        progress = list(handle.progress)
    per = 2 if kind.startswith("2-batch") else 1
    expected = [sum(range(b * tuples, (b + per) * tuples)) for b in range(0, batches - per + 1, per)]
    got = [t["sum"] for txid in sorted(sink.batches) for t in sink.batches[txid]]
    assert got == expected, (kind, got[:3], expected[:3])
    return [p.duration_ms / 1000 for p in progress[1:]]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--batches", type=int, default=8)
    parser.add_argument("--tuples", type=int, default=50_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--quick", action="store_true", help="2 rounds of 4 batches of 5,000 tuples")
    args = parser.parse_args()
    if args.quick:
        args.batches, args.tuples, args.rounds = 4, 5000, 2
    spark = local_session("bench-windows", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    kinds = ["aggregate", "window, memory", "window, sqlite",
             "2-batch window, memory", "2-batch window, sqlite"]
    times: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory() as tmp:
        for r in range(args.rounds):
            for kind in kinds[r % len(kinds):] + kinds[:r % len(kinds)]:
                times[kind] += one_run(spark, kind, args.batches, args.tuples, Path(tmp))
    base = statistics.median(times["aggregate"])
    print(f"{args.batches} batches x {args.tuples} tuples, {args.rounds} rounds (median s per batch)")
    for kind in kinds:
        median = statistics.median(times[kind])
        print(f"  {kind:24s} {median:7.3f} s   x{median / base:.2f}")
    spark.stop()


if __name__ == "__main__":
    main()
