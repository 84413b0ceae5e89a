"""The per-batch driver: what ``foreachBatch`` does with each Trident batch (txid = batch id)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from trident_spark.graph import Node, chain_of
from trident_spark.planner.compile import compile_chain
from trident_spark.sink import CollectSink

if TYPE_CHECKING:
    from pyspark.sql import DataFrame


@dataclass
class Output:
    """A leaf of a stream's graph, with the sinks that gather it (none: run for side effects)."""

    node: Node
    sinks: list[CollectSink] = field(default_factory=list)


@dataclass
class BatchRunner:
    """Runs every output of one spout's stream on a batch.

    Called by Spark on the driver once per micro-batch, possibly again for the
    same batch id after a failure (replay): everything it does for a txid must
    leave the same result when repeated.
    """

    stream: str
    outputs: list[Output]

    def __call__(self, df: DataFrame, batch_id: int) -> None:
        df.sparkSession.sparkContext.setJobDescription(f"{self.stream}: batch {batch_id}")
        shared = len(self.outputs) > 1
        if shared:
            df = df.persist()  # read the spout once for all outputs
        try:
            for output in self.outputs:
                result = compile_chain(chain_of(output.node), df, batch_id)
                if output.sinks:
                    tuples = result.toArrow().to_pylist()
                    for sink in output.sinks:
                        sink.record(batch_id, tuples)
                else:
                    result.write.format("noop").mode("overwrite").save()
        finally:
            if shared:
                df.unpersist()
