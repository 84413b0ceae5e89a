"""plan(): the tuning notes' variable sheet, from measured costs to settings, with the formulas shown."""

from __future__ import annotations

import doctest
import importlib
import inspect
import math
import subprocess
import sys

import pytest

from trident_spark.durations import parse_seconds
from trident_spark.spout.kafka.spout import KafkaSpout
from trident_spark.state import MemoryState
from trident_spark.tuning import PlanInputs, TuningPlan, plan, plan_inputs

WORKED = {"kafka_partitions": 16, "record_bytes": 1000, "per_record_ms": 8, "target_batch_ms": 800,
          "cores": 16}

WORKED_EXPLAIN = """\
Tuning plan for 16 Kafka partitions, 1,000-byte records, 8 ms per record in the expensive stage, \
800 ms target batch, 16 cores
setting                  value             formula
parallelism              16                cores = 16
records_per_batch        1,600             target_batch_ms / per_record_ms x parallelism = \
800 / 8 x 16 = 1,600
max_offsets_per_trigger  1,600             records_per_batch = 1,600
max_fetch_bytes          100,000           records_per_batch x record_bytes / kafka_partitions = \
1,600 x 1,000 / 16 = 100,000
trigger                  800 milliseconds  target_batch_ms = 800 ms
stage_partitions         16                parallelism = 16 (one task per core: \
spark.sql.shuffle.partitions, parallelismHint(16) on the expensive stage)
expected_batch_ms        800 ms            records_per_batch / parallelism x per_record_ms = \
1,600 / 16 x 8 = 800
throughput               2,000 records/s   records_per_batch / batch_seconds = 1,600 / 0.8 = \
2,000 records/s (Little's Law, one batch in flight)"""


def worked(**changes):
    return plan(**{**WORKED, **changes})


# -- the worked numbers ------------------------------------------------------------------------


def test_worked_example_sizes_the_batch_and_the_fetch():
    p = worked()
    assert isinstance(p, TuningPlan)
    assert p.parallelism == 16
    assert p.records_per_batch == 1600
    assert p.max_offsets_per_trigger == 1600
    assert p.max_fetch_bytes == 100_000
    assert (p.trigger_ms, p.trigger) == (800, "800 milliseconds")
    assert p.stage_partitions == 16
    assert p.min_partitions is None
    assert p.expected_batch_ms == 800.0
    assert p.warnings == ()


def test_worked_example_formulas_show_the_numbers():
    f = worked().formulas
    assert f["records_per_batch"] == \
        "records_per_batch = target_batch_ms / per_record_ms x parallelism = 800 / 8 x 16 = 1,600"
    assert f["max_fetch_bytes"] == ("max_fetch_bytes = records_per_batch x record_bytes / kafka_partitions"
                                    " = 1,600 x 1,000 / 16 = 100,000")
    assert f["max_offsets_per_trigger"] == "max_offsets_per_trigger = records_per_batch = 1,600"
    assert f["trigger"] == "trigger = target_batch_ms = 800 ms"
    assert f["parallelism"] == "parallelism = cores = 16"
    assert f["throughput"].startswith("throughput = records_per_batch / batch_seconds = 1,600 / 0.8 = 2,000")
    assert list(f) == ["parallelism", "records_per_batch", "max_offsets_per_trigger", "max_fetch_bytes",
                       "trigger", "stage_partitions", "expected_batch_ms", "throughput"]


def test_littles_law_throughput_is_records_in_flight_over_batch_seconds():
    p = worked()
    assert p.throughput == 2000.0  # 1,600 records / 0.8 s
    assert p.keeps_up is None and p.parallelism_needed is None


def test_explain_for_the_worked_numbers():
    assert worked().explain() == WORKED_EXPLAIN


def test_markdown_table_for_the_worked_numbers():
    lines = worked().to_markdown().splitlines()
    assert lines[2:4] == ["| setting | value | formula |", "|---|---|---|"]
    assert "| records_per_batch | 1,600 | `target_batch_ms / per_record_ms x parallelism = 800 / 8 x 16 = " \
           "1,600` |" in lines
    assert "| max_fetch_bytes | 100,000 | `records_per_batch x record_bytes / kafka_partitions = " \
           "1,600 x 1,000 / 16 = 100,000` |" in lines
    assert "**Warnings**" not in lines


