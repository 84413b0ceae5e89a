"""A spout read in one task with the stream's first Python operations (issue 31, fusion).

The same topologies run with fusion on (the default) and off (``conf={"trident.fusion": False}``)
give the same batches, the same progress rows and the same final counts; ``explain()`` shows the
fused stage (``read_<stream>_...`` over the spout's partitions) and says why a spout is read alone
where it is.
"""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import Fields, TridentTopology
from trident_spark.builtin import Count, Split
from trident_spark.operation import BaseFilter, BaseFunction
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

BATCHES = [["the cat saw the dog", "the dog ran"], ["a cat and a dog"], ["", "dog dog"]]


class Words(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple.getString(0).split():
            collector.emit([word])


class UpperInSql(BaseFunction):
    """A user's Function with a Spark SQL form (and no Arrow-batch one)."""

    def execute(self, tuple: Any, collector: Any) -> None:
        collector.emit([tuple.getString(0).upper()])

    def spark_columns(self, columns: list[Any]) -> list[Any]:
        from pyspark.sql import functions as F

        return [F.upper(columns[0])]


class Short(BaseFilter):
    def isKeep(self, tuple: Any) -> bool:
        return len(tuple.getString(0)) <= 3


def _word_count(spark: Any, tmp: Any, fusion: bool) -> dict[str, Any]:
    spout = FeederBatchSpout(["sentence"], num_partitions=2)
    topology = TridentTopology()
    state = SqliteState.opaque(path=str(tmp / "wc.db"), table="wc")
    stream = (topology.newStream("sentences", spout).each(Fields("sentence"), Words(), Fields("word"))
              .filter(Fields("word"), Short()).map(lambda t: [t.getString(1).upper()], Fields("word"))
              .flatMap(lambda t: [[t[0]], [t[0]]]).project(Fields("word")))
    counts = stream.groupBy(Fields("word")).persistentAggregate(state, Count(), Fields("count"))
    values = counts.newValuesStream().collect()
    for batch in BATCHES:
        spout.feed([[s] for s in batch])
    handle = topology.run(checkpoint_location=tmp / "ckpt", trigger="available_now", spark=spark,
                          conf={"trident.fusion": fusion})
    handle.processAllAvailable()
    handle.stop()
    with state.open() as opened:
        words = sorted({w.upper() for batch in BATCHES for s in batch for w in s.split() if len(w) <= 3})
        final = dict(zip(words, opened.multiGet([[w] for w in words]), strict=True))
    return {"batches": {k: sorted(map(str, v)) for k, v in values.batches.items()}, "final": final,
            "rows": [p.rows for p in handle.progress],
            "source": [[s.rows_out for s in p.stages if s.kind == "source"] for p in handle.progress],
            "explain": topology.explain(spark)}


@pytest.fixture(scope="module")
def runs(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[bool, dict[str, Any]]:
    return {fusion: _word_count(spark, tmp_path_factory.mktemp(f"fusion-{fusion}"), fusion)
            for fusion in (True, False)}


def test_fused_and_unfused_give_the_same_batches_and_counts(runs):
    expected = {}
    for batch in BATCHES:
        for sentence in batch:
            for word in sentence.split():
                if len(word) <= 3:
                    expected[word.upper()] = expected.get(word.upper(), 0) + 2
    assert runs[True]["final"] == expected
    assert runs[False]["final"] == expected
    assert runs[True]["batches"] == runs[False]["batches"]


def test_progress_counts_the_records_read_with_fusion_on_and_off(runs):
    assert runs[True]["rows"] == [2, 1, 2]
    assert runs[False]["rows"] == [2, 1, 2]
    assert runs[True]["source"] == [[2], [1], [2]]  # the read counted as the source stage


def test_explain_shows_the_spout_read_with_its_first_operations(runs):
    text = runs[True]["explain"]
    assert "MapInArrow each_Words__filter_Short__map_lambda__flatMap_lambda__with_spout_sentences" in text
    assert ("spout 'sentences': read in one task with each(Words), filter(Short), map(<lambda>), "
            "flatMap(<lambda>), aggregate(Count) (partial)") in text


def _explained(spark: Any, build: Any, conf: dict[str, Any] | None = None) -> str:
    topology = TridentTopology()
    build(topology)
    return str(topology.explain(spark))


def test_explain_says_why_a_spout_is_read_alone(spark):
    def sql_first(t: Any) -> None:
        spout = FeederBatchSpout(["sentence:string"])
        t.newStream("s", spout).each(["sentence"], UpperInSql(), ["upper"]).collect()

    def two_readers(t: Any) -> None:
        s = t.newStream("s", FeederBatchSpout(["sentence"]))
        s.each(["sentence"], Words(), ["word"]).collect()
        s.each(["sentence"], Words(), ["w"]).collect()

    def hinted(t: Any) -> None:
        t.newStream("s", FeederBatchSpout(["sentence"])).parallelismHint(3).each(
            ["sentence"], Words(), ["word"]).collect()

    def merged(t: Any) -> None:
        a, b = FeederBatchSpout(["x"]), FeederBatchSpout(["x"])
        t.merge(t.newStream("a", a), t.newStream("b", b)).collect()

    sql = "spout 's': read alone: its first operation each(UpperInSql) runs as Spark SQL"
    assert sql in _explained(spark, sql_first)
    assert "spout 's': read alone: 2 operations read its tuples" in _explained(spark, two_readers)
    assert "read alone: parallelismHint(3) repartitions its tuples before its operations" in _explained(
        spark, hinted)
    assert ("spout 'a': read alone: the query reads 2 spouts in one union (merged or joined streams)"
            in _explained(spark, merged))


def test_a_built_in_with_an_arrow_form_joins_the_spouts_read_instead_of_spark_sql(spark, tmp_path):
    spout = FeederBatchSpout(["sentence:string"], num_partitions=2)
    topology = TridentTopology()
    state = SqliteState.opaque(path=str(tmp_path / "wc.db"), table="wc")
    (topology.newStream("s", spout).each(["sentence"], Split(), ["word"])
     .groupBy(["word"]).persistentAggregate(state, Count(), ["count"]))
    text = topology.explain(spark)
    assert "spout 's': read in one task with each(Split), aggregate(Count) (partial)" in text
    spout.feed([["the cat the"], ["a  dog"]])
    spout.feed([["the end"]])
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    with state.open() as opened:
        words = ["the", "cat", "a", "dog", "end"]
        assert opened.multiGet([[w] for w in words]) == [3, 1, 1, 1, 1]
