"""Trident conformance, the shared part: the test data, the operations, and the case registry.

Each case (in ``conformance_cases_stream``, ``_agg`` and ``_join``) builds one output of ONE
topology (it ends in its own ``collect()`` sink) and states what Trident would emit for every
batch, computed from the batch's tuples and how they are partitioned (:class:`View`). The
spout-specific test modules (``test_conformance_feeder.py``, ``test_conformance_kafka.py``)
feed the same batches, run the topology once and check every case against every batch
(``conformance_cases.check_case``).

Two queries run: ``main`` (the test tuples, fields id, word, n, tag) and the pair of spouts
``m1``/``m2`` (fields k, v) that are merged and joined, so they share one Spark query and one
batch id per batch.

Where a case ports a behaviour of Storm's Trident, its docstring says which (Storm sources:
``storm-client/src/jvm/org/apache/storm/trident/``, tests in
``storm-core/test/clj/integration/org/apache/storm/trident/integration_test.clj``).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyspark import cloudpickle

from trident_spark import TridentTopology
from trident_spark.operation import (
    Aggregator,
    BaseFilter,
    BaseFunction,
    CombinerAggregator,
    FlatMapFunction,
    MapFunction,
    ReducerAggregator,
)
from trident_spark.sink import CollectSink
from trident_spark.stream import Stream

# Executors cannot import this file (it is not on their path): ship its classes and lambdas by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])

Row = dict[str, Any]

# --- the data ------------------------------------------------------------------------------
FIELDS = ["id:bigint", "word:string", "n:bigint", "tag:string"]
NAMES = ["id", "word", "n", "tag"]
OTHER_FIELDS = ["k:string", "v:bigint"]
OTHER_NAMES = ["k", "v"]


def _rows(values: list[tuple[Any, ...]], names: list[str]) -> list[Row]:
    return [dict(zip(names, v, strict=True)) for v in values]


#: The main stream's batches. None words are null group keys and null join keys; None n are
#: null values. Batch 0 holds a maxBy tie (ids 0 and 3, n=7) and a word (eel) whose only n is None.
BATCHES: list[list[Row]] = [
    _rows([(0, "cat", 7, "a"), (1, "dog", 3, "b"), (2, "cat", -2, "a"), (3, None, 7, "b"),
           (4, "eel", None, "a"), (5, "dog", 3, "a"), (6, "cat", 11, "b"), (7, "fox", 0, "a"),
           (8, None, 4, "a"), (9, "dog", None, "b"), (10, "ant", 8, "b"), (11, "cat", 3, "b")], NAMES),
    _rows([(12, "dog", 6, "a"), (13, "owl", 2, "b"), (14, None, None, "a"), (15, "dog", -4, "b"),
           (16, "cat", 9, "a"), (17, "owl", 9, "b"), (18, "bee", 1, "a")], NAMES),
    _rows([(19, "cat", 2, "a"), (20, "yak", 10, "b"), (21, None, 1, "b"), (22, "cat", 2, "b"),
           (23, "yak", None, "a")], NAMES),
]

#: The two spouts merged and joined in the second query, batch by batch.
OTHER_BATCHES: tuple[list[list[Row]], list[list[Row]]] = (
    [_rows([("x", 1), ("y", 2), (None, 3)], OTHER_NAMES), _rows([("x", 4)], OTHER_NAMES),
     _rows([("z", 5), ("x", 6)], OTHER_NAMES)],
    [_rows([("x", 10), ("x", 11), (None, 12), ("w", 13)], OTHER_NAMES), _rows([("y", 14)], OTHER_NAMES),
     _rows([("z", 15)], OTHER_NAMES)],
)


def values_of(rows: list[Row], names: list[str]) -> list[list[Any]]:
    return [[r[n] for n in names] for r in rows]


# --- operations ------------------------------------------------------------------------------
class FromJson(BaseFunction):
    """The Kafka runs' record value (a JSON object) as typed fields."""

    def __init__(self, names: list[str]) -> None:
        self.names = names

    def execute(self, tuple, collector):
        record = json.loads(tuple.getString(0))
        collector.emit([record[n] for n in self.names])


