"""Eleven mistakes a newcomer makes with the README's example, each a mypy error on its line (marked
`# mistake:`) and nothing else: what an IDE shows before the topology runs. Checked, never run."""

from __future__ import annotations

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.drpc import DRPCClient
from trident_spark.operation import BaseFunction
from trident_spark.spout import KafkaSpout
from trident_spark.state import MemoryState, SqliteState


class Split(BaseFunction):
    pass


def mistakes() -> None:
    topology = TridentTopology()
    spout = KafkaSpout(bootstrap_servers="127.0.0.1:9092", topics=["sentences"])
    words = topology.newStream("sentences", spout)
    topology.newStream("numbers", 42)  # mistake: 42 is no spout
    KafkaSpout(bootstrap_servers=9092, topics=["sentences"])  # mistake: the bootstrap servers are a string
    words.each(Split(), ["value"], ["word"])  # mistake: the input fields come first
    state = SqliteState.opaque(path="/tmp/wc.db")
    words.groupBy(["word"]).persistentAggregate(Count(), state, ["count"])  # mistake: the state comes first
    handle = topology.run(checkpoint_location=7)  # mistake: a checkpoint is a path
    handle.awaitTermination("10 seconds")  # mistake: the timeout is in seconds, a number
    rows: str = handle.progress[-1].rows  # mistake: rows is an int
    handle.progress[-1].lines()  # mistake: the summary is line()
    DRPCClient("127.0.0.1", "3772")  # mistake: the port is an int
    SqliteState.opaque(path=123)  # mistake: the path is a string
    MemoryState.transactional(name="counts", cache_size="1000")  # mistake: the cache size is an int
    print(rows)
