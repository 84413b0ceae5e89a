"""Driver program of the windows driver-kill test: count and time windows on a SQLite windows
store, each window's result counted into an opaque SQLite state keyed by the window's numbers.

Usage: window_kill_driver.py CONFIG_JSON

CONFIG_JSON holds ``checkpoint``, ``out`` (a directory for the stores and markers), ``run``
(this start's number) and ``kill_batch`` (None, or the batch in which the driver is killed: on
an executor, right after a partition of that batch wrote the tumbling windows' results to their
state, a filter SIGKILLs the driver, whose pid comes in the environment variable
WINDOW_DRIVER_PID). A marker ``killed-<run>`` makes the kill happen once.

Classes are defined here (``__main__``) so that they are pickled by value.
"""

from __future__ import annotations

import json
import os
import signal
import sys
from pathlib import Path
from typing import Any

from tests.driver_processes import run_to_the_end
from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.operation import BaseFilter, BaseFunction, ReducerAggregator
from trident_spark.runtime.session import local_session
from trident_spark.spout import FixedBatchSpout
from trident_spark.state import SqliteState
from trident_spark.windowing import Duration, SqliteWindowsStoreFactory

NUMBERS = 16
BATCH_SIZE = 4
#: (table, window method, its size arguments)
WINDOWS = [("tumbling", "tumblingWindow", (3,)),
           ("time", "slidingWindow", (Duration.of(400), Duration.of(200)))]


class Gather(ReducerAggregator):
    def init(self) -> list[int]:
        return []

    def reduce(self, curr: list[int], tuple: Any) -> list[int]:
        return [*curr, tuple[0]]


class Key(BaseFunction):
    """A window's numbers as one string: the key its result is counted under."""

    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([",".join(str(n) for n in tuple[0])])


class KillAfterWrite(BaseFilter):
    def __init__(self, out: str, run: int, batch: int | None) -> None:
        self.out, self.run, self.batch = out, run, batch

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context

    def isKeep(self, tuple: Any) -> bool:
        if self.batch is not None and self.context.txid == self.batch:
            try:
                os.close(os.open(Path(self.out) / f"killed-{self.run}", os.O_CREAT | os.O_EXCL | os.O_WRONLY))
            except FileExistsError:
                return True
            os.kill(int(os.environ["WINDOW_DRIVER_PID"]), signal.SIGKILL)
        return True


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    out, run = Path(config["out"]), int(config["run"])
    os.environ["WINDOW_DRIVER_PID"] = str(os.getpid())  # before the JVM and its workers start
    spark = local_session("window-kill-driver", master="local[2]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    spout = FixedBatchSpout(["n"], BATCH_SIZE, *[[n] for n in range(NUMBERS)], directory=str(out / "spout"))
    topology = TridentTopology()
    numbers = topology.newStream("numbers", spout)
    for table, method, size in WINDOWS:
        store = SqliteWindowsStoreFactory(path=str(out / "windows.db"), table=table)
        windows = getattr(numbers, method)(*size, store, ["n"], Gather(), ["w"])
        results = (windows.each(["w"], Key(), ["key"]).groupBy(["key"])
                   .persistentAggregate(SqliteState.opaque(path=str(out / "results.db"), table=table),
                                        Count(), ["count"]).newValuesStream())
        if table == "tumbling":
            results = results.each(["key", "count"], KillAfterWrite(str(out), run, config["kill_batch"]))
        results.collect()
    run_to_the_end(topology, config["checkpoint"], spark, f"window kill driver run {run}")


if __name__ == "__main__":
    main()