class EmitIdMod4(BaseFunction):
    """0, 1, 2 or 3 emits per tuple (id % 4); emits only if it sees just its input field."""

    def execute(self, tuple, collector):
        if list(tuple.getFields()) != ["id"]:
            return
        for i in range(tuple.getLong(0) % 4):
            collector.emit([i])


class MixedKey(BaseFunction):
    """Emits id % 3 into an undeclared field: an int for an even id, its text for an odd one."""

    def execute(self, tuple, collector):
        k = tuple.getLong(0) % 3
        collector.emit([k if tuple.getLong(0) % 2 == 0 else str(k)])


class PartitionTag(BaseFunction):
    """Appends where it runs: OperationContext.partition_index, num_partitions and txid."""

    def prepare(self, conf, context):
        self.context = context

    def execute(self, tuple, collector):
        c = self.context
        collector.emit([c.partition_index, c.num_partitions, c.txid])


class EvenN(BaseFilter):
    def isKeep(self, tuple):
        return len(tuple) == 4 and tuple["n"] is not None and tuple["n"] % 2 == 0


class PositiveN(BaseFilter):
    """each(["n"], PositiveN()): keeps only if it sees just the field n."""

    def isKeep(self, tuple):
        return list(tuple.getFields()) == ["n"] and tuple.getValue(0) is not None and tuple.getValue(0) > 0


class Describe(MapFunction):
    def execute(self, tuple):
        return [f"{tuple['id']}:{tuple['tag']}"]


class PlusMinus(FlatMapFunction):
    def execute(self, tuple):
        n = tuple["n"]
        return [] if n is None else [[tuple["id"], n], [tuple["id"], -n]]


class PartitionIds(Aggregator):
    """Emits [txid from init, partition index, partition count, ids] once per partition (or group)."""

    def __init__(self, sort: bool = False) -> None:
        self.sort = sort

    def prepare(self, conf, context):
        self.context = context

    def init(self, batch_id, collector):
        return {"txid": batch_id, "ids": []}

    def aggregate(self, state, tuple, collector):
        state["ids"].append(tuple.getLong(0))

    def complete(self, state, collector):
        ids = sorted(state["ids"]) if self.sort else state["ids"]
        collector.emit([state["txid"], self.context.partition_index, self.context.num_partitions, ids])


PARTITION_IDS_FIELDS = ["txid:bigint", "pidx:bigint", "nparts:bigint", "ids:array<bigint>"]


class EmitsAnywhere(Aggregator):
    """Emits in init, in aggregate (per tuple) and in complete: Trident's Aggregator may emit at any point."""

    def init(self, batch_id, collector):
        collector.emit(["init", batch_id])
        return [0]

    def aggregate(self, state, tuple, collector):
        state[0] += 1
        collector.emit(["tuple", tuple.getLong(0)])

    def complete(self, state, collector):
        collector.emit(["complete", state[0]])


class TxAgg(Aggregator):
    """Emits [txid given to init, tuple count] per init/complete pair."""

    def init(self, batch_id, collector):
        return {"txid": batch_id, "count": 0}

    def aggregate(self, state, tuple, collector):
        state["count"] += 1

    def complete(self, state, collector):
        collector.emit([state["txid"], state["count"]])


class CountAsAggregator(Aggregator):
    """Storm's testing CountAsAggregator."""

    def init(self, batch_id, collector):
        return [0]

    def aggregate(self, state, tuple, collector):
        state[0] += 1

    def complete(self, state, collector):
        collector.emit([state[0]])


