"""Calls of a wrong shape: `mypy --strict` reports an error on every line marked `# wrong:` and on no
other line. test_typed_overloads runs the building lines, then each marked line on its own: each
raises TopologyError. Keep every statement of wrong() on one line."""

from __future__ import annotations

from trident_spark import TridentTopology
from trident_spark.builtin import Count, FilterNull, MapGet, Split, Sum
from trident_spark.operation import MultiReducer
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import MemoryState


def wrong() -> None:
    topology = TridentTopology()
    words = topology.newStream("s", FeederBatchSpout(["word"]))
    state = MemoryState.opaque(name="wrong")
    counts = words.groupBy(["word"]).persistentAggregate(state, Count(), ["count"])
    # wrong argument order
    words.each(Split(), ["word"], ["out"])  # wrong: input fields come first
    words.aggregate(Count(), ["word"], ["n"])  # wrong: the aggregator goes second
    words.stateQuery(["word"], counts, MapGet(), ["c"])  # wrong: the state comes first
    words.persistentAggregate(Count(), state, ["count"])  # wrong: the state factory comes first
    topology.join(["word"], words, ["word"], words, ["word"])  # wrong: the stream comes before its fields
    # an operation of the wrong kind
    words.each(["word"], Count(), ["n"])  # wrong: an Aggregator is not a Function
    words.aggregate(["word"], Split(), ["n"])  # wrong: a Function is not an Aggregator
    words.groupBy(["word"]).aggregate(Split(), ["n"])  # wrong: a Function is not an Aggregator
    words.partitionPersist(state, ["word"], Count())  # wrong: an Aggregator is not a StateUpdater
    words.stateQuery(counts, ["word"], Split(), ["c"])  # wrong: a Function is not a QueryFunction
    words.filter(Split())  # wrong: a Function is not a Filter
    topology.multiReduce([words.groupBy(["word"])], MultiReducer(), ["n"])  # wrong: grouped needs Grouped
    # a missing output field list
    words.each(["word"], Split())  # wrong: a Function needs output fields
    words.aggregate(["word"], Sum())  # wrong: an aggregator needs output fields
    words.stateQuery(counts, ["word"], MapGet())  # wrong: a query needs output fields
    topology.join(words, ["word"], words, ["word"])  # wrong: a join needs output fields
    # an int where fields go
    words.each([1], Split(), ["out"])  # wrong: field names are strings
    words.aggregate(Count(), 3)  # wrong: output fields are names
    words.groupBy(["word"]).persistentAggregate(state, Count(), 1)  # wrong: output fields are names
    words.filter(2, FilterNull())  # wrong: input fields are names
    # modes are values of a declared set
    topology.join(words, ["word"], words, ["word"], ["word"], how="sideways")  # wrong: no such join type
    topology.join(words, ["word"], words, ["word"], ["word"], mode="wide")  # wrong: no such mode
    words.minBy("word", key=len, comparator=lambda a, b: 0)  # wrong: key or comparator, not both
    words.persistentAggregate("memory://wc", Count(), ["count"])  # wrong: a URL string is not a factory
