"""Driver program of the crash tests: one word count into eight states, killed where the plan says.

Usage: crash_driver.py CONFIG_JSON

CONFIG_JSON holds ``bootstrap``, ``topic``, ``checkpoint``, ``out`` (a directory
for markers), ``states`` (``{name: state URL}``), ``max_offsets_per_trigger``,
``run`` (this start's number) and ``plan`` (None, or a kill to make):

* ``{"mode": "a", "batch": k}``: nothing here; the test kills this process
  group from outside after the marker ``started-<k>-<run>`` appears (written on
  the executor when a task of batch k starts);
* ``{"mode": "b", "batch": k, "state": name, "partition": i}``: on the executor,
  right after partition i of batch k wrote its keys to state ``name``, the
  operation downstream of that state's ``newValuesStream()`` SIGKILLs the
  driver (its pid comes in the environment variable EO_DRIVER_PID);
* ``{"mode": "c", "batch": k}``: on the driver, when the sinks of all eight
  states have recorded batch k (every state write of the batch is done, the
  batch is not in Spark's commit log yet), the driver SIGKILLs itself.

A marker file ``killed-<run>`` (created exclusively) makes each planned kill
happen once. Operations are defined here (``__main__``) so that they are
pickled by value to the Python workers.
"""

from __future__ import annotations

import json
import os
import signal
import sys
import threading
from pathlib import Path
from typing import Any

from tests.driver_processes import run_to_the_end
from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.operation import BaseFilter
from trident_spark.runtime.session import local_session
from trident_spark.spout import KafkaSpout
from trident_spark.state import parse_state_url


def claim(marker: Path, text: str) -> bool:
    """Create ``marker`` if nobody has: True for the one caller that did."""
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return True


class BatchStarted(BaseFilter):
    """Keeps every tuple; when a task of a batch starts, writes ``started-<txid>-<run>``."""

    def __init__(self, out: str, run: int) -> None:
        self.out = out
        self.run = run
        self.txid = -1

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context  # prepared once per run: its txid follows the batch being run

    def isKeep(self, tuple: Any) -> bool:
        if self.context.txid != self.txid:  # the task's first tuple of a batch
            self.txid = self.context.txid
            marker = Path(self.out) / f"started-{self.txid}-{self.run}"
            if not marker.exists():
                claim(marker, str(os.getpid()))
        return True


class KillAfterWrite(BaseFilter):
    """Downstream of a state's newValuesStream: runs on the executor after its partition's writes.

    Kills the driver once, for the planned state, batch and partition (mode b).
    """

    def __init__(self, state: str, plan: dict[str, Any] | None, out: str, run: int) -> None:
        self.state = state
        self.plan = plan if plan and plan.get("mode") == "b" and plan.get("state") == state else None
        self.out = out
        self.run = run
        self.armed = False
        self.txid = -1

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context  # prepared once per run: its txid follows the batch being run

    def isKeep(self, tuple: Any) -> bool:
        context, plan = self.context, self.plan
        if context.txid != self.txid:  # the task's first tuple of a batch
            self.txid = context.txid
            self.armed = (plan is not None and context.txid == plan["batch"]
                          and context.partition_index == plan["partition"])
        if self.armed:
            self.armed = False
            if claim(Path(self.out) / f"killed-{self.run}", f"b {self.state} pid {os.getpid()}"):
                os.kill(int(os.environ["EO_DRIVER_PID"]), signal.SIGKILL)
        return True


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    out, run, plan = Path(config["out"]), int(config["run"]), config["plan"]
    # Before the session starts: the JVM and its Python workers inherit the environment.
    os.environ["EO_DRIVER_PID"] = str(os.getpid())
    spark = local_session("crash-driver", master="local[2]", conf={"spark.sql.shuffle.partitions": "2",
                                                                 "spark.ui.enabled": "false"})
    jvm_pid = spark.sparkContext._jvm.ProcessHandle.current().pid()  # type: ignore[union-attr]
    (out / f"jvm-{run}").write_text(str(jvm_pid))

    topology = TridentTopology()
    spout = KafkaSpout(config["bootstrap"], [config["topic"]], starting_offsets="earliest",
                       max_offsets_per_trigger=config["max_offsets_per_trigger"])
    words = (topology.newStream("sentences", spout)
             .each(["value"], BatchStarted(str(out), run))
             .each(["value"], Split(), ["word"]))
    sinks = {}
    for name, url in config["states"].items():
        state = words.groupBy(["word"]).persistentAggregate(parse_state_url(url), Count(), ["count"])
        sinks[name] = (state.newValuesStream()
                       .each(["word", "count"], KillAfterWrite(name, plan, str(out), run))
                       .collect())

    if plan and plan["mode"] == "c":
        lock = threading.Lock()
        recorded: set[str] = set()

        def wrap(name: str, record: Any) -> Any:
            def record_then_maybe_die(txid: int, tuples: list[dict[str, Any]]) -> None:
                record(txid, tuples)
                if txid != plan["batch"]:
                    return
                with lock:
                    recorded.add(name)
                    if recorded == set(sinks) and claim(out / f"killed-{run}", "c"):
                        os.kill(os.getpid(), signal.SIGKILL)
            return record_then_maybe_die

        for name, sink in sinks.items():
            sink.record = wrap(name, sink.record)  # type: ignore[method-assign]

    run_to_the_end(topology, config["checkpoint"], spark, f"crash driver run {run}")


if __name__ == "__main__":
    main()