class CountAndSum(Aggregator):
    """Two tuples per batch (or group), even an empty one: ["rows", count], ["sum", sum of n]."""

    def init(self, batch_id, collector):
        return [0, 0]

    def aggregate(self, state, tuple, collector):
        state[0] += 1
        state[1] += tuple.getValue(0) or 0

    def complete(self, state, collector):
        collector.emit(["rows", state[0]])
        collector.emit(["sum", state[1]])


class MinMaxId(Aggregator):
    """["min", id] and ["max", id]; nothing for no tuples."""

    def init(self, batch_id, collector):
        return []

    def aggregate(self, state, tuple, collector):
        state.append(tuple.getLong(0))

    def complete(self, state, collector):
        if state:
            collector.emit(["min", min(state)])
            collector.emit(["max", max(state)])


class IdsReducer(ReducerAggregator):
    """The ids, in the order reduce saw them (or sorted)."""

    def __init__(self, sort: bool = False) -> None:
        self.sort = sort

    def init(self):
        return []

    def reduce(self, curr, tuple):
        out = [*curr, tuple.getLong(0)]
        return sorted(out) if self.sort else out


class SumSq(CombinerAggregator):
    """Sum of squares of the first field (None counts 0)."""

    def init(self, tuple):
        return (tuple.getValue(0) or 0) ** 2

    def combine(self, val1, val2):
        return val1 + val2

    def zero(self):
        return 0


class ProbeCombiner(CombinerAggregator):
    """A combiner that records how it was run.

    ``inits``: [partition index, partition count, inits] of the stages where ``init`` ran;
    ``combines``: [partition count, combines] of the stages where ``combine`` ran. Partial
    aggregation shows as combines in the spout's stage (its partition count) and, in the final
    stage, one combine per partition that had tuples (not one per tuple).
    """

    def prepare(self, conf, context):
        self.where = (context.partition_index, context.num_partitions)

    def init(self, tuple):
        return {"total": tuple.getValue(0) or 0, "inits": [[*self.where, 1]], "combines": []}

    def combine(self, val1, val2):
        inits: dict[tuple[int, int], int] = {}
        for p, n, c in [*val1["inits"], *val2["inits"]]:
            inits[(p, n)] = inits.get((p, n), 0) + c
        combines: dict[int, int] = {self.where[1]: 1}
        for n, c in [*val1["combines"], *val2["combines"]]:
            combines[n] = combines.get(n, 0) + c
        return {"total": val1["total"] + val2["total"],
                "inits": [[p, n, c] for (p, n), c in sorted(inits.items())],
                "combines": [[n, c] for n, c in sorted(combines.items())]}

    def zero(self):
        return {"total": 0, "inits": [], "combines": []}


PROBE_FIELD = "probe:struct<total:bigint,inits:array<array<bigint>>,combines:array<array<bigint>>>"


# --- what the spout run tells the cases ------------------------------------------------------
@dataclass
class View:
    """One batch as the spout delivered it: its txid and the tuples of each Spark partition."""

    txid: int
    parts: list[list[Row]]
    other: tuple[list[Row], list[Row]] = ([], [])
    m1_parts: list[list[Row]] | None = None  # how the m1 spout partitions its tuples

    @property
    def tuples(self) -> list[Row]:
        """Every tuple, partition after partition (the order an unshuffled stream outputs)."""
        return [t for p in self.parts for t in p]


@dataclass
class Env:
    default_parallelism: int
    shuffle_partitions: int


Expect = Callable[[View, Env], Any]


@dataclass
class Case:
    """One output: its fields, how to build it, what each batch must give.

    ``expect(view, env)`` returns the exact rows, or a callable that checks the rows.
    ``ordered``: the rows must come in exactly that order (streams that were never
    shuffled keep the spout's partition order). ``plan``: how the aggregation must run on
    Spark, checked on its physical plan (see :func:`check_plan`).
    """

    name: str
    fields: list[str]
    build: Callable[[Streams], tuple[Stream, Expect]]
    ordered: bool = False
    plan: str | None = None
    doc: str = ""
    sink: CollectSink | None = None
    expect: Expect | None = None
    node: Any = None


