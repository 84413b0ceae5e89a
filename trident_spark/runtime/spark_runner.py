"""The Spark runner: what ``TridentTopology.queries()``, ``run()`` and ``explain()`` hand their graph to.

It fills the DSL's seam (:mod:`trident_spark.runner`): the planner cuts the graph into
queries (:mod:`trident_spark.planner.query`), the runtime starts them
(:mod:`trident_spark.runtime.launch`). The package installs it when imported; the planner and
the runtime load only when a topology is planned, so ``import trident_spark`` stays light.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from trident_spark.graph import Node
    from trident_spark.planner.query import QueryPlan
    from trident_spark.runner import RunSettings
    from trident_spark.runtime.handle import TopologyHandle
    from trident_spark.sink import Sink


class SparkRunner:
    """Plans a topology's graph into Spark streaming queries and runs them.

    Examples
    --------
    >>> from trident_spark.runner import installed_runner
    >>> isinstance(installed_runner(), SparkRunner)
    True
    """

    def queries(self, nodes: Sequence[Node], sinks: Sequence[tuple[Node, Sink]]) -> list[QueryPlan]:
        """One query per set of spouts joined or merged together."""
        from trident_spark.planner.query import plan_queries

        return plan_queries(list(nodes), list(sinks))

    def run(self, queries: Sequence[Any], settings: RunSettings) -> TopologyHandle:
        """Start every query (see ``TridentTopology.run``)."""
        from trident_spark.runtime.launch import start_queries

        return start_queries(list(queries), settings)

    def drpc_spout(self, function: str, drpc: Any) -> Any:
        """The DRPC spout of ``newDRPCStream(function, drpc)`` (``trident_spark.drpc.spout``)."""
        from trident_spark.drpc.spout import drpc_spout

        return drpc_spout(function, drpc)

    def explain(self, queries: Sequence[Any], spark: Any, mode: str) -> str:
        """Each query's operations and the Spark plan of one batch, on ``spark`` or a local session."""
        from trident_spark.planner.explain import explain
        from trident_spark.runtime.session import local_session, needs_kafka_connector, require_classic

        spark = spark or local_session(kafka_connector=needs_kafka_connector(
            node.spout for query in queries for node in query.spouts))
        require_classic(spark, "explain()")
        return explain(list(queries), spark, mode)


__all__ = ["SparkRunner"]
