"""DRPC latency, both paths side by side: p50/p99 of ``execute`` with a warm topology and 1, 10 and
100 callers at once, against the raw state read the answer needs.

The request is storm-starter TridentWordCount's (``Split`` in Python, ``groupBy``, ``stateQuery``
with ``MapGet`` on an opaque SQLite state of 1,000 counted words, ``FilterNull``, ``Sum``), five
words per request. Three contenders, one after another in one invocation, on the same state:

* ``state``: the baseline, the caller reading the five counts itself (``multiGet``) and summing;
* ``driver``: ``run(drpc_path="driver")``, each request its own batch in the driver's threads;
* ``spark``: ``run(drpc_path="spark")``, each request a Spark micro-batch, one after another.

Run: ``python bench/drpc.py [--quick]`` (under the shared lock on a shared machine). Prints one
line per contender and concurrency, and the driver path's ratio to Spark's.
"""

from __future__ import annotations

import argparse
import dataclasses
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.builtin import Count, FilterNull, MapGet, Sum
from trident_spark.drpc import LocalDRPC
from trident_spark.operation import BaseFunction
from trident_spark.runtime.session import local_session
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState

cloudpickle.register_pickle_by_value(sys.modules[__name__])
#: callers at once -> requests, per contender
ROUNDS = {"state": {1: 2000, 10: 4000, 100: 4000}, "driver": {1: 500, 10: 2000, 100: 2000},
          "spark": {1: 20, 10: 40, 100: 100}}
QUICK = {"state": {1: 200, 10: 400, 100: 400}, "driver": {1: 100, 10: 200, 100: 200},
         "spark": {1: 5, 10: 10, 100: 100}}
VOCABULARY = [f"w{i}" for i in range(1000)]


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getString(0).split(" "):
            collector.emit([word])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def requests(count: int, seed: int) -> list[str]:
    draw = random.Random(seed)
    return [" ".join(draw.sample(VOCABULARY, 5)) for _ in range(count)]


def measure(name: str, ask: Callable[[str], Any], rounds: dict[int, int]) -> dict[int, tuple[float, float]]:
    """p50 and p99 in ms per concurrency; prints a line each."""
    found = {}
    for callers, count in rounds.items():
        asked = requests(count, callers)

        def timed(args: str) -> float:
            started = time.perf_counter()
            ask(args)
            return time.perf_counter() - started

        started = time.perf_counter()
        with ThreadPoolExecutor(callers) as pool:
            latencies = list(pool.map(timed, asked))
        took = time.perf_counter() - started
        p50, p99 = 1000 * statistics.median(latencies), 1000 * percentile(latencies, 99)
        found[callers] = (p50, p99)
        print(f"{name:>6} {callers:>3} callers, {count:>4} requests: p50 {p50:8.1f} ms  p99 {p99:8.1f} ms  "
              f"throughput {count / took:7.1f} req/s", flush=True)
    return found


def count_words(spark: Any, work: Path) -> Any:
    """The word counts every contender reads: 1,000 words counted 1 to 5 times."""
    factory = SqliteState.opaque(path=str(work / "counts.db"), table="counts")
    spout = FeederBatchSpout(["sentence"])
    spout.feed([[" ".join(VOCABULARY[i:i + 50] * (1 + i % 5))] for i in range(0, 1000, 50)])
    topology = TridentTopology()
    (topology.newStream("sentences", spout).each(["sentence"], Split(), ["word"]).groupBy(["word"])
     .persistentAggregate(factory, Count(), ["count"]))
    handle = topology.run(work / "count", trigger="available_now", spark=spark)
    handle.awaitTermination(300)
    handle.stop()
    return factory


def serve(spark: Any, work: Path, factory: Any, path: str,
          rounds: dict[int, int]) -> dict[int, tuple[float, float]]:
    with LocalDRPC() as drpc:
        topology = TridentTopology()
        counts = topology.newStaticState(factory)
        (topology.newDRPCStream("words", drpc).each(["args"], Split(), ["word"]).groupBy(["word"])
         .stateQuery(counts, ["word"], MapGet(), ["count"]).each(["count"], FilterNull())
         .aggregate(["count"], Sum(), ["sum"]))
        handle = topology.run(work / f"ckpt-{path}", spark=spark, drpc_path=path)
        try:
            for args in requests(5, 99):  # warm: Python workers, plans, the state's connection
                drpc.execute("words", args)
            return measure(path, lambda args: drpc.execute("words", args), rounds)
        finally:
            handle.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter,
                                     epilog="example: python bench/drpc.py --quick")
    parser.add_argument("--quick", action="store_true", help="fewer requests per round")
    rounds = QUICK if parser.parse_args().quick else ROUNDS
    spark = local_session("drpc-bench", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    with tempfile.TemporaryDirectory() as temp:
        work = Path(temp)
        factory = count_words(spark, work)
        state = dataclasses.replace(factory, cache_size=0).open()  # the store itself, as the paths read it

        def read(args: str) -> int:
            return sum(v for v in state.multiGet([[w] for w in args.split(" ")]) if v is not None)

        measure("state", read, rounds["state"])
        driver = serve(spark, work, factory, "driver", rounds["driver"])
        spark_path = serve(spark, work, factory, "spark", rounds["spark"])
    for callers in rounds["driver"]:
        (d50, d99), (s50, s99) = driver[callers], spark_path[callers]
        print(f"{callers:>3} callers: the driver path's p50 {s50 / d50:6.0f}x, p99 {s99 / d99:6.0f}x "
              "lower than Spark's")
    spark.stop()


if __name__ == "__main__":
    main()
