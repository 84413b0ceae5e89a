"""What the per-batch, per-stage metrics cost, measured side by side with them off.

Not a test: it prints ratios. Two parts:

* **Executor side** (no Spark): the fused Python stage (``run_stage``, a Python
  ``Split`` over Arrow batches of sentences) with and without its metrics (one clock
  read per operator per Arrow batch, one accumulator update per task), and the
  ``timed`` wrapper that state and aggregation stages run in, around a pass-through
  stage. Rounds alternate; medians.
* **Driver side** (local Spark): the batch's own path makes no Spark call for
  metrics; the progress listener reads the batch's stages from Spark's status store
  afterwards, off the batch's path. Its time, for a batch of three jobs.

Usage: ``python bench/metrics_overhead.py [--batches 200] [--rows 10000] [--rounds 7]``
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Iterator
from typing import Any

import pyarrow as pa

from trident_spark.executor.metrics import timed
from trident_spark.executor.python_stage import PythonStep, run_stage
from trident_spark.fields import Fields
from trident_spark.operation import BaseFunction


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getString(0).split():
            collector.emit([word])


class Sink:
    """Stands in for the Spark accumulator: sums like it, on the same dict."""

    def __init__(self) -> None:
        self.value: dict[Any, float] = {}

    def add(self, counters: dict[Any, float]) -> None:
        for key, count in counters.items():
            self.value[key] = self.value.get(key, 0) + count


def arrow_batches(n: int, rows: int) -> list[pa.RecordBatch]:
    words = ["four", "score", "and", "seven", "years", "ago", "our", "fathers", "brought", "forth", "on",
             "this", "continent"]
    sentences = [" ".join(words[i % 7: i % 7 + 4 + i % 9]) for i in range(rows)]
    batch = pa.RecordBatch.from_pydict({"value": sentences})
    return [batch] * n


def run_split(batches: list[pa.RecordBatch], metrics: Any) -> int:
    step = PythonStep("split", Split(), Fields(["value"]), Fields(["word"]))
    out = run_stage([step], ["word"], {"word": pa.string()}, 0, iter(batches), metrics=metrics)
    return sum(b.num_rows for b in out)


def pass_through(batches: Iterator[pa.RecordBatch]) -> Iterator[pa.RecordBatch]:
    yield from batches


def run_wrapped(batches: list[pa.RecordBatch], metrics: Any) -> int:
    fn = timed(pass_through, "aggregate", "pass", metrics)
    return sum(b.num_rows for b in fn(iter(batches)))


def seconds(fn: Any, *args: Any) -> float:
    started = time.perf_counter()
    fn(*args)
    return time.perf_counter() - started


def executor_side(n: int, rows: int, rounds: int) -> None:
    batches = arrow_batches(n, rows)
    for name, fn in (("Python Split stage", run_split), ("timed pass-through", run_wrapped)):
        off, on = [], []
        for _ in range(rounds):
            off.append(seconds(fn, batches, None))
            on.append(seconds(fn, batches, Sink()))
        a, b = statistics.median(off), statistics.median(on)
        print(f"{name:22s} off {a * 1000:9.1f} ms   on {b * 1000:9.1f} ms   on/off {b / a:6.3f} "
              f"({(b - a) / n * 1e6:+.1f} us per Arrow batch of {rows:,} rows)")


def driver_side(rounds: int) -> None:
    """The batch's own path makes no Spark call for metrics; the listener reads the batch's
    stages afterwards: time that read."""
    from trident_spark.runtime.metrics import batch_description, batch_spark_metrics
    from trident_spark.runtime.session import local_session

    spark = local_session("metrics-overhead", master="local[2]")
    sc = spark.sparkContext
    sc.setJobGroup("bench-run", "bench")
    off_path, stages = [], 0
    for txid in range(rounds):
        sc.setJobDescription(batch_description("bench", txid))
        for _ in range(3):  # a batch of three jobs
            spark.range(200_000).selectExpr("id % 10 as k").groupBy("k").count().collect()
        started = time.perf_counter()
        measured = batch_spark_metrics(sc, "bench-run", batch_description("bench", txid))
        off_path.append(time.perf_counter() - started)
        stages = int(measured.get("stages", 0))
    print(f"driver, in the listener (off the batch's path): {statistics.median(off_path) * 1000:6.2f} ms "
          f"a batch ({stages} stages of 3 jobs read from Spark's status store)")
    spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--batches", type=int, default=200)
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--no-spark", action="store_true", help="skip the driver-side part")
    args = parser.parse_args()
    executor_side(args.batches, args.rows, args.rounds)
    if not args.no_spark:
        driver_side(args.rounds)


if __name__ == "__main__":
    main()
