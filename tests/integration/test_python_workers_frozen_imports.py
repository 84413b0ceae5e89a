"""In Spark's Python workers, the modules imported are frozen out of the collector's way before a
task of ours runs (Spark collects after every task; trident_spark.worker_gc)."""

from __future__ import annotations

import gc

import pytest

from trident_spark import TridentTopology
from trident_spark.operation import BaseFunction
from trident_spark.spout import FeederBatchSpout

pytestmark = pytest.mark.integration


class FrozenObjects(BaseFunction):
    """Appends how many objects this worker's collector has frozen."""

    def execute(self, tuple, collector):
        collector.emit([gc.get_freeze_count()])


def test_a_python_stage_runs_with_the_workers_imports_frozen(spark, tmp_path):
    spout = FeederBatchSpout(["x"], num_partitions=2)
    topology = TridentTopology()
    sink = topology.newStream("frozen", spout).each(["x"], FrozenObjects(), ["frozen"]).collect()
    spout.feed([[1], [2], [3], [4]])
    spout.feed([[5], [6]])
    handle = topology.run(tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        assert handle.awaitTermination(600), "the availableNow run did not finish in 600 s"
    finally:
        handle.stop()
    rows = [row for txid in sorted(sink.batches) for row in sink.batches[txid]]
    assert len(rows) == 6
    for row in rows:
        # pyarrow, pyspark and ours: tens of thousands of objects, left out of every collection
        assert row["frozen"] > 10_000, rows
