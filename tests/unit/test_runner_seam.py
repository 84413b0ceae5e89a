"""TridentTopology hands its graph to the installed runner: queries(), run() and explain() go through it."""

from pathlib import Path

import pytest

from trident_spark import TridentTopology
from trident_spark.runner import RunSettings, install_runner, installed_runner
from trident_spark.runtime.spark_runner import SparkRunner
from trident_spark.spout import FeederBatchSpout


class Recording:
    """A runner that plans with the Spark runner's planner and records what run() and explain() get."""

    def __init__(self):
        self.calls = []

    def queries(self, nodes, sinks):
        return SparkRunner().queries(nodes, sinks)

    def run(self, queries, settings):
        self.calls.append(("run", [q.name for q in queries], settings))
        return "handle"

    def explain(self, queries, spark, mode):
        self.calls.append(("explain", [q.name for q in queries], spark, mode))
        return "plan with password=secret"


@pytest.fixture
def recording():
    before = installed_runner()
    runner = Recording()
    install_runner(runner)
    yield runner
    install_runner(before)


def test_the_package_installs_the_spark_runner():
    assert isinstance(installed_runner(), SparkRunner)


def test_run_and_explain_reach_the_installed_runner(recording, tmp_path):
    topology = TridentTopology()
    topology.newStream("words", FeederBatchSpout(["word"])).collect()
    assert topology.run(tmp_path, trigger=None, max_batch_retries=1) == "handle"
    assert "secret" not in topology.explain(mode="formatted")  # still redacted by the topology
    (run, names, settings), explain = recording.calls
    assert (run, names) == ("run", ["words"])
    assert settings == RunSettings(Path(tmp_path), trigger=None, max_batch_retries=1)
    assert explain == ("explain", ["words"], None, "formatted")
