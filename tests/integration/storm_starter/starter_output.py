"""What a storm-starter port prints, gathered on the driver: a sink where each Debug or peek stands.

The Java examples show their results by printing on the workers (``Debug`` filters, a ``peek``).
Those prints happen on Spark's executors, so a test cannot read them; instead it adds, before the
run, a ``collect()`` on the stream right where each one stands: its sink holds, batch by batch,
exactly the tuples that were printed. From them :meth:`DebugOutput.lines` makes the lines the
Debug filter printed, by calling it again on the driver. The example modules stay as they are.
"""

from __future__ import annotations

import contextlib
import io
from dataclasses import dataclass
from typing import Any

from trident_spark import Fields, Stream, TridentTopology, TridentTuple
from trident_spark.builtin import Debug
from trident_spark.graph import FilterNode, PeekNode
from trident_spark.sink import CollectSink


@dataclass
class DebugOutput:
    """One Debug filter of a topology, and a sink of the tuples it printed (its input fields)."""

    debug: Debug
    fields: Fields
    sink: CollectSink

    def tuples(self) -> dict[int, list[tuple[Any, ...]]]:
        """``{txid: [values of each printed tuple]}``, in the batch's order."""
        return printed(self.sink)

    def lines(self) -> dict[int, list[str]]:
        """``{txid: [line printed]}``: what the Debug filter printed, batch by batch."""
        out: dict[int, list[str]] = {}
        for txid, tuples in self.tuples().items():
            text = io.StringIO()
            with contextlib.redirect_stdout(text):
                for values in tuples:
                    self.debug.isKeep(TridentTuple(list(values), self.fields))
            out[txid] = text.getvalue().splitlines()
        return out


def debug_outputs(topology: TridentTopology) -> dict[str, DebugOutput]:
    """``{Debug prefix: DebugOutput}`` for every Debug filter of ``topology`` (call before the run)."""
    outputs: dict[str, DebugOutput] = {}
    for node in _nodes(topology):
        if isinstance(node, FilterNode) and isinstance(node.filter, Debug):
            prefix = node.filter.prefix
            assert prefix not in outputs, f"two Debug filters print {prefix!r}"
            fields = node.input_fields or node.fields
            sink = Stream(topology, node).project(list(fields)).collect()
            outputs[prefix] = DebugOutput(node.filter, Fields(*fields), sink)
    return outputs


def peek_sink(topology: TridentTopology) -> CollectSink:
    """The tuples the topology's one ``peek`` sees, per batch (call before the run)."""
    peeks = [node for node in _nodes(topology) if isinstance(node, PeekNode)]
    assert len(peeks) == 1, f"expected one peek, found {len(peeks)}"
    return Stream(topology, peeks[0]).collect()


def printed(sink: CollectSink) -> dict[int, list[tuple[Any, ...]]]:
    """``{txid: [values of each tuple]}``: what was printed, batch by batch, in the batch's order."""
    return {txid: [tuple(t.values()) for t in tuples] for txid, tuples in sink.batches.items()}


def _nodes(topology: TridentTopology) -> list[Any]:
    return [node for query in topology.queries() for node in query.nodes]
