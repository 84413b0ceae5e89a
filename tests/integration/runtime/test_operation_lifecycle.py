"""Trident's operation lifecycle on Spark (local mode, FeederBatchSpout), in one run: one instance per
partition prepared once and kept across batches, cleaned up on stop; collector.reportError counted and
shown while the batch goes on; operations from this test module and from a module only the driver can
import run with no register_pickle_by_value line (the runtime ships them)."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest
from pyspark.cloudpickle import cloudpickle

from trident_spark import TridentTopology
from trident_spark.cli.main import main
from trident_spark.operation import Aggregator, BaseFunction, MultiReducer
from trident_spark.runtime.progress import BatchProgress
from trident_spark.spout import FeederBatchSpout

pytestmark = pytest.mark.integration

BATCHES = [["1", "2", "x", "3"], ["4", "y", "z", "5"], ["6", "7", "8", "9"]]


class BatchCounter(BaseFunction):
    """Counts in an instance attribute the batches its instance has run; every prepare and cleanup
    appends a line to ``log`` (executors are other processes)."""

    def __init__(self, log: str) -> None:
        self.log = log

    def prepare(self, conf, context):
        self.context, self.batches, self.seen = context, 0, None
        with open(self.log, "a") as out:
            out.write(f"prepare {self.context.operation_name} {context.getPartitionIndex()} "
                      f"{context.numPartitions()}\n")

    def execute(self, tuple, collector):
        if self.seen != self.context.txid:
            self.seen, self.batches = self.context.txid, self.batches + 1
        collector.emit([self.context.getPartitionIndex(), self.batches, self.context.txid])

    def cleanup(self):
        with open(self.log, "a") as out:
            out.write(f"cleanup {self.context.operation_name} {self.context.getPartitionIndex()}\n")


class BatchesSeen(Aggregator):
    """A kept aggregator: counts its batches in ``init`` (once per batch of its partition)."""

    def __init__(self, log: str) -> None:
        self.log = log

    def prepare(self, conf, context):
        self.context, self.batches = context, 0
        with open(self.log, "a") as out:
            out.write(f"prepare {context.operation_name} {context.getPartitionIndex()} "
                      f"{context.numPartitions()}\n")

    def init(self, batch_id, collector):
        self.batches += 1
        return 0

    def aggregate(self, state, tuple, collector):
        return state + 1

    def complete(self, state, collector):
        collector.emit([self.context.getPartitionIndex(), self.batches, state])

    def cleanup(self):
        with open(self.log, "a") as out:
            out.write(f"cleanup {self.context.operation_name} {self.context.getPartitionIndex()}\n")


class ReducedBatches(MultiReducer):
    """A kept multiReduce reducer: counts its batches in ``init`` (once per batch)."""

    def __init__(self, log: str) -> None:
        self.log = log

    def prepare(self, conf, context):
        self.context, self.batches = context, 0
        with open(self.log, "a") as out:
            out.write(f"prepare {context.operation_name} {context.getPartitionIndex()} "
                      f"{context.numPartitions()}\n")

    def init(self, collector):
        self.batches += 1
        return [0]

    def execute(self, state, streamIndex, input, collector):
        state[0] += 1

    def complete(self, state, collector):
        collector.emit([self.batches, state[0]])

    def cleanup(self):
        with open(self.log, "a") as out:
            out.write(f"cleanup {self.context.operation_name} {self.context.getPartitionIndex()}\n")


DRIVER_ONLY_MODULE = textwrap.dedent('''
    """Operations in a module the executors cannot import (its directory is on the driver's path only)."""
    from trident_spark.operation import BaseFunction


    class Parse(BaseFunction):
        """A number from the word; anything else is reported, and the batch goes on."""

        def execute(self, tuple, collector):
            word = tuple.getString(0)
            if word.isdigit():
                collector.emit([int(word)])
            else:
                collector.reportError(ValueError(f"not a number: {word!r}"))
    ''')


@pytest.fixture(scope="module")
def lifecycle_run(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("lifecycle")
    (root / "driver_only").mkdir()
    (root / "driver_only" / "lifecycle_user_ops.py").write_text(DRIVER_ONLY_MODULE)
    sys.path.insert(0, str(root / "driver_only"))
    try:
        from lifecycle_user_ops import Parse
    finally:
        sys.path.remove(str(root / "driver_only"))
    this_module = sys.modules[__name__]
    shipped_before = cloudpickle._is_registered_pickle_by_value(this_module)
    log = root / "lifecycle.log"
    spout = FeederBatchSpout(["word"], num_partitions=2)
    for words in BATCHES:
        spout.feed([[w] for w in words])
    topology = TridentTopology()
    words = topology.newStream("lifecycle", spout)
    counted = words.each(["word"], BatchCounter(str(log)), ["pidx:bigint", "batches:bigint", "txid:bigint"])
    counted = counted.collect()
    aggregated = words.partitionAggregate(["word"], BatchesSeen(str(log)),
                                          ["apidx:bigint", "abatches:bigint", "n:bigint"]).collect()
    parsed = words.shuffle().each(["word"], Parse(), ["n:bigint"]).collect()
    reduced = topology.multiReduce([words, words.project(["word"])], ReducedBatches(str(log)),
                                   ["rbatches", "rn"]).collect()
    handle = topology.run(checkpoint_location=root / "ckpt", trigger="available_now", spark=spark)
    assert handle.awaitTermination(300)
    before_stop = log.read_text().splitlines()
    handle.stop()
    return {"counted": counted, "aggregated": aggregated, "parsed": parsed, "reduced": reduced,
            "handle": handle, "log": log,
            "before_stop": before_stop, "checkpoint": root / "ckpt", "shipped_before": shipped_before,
            "shipped_after": cloudpickle._is_registered_pickle_by_value(this_module)}


def test_an_instance_counts_the_batches_of_its_partition_1_2_3(lifecycle_run):
    seen = {(t["pidx"], t["txid"]): t["batches"] for t in lifecycle_run["counted"].tuples}
    assert seen == {(p, txid): txid + 1 for p in (0, 1) for txid in range(3)}
    by_batch = {(t["apidx"], t["abatches"], t["n"]) for t in lifecycle_run["aggregated"].tuples}
    assert by_batch == {(p, n, 2) for p in (0, 1) for n in (1, 2, 3)}
    reduced = {txid: [(t["rbatches"], t["rn"]) for t in batch]
               for txid, batch in lifecycle_run["reduced"].batches.items()}
    assert reduced == {0: [(1, 8)], 1: [(2, 8)], 2: [(3, 8)]}  # one kept reducer: batches 1, 2, 3


def test_prepare_runs_once_per_task_and_run_and_cleanup_when_it_stops(lifecycle_run):
    prepared = sorted(line for line in lifecycle_run["before_stop"] if line.startswith("prepare"))
    assert prepared == ["prepare each(BatchCounter) 0 2", "prepare each(BatchCounter) 1 2",
                        "prepare multiReduce(ReducedBatches) 0 1",
                        "prepare partitionAggregate(BatchesSeen) 0 2",
                        "prepare partitionAggregate(BatchesSeen) 1 2"]
    assert not any(line.startswith("cleanup") for line in lifecycle_run["before_stop"])
    after = lifecycle_run["log"].read_text().splitlines()
    assert sorted(line for line in after if line.startswith("cleanup")) == [
        "cleanup each(BatchCounter) 0", "cleanup each(BatchCounter) 1",
        "cleanup multiReduce(ReducedBatches) 0",
        "cleanup partitionAggregate(BatchesSeen) 0", "cleanup partitionAggregate(BatchesSeen) 1"]


def test_reported_errors_are_counted_shown_and_the_batches_complete(lifecycle_run, capsys, monkeypatch):
    assert sorted(t["n"] for t in lifecycle_run["parsed"].tuples) == [1, 2, 3, 4, 5, 6, 7, 8, 9]
    progress = sorted(lifecycle_run["handle"].progress, key=lambda b: b.txid)
    assert [(b.txid, b.rows, b.errors_reported) for b in progress] == [
        (0, 4, {"each(Parse)": 1}), (1, 4, {"each(Parse)": 2}), (2, 4, {})]
    assert progress[0].last_errors == {"each(Parse)": "ValueError: not a number: 'x'"}
    assert progress[1].last_errors["each(Parse)"] in ("ValueError: not a number: 'y'",
                                                      "ValueError: not a number: 'z'")
    assert progress[1].line().endswith("; 2 errors reported by each(Parse)")
    lines = (lifecycle_run["checkpoint"] / "lifecycle" / "trident-progress.jsonl").read_text().splitlines()
    assert [json.loads(line)["errors_reported"] for line in lines] == [
        {"each(Parse)": 1}, {"each(Parse)": 2}, {}]
    assert [BatchProgress.from_json(line) for line in lines] == progress

    monkeypatch.setenv("COLUMNS", "250")
    assert main(["status", str(lifecycle_run["checkpoint"])]) == 0
    out = capsys.readouterr().out
    assert ("note        3 errors reported by each(Parse) in the last 3 batches (the batches went on); "
            "last, in batch 1: ValueError: not a number: ") in out


def test_operations_of_this_module_and_a_driver_only_module_ship_with_no_step(lifecycle_run):
    # Nothing here registered this module; the run did (and the driver-only module's Parse ran above).
    assert (lifecycle_run["shipped_before"], lifecycle_run["shipped_after"]) == (False, True)
    assert cloudpickle._is_registered_pickle_by_value(sys.modules["lifecycle_user_ops"])
    assert Path(sys.modules["lifecycle_user_ops"].__file__).parent.name == "driver_only"