def test_markdown_lists_the_warnings():
    text = worked(kafka_partitions=8).to_markdown()
    assert "**Warnings**" in text
    assert "* 8 Kafka partitions for 16 cores" in text


def test_executors_times_cores_per_executor():
    p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800,
             executors=4, cores_per_executor=4)
    assert p.parallelism == 16 and p.records_per_batch == 1600
    assert p.formulas["parallelism"] == "parallelism = executors x cores_per_executor = 4 x 4 = 16"
    assert worked(executors=4, cores_per_executor=4).parallelism == 16  # agreeing numbers are fine


# -- keeping up ------------------------------------------------------------------------------


def test_keeps_up_with_a_slower_input_rate():
    p = worked(input_records_per_second=1500)
    assert p.keeps_up is True
    assert p.parallelism_needed == 12  # 1,500 records/s x 8 ms = 12 core-seconds per second
    assert p.formulas["keeps_up"] == \
        "keeps_up = throughput >= input_records_per_second = 2,000 >= 1,500 (75% busy)"
    assert p.formulas["parallelism_needed"] == \
        ("parallelism_needed = ceil(input_records_per_second x per_record_ms / 1000) = "
         "ceil(1,500 x 8 / 1000) = 12")
    assert p.warnings == ()


def test_falling_behind_says_how_many_cores_would_keep_up():
    p = worked(input_records_per_second=3000)
    assert p.keeps_up is False
    assert p.parallelism_needed == 24
    assert worked(cores=24, kafka_partitions=24, input_records_per_second=3000).keeps_up is True
    assert worked(cores=23, kafka_partitions=23, input_records_per_second=3000).keeps_up is False
    (warning,) = p.warnings
    assert warning.startswith("the plan does not keep up: 2,000 records/s processed, 3,000 arriving, "
                              "so the backlog grows by 1,000 records/s; give it 24 cores (now 16)")
    assert "KafkaSpout(min_partitions=24)" in warning


def test_overhead_raises_the_cores_needed():
    # 700 of every 800 ms go to records: 3,000/s x 8 ms x 800/700 = 27.4 -> 28 cores
    p = worked(batch_overhead_ms=100, input_records_per_second=3000)
    assert p.parallelism_needed == 28
    assert p.formulas["parallelism_needed"].endswith(
        "= ceil(3,000 x 8 / 1000 x 800 / 700) = 28")


def test_keeping_up_with_little_room_warns():
    p = worked(input_records_per_second=1900)
    assert p.keeps_up is True and p.parallelism_needed == 16
    (warning,) = p.warnings
    assert warning.startswith("the plan keeps up with little room: 95% busy")
    assert "19 cores would keep it near 80%" in warning


# -- rounding --------------------------------------------------------------------------------


def test_records_per_batch_is_floored_to_whole_records():
    p = worked(per_record_ms=7)
    assert p.records_per_batch == 1828  # 800 / 7 x 16 = 1,828.57
    assert p.formulas["records_per_batch"].endswith(
        "= 800 / 7 x 16 = 1,828.57 -> 1,828 (floored to whole records)")
    assert p.max_fetch_bytes == 114_250  # 1,828 x 1,000 / 16
    assert p.expected_batch_ms <= 800


def test_max_fetch_bytes_is_rounded_up_to_whole_bytes():
    p = worked(kafka_partitions=12, cores=12)
    assert p.records_per_batch == 1200
    assert p.max_fetch_bytes == 100_000
    p = worked(kafka_partitions=48)
    assert p.max_fetch_bytes == 33_334  # 1,600 x 1,000 / 48 = 33,333.33
    assert p.formulas["max_fetch_bytes"].endswith("= 33,333.33 -> 33,334 (rounded up to whole bytes)")
    assert worked(record_bytes=1000.5).max_fetch_bytes == 100_050  # exact: no rounding shown
    assert "->" not in worked(record_bytes=1000.5).formulas["max_fetch_bytes"]


