"""Cluster sizing: the fewest partitions, cores and store nodes that keep up with a rate (Little's Law)."""

from __future__ import annotations

import doctest
import importlib

import pytest

from trident_spark.errors import InvalidArgumentError
from trident_spark.tuning.cluster_sizing import size_cluster
from trident_spark.tuning.scale_model import ScaleConstants

CONSTANTS = ScaleConstants(read_records_per_s_per_partition=100_000, records_per_s_per_core=20_000,
                           keys_per_s_per_store_node=100_000, keys_written_per_record=0.2, batch_fixed_ms=200)


def test_each_resource_gets_the_fewest_units_that_carry_the_rate_the_interval_needs():
    sizing = size_cluster(100_000, CONSTANTS, batch_interval_ms=1000)
    assert sizing.needed_records_per_s == 125_000.0  # 100,000 x 1000 / (1000 - 200)
    shape = sizing.shape
    assert (shape.source_partitions, shape.executor_cores, shape.store_nodes) == (2, 7, 1)
    assert sizing.binds_first.resource == "executor cores"
    assert sizing.batch_records == 100_000
    assert sizing.batch_ms == pytest.approx(200 + 100_000 / 140_000 * 1000)
    assert sizing.batch_ms <= sizing.batch_interval_ms
    assert sizing.max_records_per_s == 112_000.0  # 140,000 x 800 / 1000
    assert sizing.settings() == {"source_partitions": 2, "executor_cores": 7, "store_nodes": 1,
                                 "max_offsets_per_trigger": 100_000, "trigger": "1000 milliseconds",
                                 "spark.sql.shuffle.partitions": 7}


def test_a_longer_interval_spreads_the_fixed_cost_and_needs_fewer_cores():
    short = size_cluster(100_000, CONSTANTS, batch_interval_ms=400)
    long = size_cluster(100_000, CONSTANTS, batch_interval_ms=4000)
    assert short.shape.executor_cores == 10  # needed 200,000
    assert long.shape.executor_cores == 6  # needed 105,263
    assert long.latency_ms > short.latency_ms


def test_the_store_binds_first_when_records_write_many_keys():
    heavy = ScaleConstants(read_records_per_s_per_partition=100_000, records_per_s_per_core=20_000,
                           keys_per_s_per_store_node=50_000, keys_written_per_record=2, batch_fixed_ms=0)
    sizing = size_cluster(60_000, heavy)
    shape = sizing.shape
    assert (shape.source_partitions, shape.executor_cores, shape.store_nodes) == (1, 3, 3)
    # every term carries 60,000 exactly but partitions: 1 x 100,000; cores and nodes tie at 60,000
    assert sizing.binds_first.resource == "executor cores"
    assert sizing.prediction.next_binding is not None
    assert sizing.prediction.next_binding.resource == "store nodes"


def test_the_formulas_show_the_numbers():
    text = size_cluster(100_000, CONSTANTS).explain()
    assert text.splitlines()[:4] == [
        "needed = target x T / (T - fixed) = 100,000 x 1,000 / (1,000 - 200) = 125,000 records/s "
        "(Little's Law, one batch in flight)",
        "source partitions = ceil(needed / 100,000) = 2",
        "executor cores = ceil(needed / 20,000) = 7",
        "store nodes = ceil(needed / 500,000) = 1",
    ]
    assert "binds first: executor cores (7 x 20,000 = 140,000 records/s); then source partitions " \
           "(200,000 records/s)" in text


@pytest.mark.parametrize(("rate", "interval", "message"), [
    (0, 1000, "size_cluster(target_records_per_s=0): the records arriving per second must be a number > 0; "
              "give e.g. 100000"),
    (1000, 150, "size_cluster(batch_interval_ms=150): a batch's fixed cost is 200 ms, so the interval "
                "must be longer; give batch_interval_ms above 200 (e.g. 1000)"),
])
def test_bad_inputs_say_what_and_what_to_give(rate, interval, message):
    with pytest.raises(InvalidArgumentError) as raised:
        size_cluster(rate, CONSTANTS, batch_interval_ms=interval)
    assert str(raised.value) == message


def test_docstring_examples():
    result = doctest.testmod(importlib.import_module("trident_spark.tuning.cluster_sizing"))
    assert result.failed == 0 and result.attempted >= 4
