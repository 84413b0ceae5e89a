"""Arrow-batch operations on a real local Spark session: a word count with an ArrowFunction Split and
an ArrowCombinerAggregator count, on FixedBatchSpout (typed) and FeederBatchSpout (untyped), exact
counts per batch and in opaque SQLite state; the built-ins on untyped fields give what they give
on typed ones."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from trident_spark import ArrowCombinerAggregator, ArrowFilter, ArrowFunction, TridentTopology
from trident_spark.builtin import Count, Equals, FilterNull, Negate, Split, Sum
from trident_spark.spout import FeederBatchSpout, FixedBatchSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration

BATCHES = [["the cat sat", "the dog"], ["a cat  and a dog", "the end"], ["cat"]]


class ArrowSplit(ArrowFunction):
    def execute_arrow(self, batch: pa.RecordBatch) -> Any:
        lists = pc.utf8_split_whitespace(batch.column(0))
        words = pc.list_flatten(lists)
        nonempty = pc.not_equal(words, "")
        return pc.list_parent_indices(lists).filter(nonempty), [words.filter(nonempty)]

    def execute(self, tuple: Any, collector: Any) -> None:  # the stage must call execute_arrow
        raise AssertionError("ArrowSplit was called per tuple")


class ArrowCount(ArrowCombinerAggregator[int]):
    arrow_combine = "sum"

    def init_arrow(self, batch: pa.RecordBatch) -> pa.Array:
        return pa.repeat(pa.scalar(1, pa.int64()), batch.num_rows)

    def init(self, tuple: Any) -> int:  # the fused partial aggregation must call init_arrow
        raise AssertionError("ArrowCount.init was called per tuple")

    def combine(self, a: int, b: int) -> int:
        return a + b

    def zero(self) -> int:
        return 0


class NotThe(ArrowFilter):
    def keep_arrow(self, batch: pa.RecordBatch) -> pa.BooleanArray:
        return pc.not_equal(batch.column(0), "the")

    def isKeep(self, tuple: Any) -> bool:  # the stage must call keep_arrow
        raise AssertionError("NotThe was called per tuple")


def _by_batch(sink: Any, value: str = "count") -> list[dict[Any, Any]]:
    return [{t["word"]: t[value] for t in tuples} for _, tuples in sorted(sink.batches.items())]


def _expected(drop: str | None = None) -> list[dict[str, int]]:
    return [dict(Counter(w for s in batch for w in s.split() if w != drop)) for batch in BATCHES]


@pytest.fixture(scope="module", params=["typed", "untyped"])
def counted(request: Any, spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp(f"arrow-{request.param}")
    if request.param == "typed":
        spout: Any = FixedBatchSpout(["sentence:string"], 2, *[[s] for b in BATCHES for s in b],
                                     num_partitions=2)
        spout_batches = None
    else:
        spout = FeederBatchSpout(["sentence"], num_partitions=2)
        spout_batches = BATCHES
    state = SqliteState.opaque(path=str(tmp / "wc.db"), table="wc")
    topology = TridentTopology()
    sentences = topology.newStream("sentences", spout)
    # Each aggregation reads its own split (a stream read by one operation), so the partial
    # aggregation runs fused at the end of the split's stage, where it combines in Arrow.
    sinks = {
        "counts": sentences.each(["sentence"], ArrowSplit(), ["word"]).groupBy(["word"])
                           .aggregate(ArrowCount(), ["count"]).collect(),
        "no_the": sentences.each(["sentence"], ArrowSplit(), ["word"]).each(["word"], NotThe())
                           .groupBy(["word"]).aggregate(ArrowCount(), ["count"]).collect(),
        "state": state,
    }
    (sentences.each(["sentence"], ArrowSplit(), ["word"]).groupBy(["word"])
        .persistentAggregate(state, ArrowCount(), ["count"]))
    if spout_batches is not None:
        for batch in spout_batches:
            spout.feed([[s] for s in batch])
    with topology.run(str(tmp / "ckpt"), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
    return sinks


def test_arrow_word_count_per_batch_is_exact(counted: dict[str, Any]) -> None:
    assert _by_batch(counted["counts"]) == _expected()
    assert _by_batch(counted["no_the"]) == _expected(drop="the")


def test_arrow_word_count_in_opaque_state_is_exact(counted: dict[str, Any]) -> None:
    everything = Counter(w for batch in BATCHES for s in batch for w in s.split())
    words = sorted(everything)
    with counted["state"].open() as state:
        assert state.multiGet([[w] for w in words]) == [everything[w] for w in words]


ROWS = [["a", "a", 1], ["b", None, 2], [None, "c", 3], ["d", "d", None], ["e f", "g", 4]]


def _builtins(spark: Any, tmp: Any, fields: list[str]) -> dict[str, list[Any]]:
    spout = FeederBatchSpout(fields, num_partitions=2)
    topology = TridentTopology()
    s = topology.newStream("rows", spout)
    # A per-tuple map first keeps the built-ins in a Python stage, where their Arrow forms run.
    p = s.map(lambda t: list(t.getValues()), fields)
    sinks = {
        "split": p.each(["a"], Split(), ["word"]).project(["word"]).collect(),
        "equals": p.each(["a", "b"], Equals()).project(["a"]).collect(),
        "not_null": p.each(["a", "b"], FilterNull()).project(["a"]).collect(),
        "negate": p.each(["a", "b"], Negate(FilterNull())).project(["n"]).collect(),
        "count": p.each(["a"], Split(), ["word"]).groupBy(["word"]).aggregate(Count(), ["c"]).collect(),
        "sum": p.each(["n"], FilterNull()).aggregate(["n"], Sum(), ["total"]).collect(),
    }
    spout.feed(ROWS)
    with topology.run(str(tmp / "ckpt"), trigger="available_now", spark=spark) as handle:
        handle.awaitTermination()
    return {name: sorted((sorted(t.items()) for t in sink.tuples), key=repr) for name, sink in sinks.items()}


def test_the_built_ins_on_untyped_fields_give_what_they_give_on_typed(spark: Any, tmp_path: Any) -> None:
    typed = _builtins(spark, tmp_path / "typed", ["a:string", "b:string", "n:bigint"])
    untyped = _builtins(spark, tmp_path / "untyped", ["a", "b", "n"])
    # one typed and one untyped input: no Spark SQL form applies, the Arrow forms run
    mixed = _builtins(spark, tmp_path / "mixed", ["a:string", "b", "n"])
    assert untyped == typed
    assert mixed == typed
    assert typed["split"] == [[("word", w)] for w in ["a", "b", "d", "e", "f"]]
    assert typed["equals"] == [[("a", "a")], [("a", "d")]]
    assert typed["not_null"] == [[("a", "a")], [("a", "d")], [("a", "e f")]]
    assert typed["negate"] == [[("n", 2)], [("n", 3)]]
    assert typed["count"] == [[("c", 1), ("word", w)] for w in ["a", "b", "d", "e", "f"]]
    assert typed["sum"] == [[("total", 10)]]
