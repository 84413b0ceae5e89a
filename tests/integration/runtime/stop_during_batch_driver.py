"""Driver program of the stop-during-batch test: ``handle.stop()`` while a batch runs, 10 times.

Usage: stop_during_batch_driver.py OUT_DIR [CYCLES]

Each cycle runs a topology whose Function sleeps per tuple, waits until a batch is running (its
tasks have started: a marker file a task writes), calls ``handle.stop()`` and prints a line
``cycle N stopped`` to stderr; the test reads the stderr between those lines. The Spark session is
made as a library user's program makes it (``topology.run(spark=None)`` builds it).

Classes are defined here (``__main__``) so that they are pickled by value.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

from trident_spark import TridentTopology
from trident_spark.operation import BaseFunction
from trident_spark.spout import FixedBatchSpout


class Slow(BaseFunction):
    def __init__(self, marker: str) -> None:
        self.marker = marker

    def execute(self, tuple: Any, collector: Any) -> None:
        Path(self.marker).touch()
        time.sleep(0.5)
        collector.emit([tuple.getValue(0) * 2])


def main() -> None:
    out = Path(sys.argv[1])
    cycles = int(sys.argv[2]) if len(sys.argv) > 2 else 10
    spark = None
    for cycle in range(cycles):
        marker = out / f"running-{cycle}"
        topology = TridentTopology()
        spout = FixedBatchSpout(["n"], 4, *[[i] for i in range(40)])
        spout.setCycle(True)
        topology.newStream("numbers", spout).each(["n"], Slow(str(marker)), ["m"]).collect()
        handle = topology.run(checkpoint_location=str(out / f"ckpt-{cycle}"), trigger="200 milliseconds",
                              spark=spark)
        spark = handle.spark
        deadline = time.monotonic() + 120
        while not marker.exists():
            assert time.monotonic() < deadline, "no batch started in 120 s"
            time.sleep(0.05)
        handle.stop()
        print(f"cycle {cycle} stopped", file=sys.stderr, flush=True)
    if spark is not None:
        spark.stop()
    print("all stopped", file=sys.stderr, flush=True)
    os._exit(0)


if __name__ == "__main__":
    main()
