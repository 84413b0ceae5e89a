"""``stream.foreachBatch(function)``: each batch's DataFrame and txid into any Spark sink.

A word count's new values go to parquet, one directory per txid written with overwrite: a batch
replayed after its files were written (the function asks for the replay itself, once) leaves one
file set per batch id and no duplicate row. Untyped fields become the declared Spark types (else
strings); the function's several Spark actions run the batch's state writes once (a
non-transactional state would double-count otherwise); a failing function fails the batch naming
itself.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from trident_spark import FailedException, TopologyError, TridentTopology
from trident_spark.builtin import Count
from trident_spark.errors import OperatorError
from trident_spark.operation import BaseFunction
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState

pytestmark = pytest.mark.integration
cloudpickle.register_pickle_by_value(sys.modules[__name__])

BATCHES = ["the cat saw the dog", "the dog ran", "a cat and a dog"]


class Split(BaseFunction):
    def execute(self, tuple: Any, collector: Any) -> None:
        for word in tuple["sentence"].split():
            collector.emit([word])


class ParquetPerTxid:
    """Writes each batch under ``txid=N`` (overwrite: a replay replaces its own files); asks for
    batch 1 to be replayed once, after writing it."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.calls: list[int] = []
        self.schemas: list[str] = []

    def __call__(self, df: Any, txid: int) -> None:
        self.calls.append(txid)
        self.schemas.append(df.schema.simpleString())
        df.write.mode("overwrite").parquet(str(self.out / f"txid={txid}"))
        if txid == 1 and self.calls.count(1) == 1:
            raise FailedException("replay batch 1 after its files were written")


def expected_new_values() -> dict[int, dict[str, int]]:
    counts: dict[str, int] = {}
    batches: dict[int, dict[str, int]] = {}
    for txid, sentence in enumerate(BATCHES):
        words = sentence.split()
        for word in words:
            counts[word] = counts.get(word, 0) + 1
        batches[txid] = {word: counts[word] for word in set(words)}
    return batches


@pytest.fixture(scope="module")
def ran(spark: Any, tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    work = tmp_path_factory.mktemp("foreach-batch")
    spout = FeederBatchSpout(["sentence"], num_partitions=2)
    topology = TridentTopology()
    words = topology.newStream("sentences", spout).each(["sentence"], Split(), ["word"])
    parquet = ParquetPerTxid(work / "out")
    (words.groupBy(["word"])
        .persistentAggregate(SqliteState.opaque(path=str(work / "wc.db"), table="wc"), Count(), ["count"])
        .newValuesStream().foreachBatch(parquet, types={"word": "string"}))
    for sentence in BATCHES:
        spout.feed([[sentence]])
    handle = topology.run(checkpoint_location=work / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    return {"work": work, "parquet": parquet, "spark": spark}


def test_one_file_set_per_batch_id_and_a_replay_replaces_its_own(ran):
    out = ran["work"] / "out"
    assert sorted(p.name for p in out.iterdir()) == ["txid=0", "txid=1", "txid=2"]
    assert ran["parquet"].calls == [0, 1, 1, 2]
    rows = ran["spark"].read.parquet(str(out)).collect()
    got: dict[int, dict[str, int]] = {}
    for row in rows:
        assert row["word"] not in got.setdefault(row["txid"], {}), "a row written twice"
        got[row["txid"]][row["word"]] = row["count"]
    assert got == expected_new_values()


def test_untyped_fields_become_the_declared_spark_types(ran):
    assert set(ran["parquet"].schemas) == {"struct<word:string,count:bigint>"}


def test_several_actions_in_the_function_run_the_state_writes_once(spark, tmp_path):
    spout = FeederBatchSpout(["sentence"], num_partitions=2)
    topology = TridentTopology()
    actions: list[int] = []

    def two_actions(df: Any, txid: int) -> None:  # two Spark jobs over one batch's DataFrame
        actions.append(df.count())
        df.write.format("noop").mode("overwrite").save()

    # A non-transactional state counts a write twice if it runs twice: it must run once.
    plain = SqliteState.nonTransactional(path=str(tmp_path / "wc.db"), table="plain")
    (topology.newStream("sentences", spout).each(["sentence"], Split(), ["word"]).groupBy(["word"])
        .persistentAggregate(plain, Count(), ["count"]).newValuesStream().foreachBatch(two_actions))
    for sentence in BATCHES:
        spout.feed([[sentence]])
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.processAllAvailable()
    handle.stop()
    assert actions == [len(set(sentence.split())) for sentence in BATCHES]
    with plain.open() as state:
        everything = " ".join(BATCHES).split()
        words = sorted(set(everything))
        assert state.multiGet([[w] for w in words]) == [everything.count(w) for w in words]


def test_a_failing_function_fails_the_batch_naming_itself(spark, tmp_path):
    spout = FeederBatchSpout(["word"])
    topology = TridentTopology()

    def broken(df: Any, txid: int) -> None:
        raise ValueError("no such bucket")

    topology.newStream("words", spout).foreachBatch(broken)
    spout.feed([["cat"]])
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    with pytest.raises(OperatorError,
                       match=r"foreachBatch\(broken\) failed for batch 0: ValueError: no such bucket"):
        handle.processAllAvailable()
    handle.stop()


def test_foreach_batch_checks_its_arguments_when_the_topology_is_built():
    stream = TridentTopology().newStream("words", FeederBatchSpout(["word"]))
    with pytest.raises(TopologyError, match=r"expected a function of \(df, txid\)"):
        stream.foreachBatch(lambda df: None)
    with pytest.raises(TopologyError, match=r"types= names \['count'\], which the stream does not have"):
        stream.foreachBatch(lambda df, txid: None, types={"count": "bigint"})
