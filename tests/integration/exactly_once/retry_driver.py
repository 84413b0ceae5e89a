"""Driver program of the task-retry test: state-writing tasks fail once AFTER writing, Spark retries them.

Usage: retry_driver.py CONFIG_JSON

Runs on ``local[2,3]`` (a task may fail 3 times), which the shared test session
cannot, so it is a program of its own. CONFIG_JSON holds ``bootstrap``,
``topic``, ``checkpoint``, ``out`` (markers), ``fail_batch``,
``max_offsets_per_trigger`` and ``states``: ``{name: state URL}`` with names

* ``aggregate-*``: ``persistentAggregate(Count)``; a filter downstream of its
  ``newValuesStream()`` (same task, after the partition's writes) raises in
  partition 0 of batch ``fail_batch``, once;
* ``persist-*``: ``partitionBy(word).partitionPersist`` with an updater that
  writes the first half of its partition's keys, then raises (partition 0 of
  batch ``fail_batch``, once), else writes the second half.

Every call of the failing operations appends to ``seen-<state>-<txid>-<partition>-<attempt>``
(the word of each tuple, or the keys written), so the test knows which task
attempt did what.
"""

from __future__ import annotations

import json
import os
import sys
from collections import Counter
from pathlib import Path
from typing import Any

from tests.driver_processes import run_to_the_end
from trident_spark import TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.operation import BaseFilter, StateUpdater
from trident_spark.runtime.session import local_session
from trident_spark.spout import KafkaSpout
from trident_spark.state import parse_state_url


def claim(marker: Path, text: str) -> bool:
    try:
        fd = os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
    except FileExistsError:
        return False
    with os.fdopen(fd, "w") as out:
        out.write(text)
    return True


def attempt() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return -1 if context is None else context.attemptNumber()


class FailsOnce:
    """An operation that fails once, in partition 0 of batch ``fail_batch``, for state ``state``."""

    def __init__(self, state: str, out: str, fail_batch: int) -> None:
        self.state, self.out, self.fail_batch = state, out, fail_batch
        self.where = ""
        self.failing = False

    def prepare(self, conf: dict[str, Any], context: Any) -> None:
        self.context = context  # prepared once per run: its txid follows the batch being run

    def batch(self) -> None:
        """Where the task runs now (called first in every batch)."""
        context = self.context
        self.failing = context.txid == self.fail_batch and context.partition_index == 0
        self.where = f"{self.state}-{context.txid}-{context.partition_index}"


class FailOnceAfterWrite(FailsOnce, BaseFilter):
    """Downstream of a state's newValuesStream: raises once in partition 0 of the failing batch."""

    def isKeep(self, tuple: Any) -> bool:
        self.batch()
        if self.failing:
            with open(Path(self.out) / f"seen-{self.where}-{attempt()}", "a") as seen:
                seen.write(f"{tuple['word']}\n")
            if claim(Path(self.out) / f"failed-{self.state}", str(attempt())):
                raise RuntimeError(f"injected failure after {self.where} wrote its keys")
        return True


class HalfThenFail(FailsOnce, StateUpdater):
    """Counts its partition's words; writes the first half of the keys, fails once, writes the rest."""

    def updateState(self, state: Any, tuples: list[Any], collector: Any) -> None:
        self.batch()
        counts = Counter(t["word"] for t in tuples)
        words = sorted(counts)
        half = len(words) // 2
        for part, chunk in enumerate((words[:half], words[half:])):
            new = state.multiUpdate([[w] for w in chunk],
                                    [lambda old, n=counts[w]: (old or 0) + n for w in chunk])
            if self.failing:
                with open(Path(self.out) / f"seen-{self.where}-{attempt()}", "a") as seen:
                    seen.write("".join(f"{w}\n" for w in chunk))
            for word, value in zip(chunk, new, strict=True):
                collector.emit([word, value])
            if part == 0 and self.failing and claim(Path(self.out) / f"failed-{self.state}", str(attempt())):
                raise RuntimeError(f"injected failure after {self.where} wrote {half} of {len(words)} keys")


def main() -> None:
    config = json.loads(Path(sys.argv[1]).read_text())
    out, fail_batch = str(config["out"]), int(config["fail_batch"])
    spark = local_session("retry-driver", master="local[2,3]",
                          conf={"spark.sql.shuffle.partitions": "2", "spark.ui.enabled": "false"})
    topology = TridentTopology()
    spout = KafkaSpout(config["bootstrap"], [config["topic"]], starting_offsets="earliest",
                       max_offsets_per_trigger=config["max_offsets_per_trigger"])
    words = topology.newStream("sentences", spout).each(["value"], Split(), ["word"])
    for name, url in config["states"].items():
        factory = parse_state_url(url)
        if name.startswith("aggregate-"):
            state = words.groupBy(["word"]).persistentAggregate(factory, Count(), ["count"])
            state.newValuesStream().each(["word", "count"], FailOnceAfterWrite(name, out, fail_batch))
        else:
            updater = HalfThenFail(name, out, fail_batch)
            words.partitionBy(["word"]).partitionPersist(factory, ["word"], updater,
                                                         ["word", "count:bigint"])
    run_to_the_end(topology, config["checkpoint"], spark, "retry driver")


if __name__ == "__main__":
    main()
