"""A Spark Connect session is refused at run() and explain(), saying what it lacks."""

from __future__ import annotations

import pytest

from trident_spark import TridentTopology
from trident_spark.builtin import Count
from trident_spark.errors import TopologyError
from trident_spark.spout import FeederBatchSpout


class ConnectSession:
    """Stands for pyspark.sql.connect.session.SparkSession (grpc is not installed here)."""

    __module__ = "pyspark.sql.connect.session"


def topology() -> TridentTopology:
    topology = TridentTopology()
    topology.newStream("words", FeederBatchSpout(["word"])).aggregate(Count(), ["n"]).collect()
    return topology


def test_run_refuses_a_connect_session_before_anything_starts(tmp_path) -> None:
    with pytest.raises(TopologyError, match=r"run\(\): this is a Spark Connect session .*SparkContext"):
        topology().run(tmp_path / "checkpoint", spark=ConnectSession())
    assert not (tmp_path / "checkpoint").exists()


def test_explain_refuses_it_too() -> None:
    with pytest.raises(TopologyError, match=r"explain\(\): this is a Spark Connect session"):
        topology().explain(ConnectSession())
