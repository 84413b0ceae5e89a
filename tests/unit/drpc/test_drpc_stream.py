"""newDRPCStream in the DSL: the stream's field, its result sink on the last node of its part of
the topology, and the errors that name what to do (no Spark)."""

from __future__ import annotations

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.builtin import Count
from trident_spark.drpc.spout import DRPCSpout
from trident_spark.sink import DRPCResultSink


def test_the_answer_is_what_reaches_the_last_node_of_the_drpc_stream() -> None:
    topology = TridentTopology()
    stream = topology.newDRPCStream("words", "127.0.0.1:3772")
    assert list(stream.getOutputFields()) == ["args"]
    counted = stream.groupBy(["args"]).aggregate(Count(), ["count"])
    [query] = topology.queries()
    assert query.name == "drpc-words"
    spout = query.spouts[0].spout
    assert isinstance(spout, DRPCSpout) and spout.address == "127.0.0.1:3772"
    [sink] = [s for o in query.outputs for s in o.sinks if isinstance(s, DRPCResultSink)]
    assert [o.node for o in query.outputs if sink in o.sinks] == [counted.node]
    assert list(sink.fields) == ["args", "count"]


def test_a_function_is_served_once_and_named_plainly() -> None:
    topology = TridentTopology()
    topology.newDRPCStream("words")
    with pytest.raises(TopologyError, match="already serves DRPC function 'words'"):
        topology.newDRPCStream("words")
    with pytest.raises(TopologyError, match="name the function"):
        topology.newDRPCStream("two words")
    with pytest.raises(TopologyError, match="give a LocalDRPC, a DRPCClient"):
        topology.newDRPCStream("n", 3772)