@dataclass
class Streams:
    topology: TridentTopology
    main: Stream
    m1: Stream
    m2: Stream


CASES: list[Case] = []

def case(name: str, fields: list[str], ordered: bool = False,
         plan: str | None = None) -> Callable[[Any], Any]:
    def register(build: Callable[[Streams], tuple[Stream, Expect]]) -> Any:
        CASES.append(Case(name, fields, build, ordered, plan, (build.__doc__ or "").strip()))
        return build
    return register


# --- model helpers -----------------------------------------------------------------------------
def keyed(rows: list[Row], keys: list[str]) -> dict[tuple[Any, ...], list[Row]]:
    """Rows by group key, groups in first-appearance order."""
    out: dict[tuple[Any, ...], list[Row]] = {}
    for r in rows:
        out.setdefault(tuple(r[k] for k in keys), []).append(r)
    return out


def n_sum(rows: list[Row]) -> int:
    """Sum of n: Trident combines from zero() (CombinerAggregatorCombineImpl), and Sum skips None,
    so a group whose n are all None sums to 0."""
    return sum(r["n"] for r in rows if r["n"] is not None)


def best(rows: list[Row], field_: str, better: Callable[[Any, Any], bool]) -> Row | None:
    """Storm's ComparisonAggregator: the later tuple wins a tie; None values are skipped."""
    found: Row | None = None
    for r in rows:
        if r[field_] is not None and (found is None or better(r[field_], found[field_])):
            found = r
    return found


def probe(parts: list[list[Row]], final_partitions: int) -> dict[str, Any]:
    """What ProbeCombiner gives for one aggregation (one group) with partial aggregation.

    Each partition of the spout's stage with tuples of the group inits them and combines them
    (from the first value on: len - 1 combines); the final stage combines one partial value
    per such partition, from zero() as Trident's CombinerAggregatorCombineImpl does. (Trident's
    partial stage also starts from zero(), and its empty partitions send zero() partials too:
    more combine calls, the same value when zero() is the identity of combine.)
    """
    used = [(i, p) for i, p in enumerate(parts) if p]
    combines: dict[int, int] = {}
    for count, stage in ((sum(len(p) - 1 for _, p in used), len(parts)), (len(used), final_partitions)):
        if count > 0:
            combines[stage] = combines.get(stage, 0) + count
    return {"total": sum(n_sum(p) for _, p in used),
            "inits": [[i, len(parts), len(p)] for i, p in used],
            "combines": [[n, c] for n, c in sorted(combines.items())]}


def tagged(rows: list[Row], pidx: int, nparts: int, txid: int) -> list[Row]:
    return [{**r, "pidx": pidx, "nparts": nparts, "ctx_txid": txid} for r in rows]


TAG_FIELDS = ["pidx:bigint", "nparts:bigint", "ctx_txid:bigint"]
TAGGED = [*NAMES, "pidx", "nparts", "ctx_txid"]


def canonical(row: Row) -> str:
    """A row as text that also tells 1 from 1.0 and True from 1: the exact comparison."""
    return json.dumps(row, sort_keys=True, default=repr)


def check_repartition(rows: list[Row], view: View, nparts: int, key: list[str] | None = None,
                      copies: int = 1) -> None:
    """Every tuple arrived (``copies`` times), in ``nparts`` partitions; with ``key``, equal
    keys share one partition."""
    assert all(r["nparts"] == nparts and 0 <= r["pidx"] < nparts and r["ctx_txid"] == view.txid
               for r in rows), rows
    plain = sorted(canonical({k: r[k] for k in NAMES}) for r in rows)
    assert plain == sorted(canonical(t) for t in view.tuples for _ in range(copies))
    if key is not None:
        where: dict[tuple[Any, ...], set[int]] = {}
        for r in rows:
            where.setdefault(tuple(r[k] for k in key), set()).add(r["pidx"])
        assert all(len(p) == 1 for p in where.values()), where

