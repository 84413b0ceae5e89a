"""The scale model: records/s = min of three terms, the principal bottleneck, Little's Law for the batch."""

from __future__ import annotations

import doctest
import importlib
import json

import pytest

from trident_spark.errors import InvalidArgumentError
from trident_spark.tuning.scale_model import MEASURED_HERE, ClusterShape, ScaleConstants, predict

CONSTANTS = ScaleConstants(read_records_per_s_per_partition=100_000, records_per_s_per_core=20_000,
                           keys_per_s_per_store_node=100_000, keys_written_per_record=0.2, batch_fixed_ms=250)


def test_the_smallest_term_binds_and_the_next_one_says_where_adding_stops_helping():
    p = predict(ClusterShape(source_partitions=4, executor_cores=8, store_nodes=1), CONSTANTS,
                batch_records=40_000)
    assert [(t.name, t.units, t.records_per_s) for t in p.terms] == [
        ("read", 4, 400_000.0), ("operations", 8, 160_000.0), ("store", 1, 500_000.0)]
    assert p.binding.resource == "executor cores"
    assert p.capacity_records_per_s == 160_000.0
    assert p.next_binding is not None and p.next_binding.resource == "source partitions"
    assert p.helps_up_to_units == 20  # 20 cores x 20,000 = the 4 partitions' 400,000


def test_a_full_batch_pays_the_fixed_cost_then_its_records():
    p = predict(ClusterShape(source_partitions=4, executor_cores=8, store_nodes=1), CONSTANTS,
                batch_records=40_000)
    assert p.batch_ms == 250 + 40_000 / 160_000 * 1000 == 500.0
    assert p.records_per_s == 80_000.0
    assert p.latency_ms == 1000.0


def test_a_batch_interval_holds_what_the_capacity_does_in_the_time_left_after_the_fixed_cost():
    p = predict(ClusterShape(source_partitions=2, executor_cores=2, store_nodes=1), CONSTANTS,
                batch_interval_ms=1000)
    assert p.capacity_records_per_s == 40_000.0
    assert p.batch_records == 30_000.0  # (1000 - 250) ms x 40,000 records/s
    assert p.batch_ms == 1000.0
    assert p.records_per_s == 30_000.0


def test_the_store_binds_when_keys_per_record_are_many():
    heavy = ScaleConstants(read_records_per_s_per_partition=100_000, records_per_s_per_core=20_000,
                           keys_per_s_per_store_node=100_000, keys_written_per_record=10, batch_fixed_ms=0)
    p = predict(ClusterShape(source_partitions=64, executor_cores=64, store_nodes=3), heavy,
                batch_records=1000)
    assert p.binding.resource == "store nodes"
    assert p.capacity_records_per_s == 30_000.0
    assert p.next_binding is not None and p.next_binding.resource == "executor cores"
    assert p.helps_up_to_units == 128  # store nodes: 128 x 10,000 = the 64 cores' 1,280,000


def test_markdown_marks_the_bottleneck_and_states_littles_law():
    text = predict(ClusterShape(source_partitions=4, executor_cores=8, store_nodes=1), CONSTANTS,
                   batch_records=40_000).to_markdown()
    assert "| operations **(bottleneck)** | executor cores | 8 | 20,000 | 160,000 |" in text
    assert "adding executor cores helps up to 20; then source partitions bind at 400,000 records/s" in text
    assert ("a batch of 40,000 records takes 250 ms + 40,000 / 160,000 records/s = 500 ms: 80,000 records/s, "
            "latency up to 1,000 ms") in text


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"batch_records": 10, "batch_interval_ms": 1000},
     "predict(): give batch_records= or batch_interval_ms=, not both"),
    ({"batch_interval_ms": 200},
     "predict(batch_interval_ms=200): a batch's fixed cost is 250 ms, so an interval "
     "this short leaves no time for records; give batch_interval_ms above 250"),
    ({"batch_records": 0}, "predict(batch_records=0): must be a number > 0"),
])
def test_bad_batch_arguments_say_what_to_give(kwargs, message):
    with pytest.raises(InvalidArgumentError) as raised:
        predict(ClusterShape(source_partitions=1, executor_cores=1, store_nodes=1), CONSTANTS, **kwargs)
    assert str(raised.value) == message


def test_constants_and_shapes_are_checked():
    with pytest.raises(InvalidArgumentError,
                       match=r"^ScaleConstants\(records_per_s_per_core=0\): must be a number > 0$"):
        ScaleConstants(read_records_per_s_per_partition=1, records_per_s_per_core=0,
                       keys_per_s_per_store_node=1, keys_written_per_record=1, batch_fixed_ms=0)
    with pytest.raises(InvalidArgumentError,
                       match=r"^ClusterShape\(store_nodes=1.5\): must be a whole number >= 1$"):
        ClusterShape(source_partitions=1, executor_cores=1, store_nodes=1.5)  # type: ignore[arg-type]


def test_constants_round_trip_through_the_bench_file(tmp_path):
    path = tmp_path / "scale-constants.json"
    path.write_text(json.dumps(CONSTANTS.to_dict() | {"how": {"batch_fixed_ms": "tiny run"}}))
    assert ScaleConstants.from_file(path) == CONSTANTS
    whole = tmp_path / "scale.json"
    whole.write_text(json.dumps({"setup": {}, "constants": CONSTANTS.to_dict()}))
    assert ScaleConstants.from_file(whole) == CONSTANTS


def test_a_constants_file_that_lacks_a_constant_names_it_and_the_file(tmp_path):
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"records_per_s_per_core": 5}))
    with pytest.raises(InvalidArgumentError) as raised:
        ScaleConstants.from_file(path)
    assert str(raised.value) == (
        f"{path}: the scale constants lack read_records_per_s_per_partition, keys_per_s_per_store_node, "
        f"keys_written_per_record, batch_fixed_ms; give a file written by bench/scale.py "
        f"(bench/results/scale-constants-*.json) or every constant")


def test_the_constants_measured_here_are_valid_and_say_where_they_come_from():
    assert MEASURED_HERE.measured.startswith("bench/scale.py")
    assert MEASURED_HERE.records_per_s_per_store_node > MEASURED_HERE.records_per_s_per_core


def test_docstring_examples():
    result = doctest.testmod(importlib.import_module("trident_spark.tuning.scale_model"))
    assert result.failed == 0 and result.attempted >= 10
