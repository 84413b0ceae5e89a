"""spark.trident.* settings: a run() argument wins, then the session's Spark conf, then run()'s default;
a value the conf cannot give is an error naming the key, the value and what is accepted."""

from __future__ import annotations

from pathlib import Path

import pytest

from trident_spark import TridentTopology
from trident_spark.errors import TopologyError
from trident_spark.runner import RunSettings, install_runner, installed_runner, is_default
from trident_spark.runtime.run_conf import CONF_SETTINGS, resolve
from trident_spark.spout import FeederBatchSpout

CHECKPOINT = Path("/tmp/wc")

#: Per key: what the conf says, what run() is given instead, and the default left without either.
CASES = [
    ("spark.trident.trigger", "trigger", "5s", "5000 milliseconds", "2 seconds", "1 second"),
    ("spark.trident.maxBatchRetries", "max_batch_retries", "7", 7, 1, 3),
    ("spark.trident.retryDelay", "retry_delay", "250ms", 0.25, 2.0, 0.5),
    ("spark.trident.outageBudget", "outage_budget", "10m", 600.0, 30.0, 180.0),
    ("spark.trident.progressHistory", "progress_history", "500", 500, 10, 100),
    ("spark.trident.drpc.server", "drpc", "127.0.0.1:0", "127.0.0.1:0", "127.0.0.1:4000", None),
    ("spark.trident.drpc.path", "drpc_path", "spark", "spark", "driver", "auto"),
]


def test_every_key_is_a_case_here():
    assert sorted(s.key for s in CONF_SETTINGS) == sorted(
        [case[0] for case in CASES] + ["spark.trident.checkpointLocation"])


@pytest.mark.parametrize(("key", "field", "text", "from_conf", "given", "default"), CASES)
def test_the_conf_fills_what_run_was_not_given(key, field, text, from_conf, given, default):
    conf = {key: text}
    assert getattr(resolve(RunSettings(CHECKPOINT), conf), field) == from_conf
    assert getattr(resolve(RunSettings(CHECKPOINT, **{field: given}), conf), field) == given
    assert getattr(resolve(RunSettings(CHECKPOINT), {}), field) == default


@pytest.mark.parametrize(("key", "field", "text", "from_conf", "given", "default"),
                         [case for case in CASES if case[5] is not None])
def test_a_value_given_equal_to_the_default_still_wins(key, field, text, from_conf, given, default):
    settings = RunSettings(CHECKPOINT, **{field: type(default)(default)})  # given, not run()'s own default
    assert getattr(resolve(settings, {key: text}), field) == default


def test_defaults_left_are_plain_values():
    resolved = resolve(RunSettings(CHECKPOINT), {})
    assert [type(v) for v in (resolved.trigger, resolved.max_batch_retries, resolved.retry_delay,
                              resolved.outage_budget, resolved.progress_history, resolved.drpc_path)] == [
        str, int, float, float, int, str]
    assert not any(is_default(v) for v in vars(resolved).values())


def test_the_checkpoint_location_comes_from_the_conf_when_run_names_none():
    def checkpoint(given, text):
        return resolve(RunSettings(given), {} if text is None else {"spark.trident.checkpointLocation": text}
                       ).checkpoint

    assert checkpoint(None, "/data/ck") == Path("/data/ck")
    assert checkpoint(None, "s3a://b/ck") == "s3a://b/ck"  # a URI stays a string
    assert checkpoint(CHECKPOINT, "/data/ck") == CHECKPOINT
    assert checkpoint(None, None) is None


@pytest.mark.parametrize(("text", "trigger"), [
    ("500ms", "500 milliseconds"), ("2 seconds", "2000 milliseconds"), ("available_now", "available_now"),
    ("once", "once"), ("none", None), ("None", None)])
def test_triggers_from_the_conf(text, trigger):
    assert resolve(RunSettings(CHECKPOINT), {"spark.trident.trigger": text}).trigger == trigger


def test_run_none_trigger_is_given_too():
    settings = RunSettings(CHECKPOINT, trigger=None)
    assert resolve(settings, {"spark.trident.trigger": "5s"}).trigger is None


@pytest.mark.parametrize(("key", "text", "accepts"), [
    ("spark.trident.maxBatchRetries", "-1", "an int >= 0 (replays of a batch that raises FailedException)"),
    ("spark.trident.progressHistory", "0", "an int >= 1 (batches of progress handle.progress keeps)"),
    ("spark.trident.trigger", "fast", "an interval such as '500ms', '2 seconds' or '1m', 'available_now', "
                                      "'once' or 'none' (each batch as soon as the last ends)"),
    ("spark.trident.outageBudget", "forever", "a duration >= 0 such as '90s', '10m' or '180' (how long a "
                                              "stream waits for a broker or store that does not answer)"),
    ("spark.trident.drpc.path", "jvm", "one of 'auto', 'spark', 'driver'"),
    ("spark.trident.drpc.server", "localhost", "'host:port' of a DRPC server ('127.0.0.1:0': one started "
                                               "on a free port)"),
    ("spark.trident.checkpointLocation", " ", "a path or a URI (file://, hdfs://, s3a://...)"),
])
def test_a_bad_value_names_the_key_the_value_and_what_is_accepted(key, text, accepts):
    with pytest.raises(TopologyError) as info:
        resolve(RunSettings(None), {key: text})
    assert str(info.value) == (
        f"Spark conf {key}={text!r}: give {accepts}; it comes from --conf, spark-defaults.conf or "
        "SparkSession.builder.config() (a value given to run() takes its place)")


def test_a_bad_value_is_not_read_when_run_was_given_the_setting():
    assert resolve(RunSettings(CHECKPOINT, max_batch_retries=2),
                   {"spark.trident.maxBatchRetries": "many"}).max_batch_retries == 2


class Recording:
    def queries(self, nodes, sinks):
        return ["words"]

    def run(self, queries, settings):
        self.settings = settings
        return "handle"


@pytest.fixture
def recording():
    before = installed_runner()
    runner = Recording()
    install_runner(runner)
    yield runner
    install_runner(before)


def test_run_tells_its_defaults_from_the_same_values_given(recording, tmp_path):
    topology = TridentTopology()
    topology.newStream("words", FeederBatchSpout(["word"])).collect()
    conf = {"spark.trident.trigger": "5s", "spark.trident.maxBatchRetries": "9"}
    topology.run(tmp_path)
    resolved = resolve(recording.settings, conf)
    assert (resolved.trigger, resolved.max_batch_retries) == ("5000 milliseconds", 9)
    topology.run(tmp_path, trigger="1 second", max_batch_retries=3)
    resolved = resolve(recording.settings, conf)
    assert (resolved.trigger, resolved.max_batch_retries) == ("1 second", 3)
    topology.run()
    assert recording.settings.checkpoint is None