def test_trigger_is_rounded_to_whole_milliseconds():
    p = worked(target_batch_ms=800.4)
    assert (p.trigger_ms, p.trigger) == (800, "800 milliseconds")
    assert p.formulas["trigger"] == "trigger = target_batch_ms = 800.4 ms -> 800 ms (rounded to whole ms)"
    assert worked(target_batch_ms=1500).trigger == "1500 milliseconds"
    assert parse_seconds(worked().trigger) == 0.8


def test_a_record_slower_than_the_batch_gives_one_record_batches():
    p = worked(per_record_ms=2000, cores=1, kafka_partitions=1)
    assert p.records_per_batch == 1
    assert p.formulas["records_per_batch"].endswith("-> 1 (floored to whole records, at least 1)")
    assert p.expected_batch_ms == 2000
    assert p.throughput == 0.5  # one record per 2 s batch
    assert any(w.startswith("one record costs 2,000 ms of task time, more than a batch's 800 ms budget "
                            "on 1 cores") and "raise target_batch_ms to at least 2,000" in w
               for w in p.warnings)


# -- overhead, fan-out and the other stages --------------------------------------------------


def test_batch_overhead_comes_out_of_the_budget():
    p = worked(batch_overhead_ms=100)
    assert p.records_per_batch == 1400
    assert p.formulas["records_per_batch"] == ("records_per_batch = (target_batch_ms - batch_overhead_ms) / "
                                               "per_record_ms x parallelism = (800 - 100) / 8 x 16 = 1,400")
    assert p.expected_batch_ms == 800
    assert p.formulas["expected_batch_ms"] == ("expected_batch_ms = batch_overhead_ms + records_per_batch / "
                                               "parallelism x per_record_ms = 100 + 1,400 / 16 x 8 = 800")
    assert p.throughput == 1750.0


def test_fan_out_and_other_stages_add_to_the_cost_of_a_kafka_record():
    # 2 ms per word x 3 words per record + 2 ms in the other stages = 8 ms per Kafka record
    p = worked(per_record_ms=2, fan_out=3, other_stages_per_record_ms=2)
    assert p.records_per_batch == 1600
    assert p.max_fetch_bytes == 100_000
    assert p.formulas["records_per_batch"] == (
        "records_per_batch = target_batch_ms / (per_record_ms x fan_out + other_stages_per_record_ms) x "
        "parallelism = 800 / (2 x 3 + 2) x 16 = 1,600")


# -- cache and store round trips -------------------------------------------------------------


def test_cache_size_is_the_working_set_per_task():
    p = worked(working_set_keys=48_000)
    assert p.cache_size == 3000
    assert p.formulas["cache_size"] == \
        "cache_size = ceil(working_set_keys / stage_partitions) = ceil(48,000 / 16) = 3,000 (per task)"
    assert worked(distinct_keys_per_batch=1001).cache_size == 63  # rounded up: 62.56
    assert worked(distinct_keys_per_batch=1600, working_set_keys=8000).cache_size == 500
    assert worked().cache_size is None
    assert "cache_size" not in worked().settings().get("state", {})


def test_round_trip_sizes_come_from_the_store_sweet_spot():
    p = worked(store_sweet_spot_keys=100)
    assert (p.max_multi_get_batch_size, p.max_multi_put_batch_size) == (100, 100)
    assert p.formulas["max_multi_get_batch_size"] == "max_multi_get_batch_size = store_sweet_spot_keys = 100"
    assert p.warnings == ()  # 1,600 keys / 16 tasks = 100 per task: one full round trip each


def test_a_task_batch_below_the_sweet_spot_warns_with_the_target_that_fills_it():
    (warning,) = worked(store_sweet_spot_keys=1000).warnings
    assert warning.startswith("each task gets about 100 keys (one per record) per batch (1,600 / 16 "
                              "partitions), below the store's sweet spot of 1,000 keys per round trip")
    assert "a batch of 16,000 records fills one round trip per task" in warning
    assert "raise target_batch_ms to about 8,000" in warning
    (warning,) = worked(store_sweet_spot_keys=1000, distinct_keys_per_batch=800).warnings
    assert "about 50 distinct keys per batch (800 / 16 partitions)" in warning
    assert "a batch of 32,000 records" in warning and "about 16,000" in warning


