"""DRPC latency on the Spark path: p50/p99 of ``execute`` with a warm topology, 1, 10 and 100
callers at once.

The Spark path runs one request per batch (Trident's batch = request), one batch after another:
a request's latency is the Spark micro-batch floor (plan, one job, offsets and commit logs) plus
its wait behind the requests ahead of it. Run: ``python bench/drpc.py`` (under the shared lock
on a shared machine); prints one line per concurrency.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.drpc import LocalDRPC
from trident_spark.operation import BaseFunction
from trident_spark.runtime.session import local_session

cloudpickle.register_pickle_by_value(sys.modules[__name__])
ROUNDS = {1: 30, 10: 60, 100: 200}


class Upper(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([tuple.getString(0).upper()])


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def main() -> None:
    spark = local_session("drpc-bench", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    with LocalDRPC() as drpc, tempfile.TemporaryDirectory() as work:
        topology = TridentTopology()
        topology.newDRPCStream("upper", drpc).each(["args"], Upper(), ["up"]).project(["up"])
        handle = topology.run(Path(work) / "ckpt", spark=spark)
        try:
            for i in range(5):  # warm: the first batches plan and start the Python workers
                assert drpc.execute("upper", f"w{i}") == f'[["W{i}"]]'
            for callers, count in ROUNDS.items():
                def timed(i: int) -> float:
                    started = time.perf_counter()
                    drpc.execute("upper", f"r{i}")
                    return time.perf_counter() - started

                started = time.perf_counter()
                with ThreadPoolExecutor(callers) as pool:
                    latencies = list(pool.map(timed, range(count)))
                took = time.perf_counter() - started
                p50, p99 = 1000 * statistics.median(latencies), 1000 * percentile(latencies, 99)
                print(f"{callers:>3} callers, {count} requests: p50 {p50:7.0f} ms  p99 {p99:7.0f} ms  "
                      f"throughput {count / took:5.1f} req/s", flush=True)
        finally:
            handle.stop()
    spark.stop()


if __name__ == "__main__":
    main()
