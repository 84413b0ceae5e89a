"""The Spout interface: the three spouts implement it, and the runtime refuses what does not."""

from pathlib import Path

import pytest

from trident_spark import TopologyError, TridentTopology
from trident_spark.spout import FeederBatchSpout, FixedBatchSpout, KafkaSpout, Spout, SpoutRun


def test_the_three_spouts_are_spouts():
    spouts = [KafkaSpout("127.0.0.1:9092", ["words"]), FeederBatchSpout(["word"]),
              FixedBatchSpout(["word"], 2, ["a"], ["b"])]
    assert all(isinstance(spout, Spout) for spout in spouts)


def test_a_spout_without_settings_or_address_reads_as_it_is():
    spout = FeederBatchSpout(["word"])
    assert spout.for_run(SpoutRun(Path("/tmp/ckpt"), 30.0)) is spout
    assert spout.address is None


def test_the_kafka_spout_names_its_broker_and_takes_the_run_settings_on_a_copy(tmp_path):
    spout = KafkaSpout("127.0.0.1:9092", ["words"])
    run = spout.for_run(SpoutRun(tmp_path, 30.0))
    assert spout.address == "127.0.0.1:9092"
    assert run is not spout and run.run.checkpoint == str(tmp_path)
    assert spout.run.checkpoint != str(tmp_path)


def test_run_refuses_a_spout_that_is_not_a_spout_before_spark_starts(tmp_path):
    class Lookalike:
        fields = ["word"]

        def to_dataframe(self, spark):
            raise AssertionError("never reached")

    topology = TridentTopology()
    topology.newStream("words", Lookalike()).collect()
    with pytest.raises(TopologyError, match=r"newStream\('words'\): .* is not a Spout"):
        topology.run(tmp_path)