# -- partitions ------------------------------------------------------------------------------


def test_fewer_kafka_partitions_than_cores_leaves_cores_idle():
    p = worked(kafka_partitions=8)
    assert p.min_partitions == 16
    assert p.max_fetch_bytes == 200_000  # 1,600 x 1,000 / 8
    (warning,) = p.warnings
    assert warning == ("8 Kafka partitions for 16 cores: the read stage runs 8 tasks and leaves 8 cores "
                       "idle; add partitions to the topic, or split the read with "
                       "KafkaSpout(min_partitions=16) and repartition before the expensive stage")
    assert p.settings()["kafka_spout"]["min_partitions"] == 16


def test_partitions_not_a_multiple_of_cores_run_in_uneven_waves():
    (warning,) = worked(kafka_partitions=24).warnings
    assert warning.startswith("24 Kafka partitions on 16 cores: the read stage runs in 2 waves with 8 cores "
                              "idle in the last")
    assert worked(kafka_partitions=32).warnings == ()


def test_a_fetch_smaller_than_one_record_warns():
    p = worked(per_record_ms=80, kafka_partitions=256)  # 160 records over 256 partitions
    assert p.records_per_batch == 160
    assert p.max_fetch_bytes == 625
    (warning,) = p.warnings
    assert warning.startswith("each partition's share of a batch is 0.625 records (max_fetch_bytes 625 < "
                              "record_bytes 1,000)")
    assert "a batch can hold 256 records, not 160" in warning


@pytest.mark.parametrize(("shuffle", "why"), [
    (200, "200 smaller tasks per stage, each with its own store round trips"),
    (8, "8 cores idle in every shuffled stage"),
])
def test_shuffle_partitions_that_differ_from_the_plan_warn(shuffle, why):
    (warning,) = worked(shuffle_partitions=shuffle).warnings
    assert warning == (f"spark.sql.shuffle.partitions is {shuffle}, the plan wants 16: {why}; "
                       f"set spark.sql.shuffle.partitions=16")
    assert worked(shuffle_partitions=16).warnings == ()


# -- settings --------------------------------------------------------------------------------


def test_settings_for_the_worked_numbers():
    assert worked().settings() == {
        "kafka_spout": {"max_fetch_bytes": 100_000, "max_offsets_per_trigger": 1600},
        "trigger": "800 milliseconds",
        "spark_conf": {"spark.sql.shuffle.partitions": "16"},
        "parallelism_hint": 16,
    }


def test_settings_round_trip_into_kafka_spout():
    settings = worked(kafka_partitions=8).settings()["kafka_spout"]
    accepted = inspect.signature(KafkaSpout).parameters
    assert set(settings) <= set(accepted)
    spout = KafkaSpout("127.0.0.1:9092", ["events"], **settings)
    assert spout.config.max_fetch_bytes == 200_000
    assert spout.config.max_offsets_per_trigger == 1600
    assert spout.config.min_partitions == 16


def test_state_settings_round_trip_into_a_state_factory():
    settings = worked(store_sweet_spot_keys=500, working_set_keys=48_000).settings()
    assert settings["state"] == {"cache_size": 3000, "max_multi_get_batch_size": 500,
                                 "max_multi_put_batch_size": 500}
    factory = MemoryState.opaque(name="tuning-plan-settings", **settings["state"])
    assert (factory.cache_size, factory.max_multi_get_batch_size, factory.max_multi_put_batch_size) == \
        (3000, 500, 500)


def test_the_plan_is_frozen_and_keeps_its_inputs():
    p = worked()
    with pytest.raises(AttributeError):
        p.records_per_batch = 1  # type: ignore[misc]
    assert p.inputs == PlanInputs(**WORKED)
    assert plan_inputs(PlanInputs(**WORKED)) == p


