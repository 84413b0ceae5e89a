"""What a storm-starter port prints, gathered on the driver: a sink where each Debug or peek stands.

The Java examples show their results by printing on the workers (``Debug`` filters, a ``peek``).
Those prints happen on Spark's executors, so a test cannot read them; instead it adds, before the
run, a ``collect()`` on the stream right where each one stands: its sink holds, batch by batch,
exactly the tuples that were printed. The example modules stay as they are.
"""

from __future__ import annotations

from typing import Any

from trident_spark import Stream, TridentTopology
from trident_spark.builtin import Debug
from trident_spark.graph import FilterNode, PeekNode
from trident_spark.sink import CollectSink


def debug_sinks(topology: TridentTopology) -> dict[str, CollectSink]:
    """``{Debug prefix: sink}``: each Debug filter's input fields, as it prints them, per batch."""
    sinks: dict[str, CollectSink] = {}
    for node in _nodes(topology):
        if isinstance(node, FilterNode) and isinstance(node.filter, Debug):
            assert node.filter.prefix not in sinks, f"two Debug filters print {node.filter.prefix!r}"
            fields = list(node.input_fields) or list(node.fields)
            sinks[node.filter.prefix] = Stream(topology, node).project(fields).collect()
    return sinks


def peek_sink(topology: TridentTopology) -> CollectSink:
    """The tuples the topology's one ``peek`` sees, per batch."""
    peeks = [node for node in _nodes(topology) if isinstance(node, PeekNode)]
    assert len(peeks) == 1, f"expected one peek, found {len(peeks)}"
    return Stream(topology, peeks[0]).collect()


def printed(sink: CollectSink) -> dict[int, list[tuple[Any, ...]]]:
    """``{txid: [values of each tuple]}``: what was printed, batch by batch, in the batch's order."""
    return {txid: [tuple(t.values()) for t in tuples] for txid, tuples in sink.batches.items()}


def _nodes(topology: TridentTopology) -> list[Any]:
    return [node for query in topology.queries() for node in query.nodes]
