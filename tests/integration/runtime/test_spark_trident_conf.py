"""``spark.trident.*`` in a real session's conf: run() takes the settings it is not given from it,
an argument given wins, and a bad value stops run() naming the key (local SparkSession)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from trident_spark import TridentTopology
from trident_spark.errors import TopologyError
from trident_spark.spout import FixedBatchSpout

pytestmark = pytest.mark.integration


def words() -> TridentTopology:
    topology = TridentTopology()
    topology.newStream("words", FixedBatchSpout(["word"], 2, ["a"], ["b"], ["c"])).collect()
    return topology


@pytest.fixture
def session_conf(spark: Any) -> Iterator[dict[str, str]]:
    """Keys set with ``spark.conf.set`` for one test, unset after it."""
    keys: dict[str, str] = {}
    yield keys
    for key in keys:
        spark.conf.unset(key)


def set_conf(spark: Any, keys: dict[str, str], **values: str) -> None:
    for key, value in values.items():
        keys[f"spark.trident.{key}"] = value
        spark.conf.set(f"spark.trident.{key}", value)


def test_run_takes_what_it_is_not_given_from_the_session_conf(spark, session_conf, tmp_path: Path):
    set_conf(spark, session_conf, checkpointLocation=str(tmp_path / "from-conf"), trigger="available_now",
             progressHistory="1")
    handle = words().run(spark=spark)
    try:
        assert handle.awaitTermination(300)  # available_now: the run ends by itself
        assert handle.checkpoint == tmp_path / "from-conf"
        assert [(batch.txid, batch.rows) for batch in handle.progress] == [(1, 1)]  # only the last kept
        run_info = json.loads((tmp_path / "from-conf" / "trident-run.json").read_text())
        assert (run_info["trigger"], run_info["trigger_ms"]) == ("available_now", None)
    finally:
        handle.stop()

    given = words().run(tmp_path / "given", spark=spark, progress_history=5)
    try:
        assert given.awaitTermination(300)
        assert given.checkpoint == tmp_path / "given"
        assert [(batch.txid, batch.rows) for batch in given.progress] == [(0, 2), (1, 1)]
    finally:
        given.stop()


def test_a_bad_value_in_the_session_conf_names_the_key(spark, session_conf, tmp_path: Path):
    set_conf(spark, session_conf, maxBatchRetries="many")
    with pytest.raises(TopologyError) as info:
        words().run(tmp_path / "ck", spark=spark)
    assert str(info.value) == (
        "Spark conf spark.trident.maxBatchRetries='many': give an int >= 0 (replays of a batch that raises "
        "FailedException); it comes from --conf, spark-defaults.conf or SparkSession.builder.config() (a "
        "value given to run() takes its place)")
    assert spark.streams.active == []
    with words().run(tmp_path / "ck", spark=spark, max_batch_retries=1, trigger="available_now") as handle:
        assert handle.awaitTermination(300)  # given: the conf's value is not read


def test_no_checkpoint_anywhere_says_where_to_give_one(spark, tmp_path: Path):
    with pytest.raises(TopologyError, match=r"^run\(\): no checkpoint location: give "
                                            r"run\(checkpoint_location=\.\.\.\) or set the Spark conf "
                                            r"spark\.trident\.checkpointLocation"):
        words().run(spark=spark)