# -- invalid inputs --------------------------------------------------------------------------


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("kafka_partitions", 0, "plan(kafka_partitions=0): the number of partitions of the spout's topics must "
                            "be a whole number >= 1; give e.g. kafka_partitions=16"),
    ("kafka_partitions", 1.5, "plan(kafka_partitions=1.5): "),
    ("kafka_partitions", True, "plan(kafka_partitions=True): "),
    ("record_bytes", 0, "plan(record_bytes=0): the average record size, key + value (bytes) must be a "
                        "number > 0; give e.g. record_bytes=1000"),
    ("record_bytes", "1000", "plan(record_bytes='1000'): "),
    ("record_bytes", math.nan, "plan(record_bytes=nan): "),
    ("per_record_ms", -8, "plan(per_record_ms=-8): the most expensive stage's task time per record (ms) "
                          "must be a number > 0; give e.g. per_record_ms=8"),
    ("target_batch_ms", 0, "plan(target_batch_ms=0): the batch duration to aim at (ms) must be a number "
                           "> 0; give e.g. target_batch_ms=800"),
    ("cores", 0, "plan(cores=0): the total executor cores must be a whole number >= 1; give e.g. cores=16"),
    ("batch_overhead_ms", -1, "plan(batch_overhead_ms=-1): the fixed bookkeeping time of a batch (ms) must "
                              "be a number >= 0; give e.g. batch_overhead_ms=50"),
    ("store_sweet_spot_keys", 0, "plan(store_sweet_spot_keys=0): "),
    ("input_records_per_second", 0, "plan(input_records_per_second=0): the records arriving per second "
                                    "must be a number > 0"),
    ("fan_out", 0, "plan(fan_out=0): "),
    ("shuffle_partitions", 2.0, "plan(shuffle_partitions=2.0): "),
])
def test_invalid_inputs_name_the_argument_the_value_and_what_to_give(name, value, expected):
    with pytest.raises(ValueError) as error:
        worked(**{name: value})
    assert str(error.value).startswith(expected)
    assert f"give e.g. {name}=" in str(error.value)


def test_missing_parallelism():
    inputs = {k: v for k, v in WORKED.items() if k != "cores"}
    with pytest.raises(ValueError, match=r"^plan\(\): the parallelism is missing; give cores=<total "
                                         r"executor cores> \(e.g. cores=16\)"):
        plan(**inputs)
    with pytest.raises(ValueError, match=r"^plan\(executors=4\): give cores_per_executor= too"):
        plan(**inputs, executors=4)
    with pytest.raises(ValueError, match=r"^plan\(cores_per_executor=4\): give executors= too"):
        plan(**inputs, cores_per_executor=4)


def test_inconsistent_inputs():
    with pytest.raises(ValueError, match=r"^plan\(cores=16\): executors x cores_per_executor = 2 x 4 = 8; "):
        worked(executors=2, cores_per_executor=4)
    with pytest.raises(ValueError, match=r"^plan\(batch_overhead_ms=800\): the fixed overhead leaves no "
                                         r"time for records in target_batch_ms=800; give a "
                                         r"target_batch_ms above 800"):
        worked(batch_overhead_ms=800)
    with pytest.raises(ValueError, match=r"^plan\(working_set_keys=10\): .* give working_set_keys >= 20"):
        worked(working_set_keys=10, distinct_keys_per_batch=20)


def test_arguments_are_keyword_only():
    with pytest.raises(TypeError):
        plan(16, 1000, 8, 800, 16)  # type: ignore[misc]


# -- the package -----------------------------------------------------------------------------


def test_importing_tuning_does_not_import_pyspark():
    code = "import sys, trident_spark.tuning; assert 'pyspark' not in sys.modules, 'pyspark imported'"
    subprocess.run([sys.executable, "-c", code], check=True)


def test_docstring_examples_run():
    # the function plan() shadows its module as an attribute of the package, so ask importlib
    module = importlib.import_module("trident_spark.tuning.plan")
    text = importlib.import_module("trident_spark.tuning.settings")
    package = importlib.import_module("trident_spark.tuning")
    for target in (module, text, package):
        result = doctest.testmod(target)
        assert result.failed == 0 and result.attempted > 0
