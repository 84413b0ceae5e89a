"""The minimal runner on real Spark: Python operators over Arrow, typed fields, errors, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
from pyspark import cloudpickle

from trident_spark import TopologyError, TridentTopology
from trident_spark.cli.main import main as cli_main
from trident_spark.errors import OperatorError
from trident_spark.local.kafka import produce
from trident_spark.operation import BaseFilter, BaseFunction
from trident_spark.spout import FeederBatchSpout, KafkaSpout

pytestmark = pytest.mark.integration

# pytest imports this file from a path the executors do not have: ship its classes by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


class SplitWithLength(BaseFunction):
    output_types = {"length": "bigint"}

    def execute(self, tuple, collector):
        for word in tuple.getString(0).split():
            collector.emit([word, len(word)])


class LongWords(BaseFilter):
    def isKeep(self, tuple):
        return tuple.getLongByField("length") > 3


class Explode(BaseFunction):
    def execute(self, tuple, collector):
        if "boom" in tuple.getString(0):
            raise ValueError("cannot split this")
        collector.emit([tuple.getString(0)])


def test_each_filter_peek_project_with_typed_fields(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, b"the quick brown fox", 0), (None, b"jumps over a lazy dog", 1),
                                     (None, b"", 0)])
    seen = tmp_path / "peeked"
    seen.mkdir()

    def record(t):  # runs on the executors: leave a trace on disk
        (seen / f"{t['word']}-{os.getpid()}").touch()

    topology = TridentTopology()
    words = (topology.newStream("typed", KafkaSpout(kafka_bootstrap, [topic]))
             .each(["value"], SplitWithLength(), ["word", "length"])
             .filter(LongWords())
             .peek(record)
             .project(["word", "length"]))
    sink = words.collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    handle.awaitTermination(120)
    handle.stop()

    assert sorted((t["word"], t["length"]) for t in sink.tuples) == [
        ("brown", 5), ("jumps", 5), ("lazy", 4), ("over", 4), ("quick", 5)]
    assert all(type(t["length"]) is int for t in sink.tuples)
    assert sorted(p.name.split("-")[0] for p in seen.iterdir()) == ["brown", "jumps", "lazy", "over", "quick"]
    assert sink.fields == ["word", "length"]


def test_a_failing_operator_names_itself_and_the_tuple(spark, kafka_bootstrap, new_topic, tmp_path):
    topic = new_topic()
    produce(kafka_bootstrap, topic, [(None, b"fine", 0), (None, b"boom goes the record", 0)])
    topology = TridentTopology()
    topology.newStream("failing", KafkaSpout(kafka_bootstrap, [topic])).each(
        ["value"], Explode(), ["out"]).name("explode").collect()
    handle = topology.run(checkpoint_location=tmp_path / "ckpt", trigger="available_now", spark=spark)
    try:
        with pytest.raises(OperatorError) as info:
            handle.awaitTermination(120)
    finally:
        handle.stop()
    message = str(info.value)
    assert "explode failed on tuple {'value': 'boom goes the record'}" in message
    assert "ValueError: cannot split this" in message and "(stream 'failing')" in message


class HoldsALock(BaseFunction):
    def __init__(self):
        self.lock = threading.Lock()  # wrong place: belongs in prepare()

    def execute(self, tuple, collector):
        collector.emit([tuple[0]])


def test_an_operation_that_cannot_be_pickled_names_itself_its_attribute_and_prepare(spark, tmp_path):
    spout = FeederBatchSpout(["word"])
    spout.feed([["cat"]])
    topology = TridentTopology()
    topology.newStream("locked", spout).each(["word"], HoldsALock(), ["same"]).name("guard").collect()
    checkpoint = tmp_path / "ckpt"
    with (pytest.raises(TopologyError) as info,
          topology.run(checkpoint_location=checkpoint, trigger="available_now", spark=spark) as handle):
        handle.awaitTermination(120)
    assert str(info.value) == (
        "guard: the operation cannot be sent to Spark's executors: its attribute self.lock holds a "
        "_thread.lock, which cannot be pickled (TypeError: cannot pickle '_thread.lock' object). Open "
        "connections, clients, locks and files in prepare(conf, context), which runs on the executor once "
        "per task, and close them in cleanup(); not in __init__, which runs on the driver (stream 'locked')")


def test_trident_spark_run_cli_runs_a_topology_file(kafka_bootstrap, new_topic, spark, tmp_path, capsys):
    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, f"line {i}".encode(), i % 2) for i in range(50)])
    app = tmp_path / "app.py"
    app.write_text(textwrap.dedent(f"""
        from trident_spark import TopologyError, TridentTopology
        from trident_spark.operation import BaseFunction
        from trident_spark.spout import FeederBatchSpout, KafkaSpout

        class Upper(BaseFunction):  # defined in the user's file: shipped to executors by value
            def execute(self, tuple, collector):
                collector.emit([tuple.getString(0).upper()])

        topology = TridentTopology()
        spout = KafkaSpout("{kafka_bootstrap}", ["{topic}"], max_offsets_per_trigger=20)
        topology.newStream("cliapp", spout).each(["value"], Upper(), ["upper"])
    """))
    cli = Path(sys.executable).with_name("trident-spark")
    done = subprocess.run([str(cli), "run", str(app), "--available-now", "--checkpoint", str(tmp_path / "ck"),
                           "--master", "local[2]"], capture_output=True, text=True, timeout=300,
                          cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "[cliapp] batch 0: 20 rows" in done.stderr
    assert "[cliapp] batch 2: 10 rows" in done.stderr

    # --explain in this process, on the session's Spark: the run above already started the command
    # as a user does; a second driver of its own would only add a JVM start.
    capsys.readouterr()
    code = cli_main(["run", str(app), "--explain", "--master", "local[1]"])
    explained = capsys.readouterr()
    assert code == 0, explained.err[-3000:]
    assert "== query 'cliapp': spouts ['cliapp'] ==" in explained.out
    assert "each(Upper) -> ['key', 'value', 'topic', 'partition', 'offset', 'timestamp', 'upper']" \
        in explained.out
    assert "MapInArrow each_Upper" in explained.out  # the operator's name in Spark's plan
