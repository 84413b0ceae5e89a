"""`trident-spark tune --size-for RATE`: the scale model's cluster for a rate, and its bad-input errors."""

from __future__ import annotations

import json

import pytest

from trident_spark.cli.main import main
from trident_spark.cli.tune import parse_rate

CONSTANTS = {"read_records_per_s_per_partition": 100_000, "records_per_s_per_core": 20_000,
             "keys_per_s_per_store_node": 100_000, "keys_written_per_record": 0.2, "batch_fixed_ms": 200,
             "measured": "a test's numbers"}


@pytest.fixture
def constants_file(tmp_path):
    path = tmp_path / "scale-constants.json"
    path.write_text(json.dumps(CONSTANTS))
    return path


def test_size_for_prints_the_shape_the_bottleneck_and_littles_law(constants_file, capsys):
    argv = ["tune", "--size-for", "100k", "--constants", str(constants_file), "--format", "markdown"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[:5] == [
        "| resource | units | records/s per unit | records/s |",
        "|---|---:|---:|---:|",
        "| source partitions | 2 | 100,000 | 200,000 |",
        "| executor cores (binds first) | 7 | 20,000 | 140,000 |",
        "| store nodes | 1 | 500,000 | 500,000 |",
    ]
    assert ("* needed = target x T / (T - fixed) = 100,000 x 1,000 / (1,000 - 200) = 125,000 records/s "
            "(Little's Law, one batch in flight)") in out
    assert "* binds first: executor cores (7 x 20,000 = 140,000 records/s); then source partitions" in out


def test_size_for_as_json_gives_the_settings(constants_file, capsys):
    assert main(["tune", "--size-for", "100000", "--constants", str(constants_file), "--format", "json",
                 "--batch-interval-ms", "2000"]) == 0
    answer = json.loads(capsys.readouterr().out)
    assert answer["settings"] == {"source_partitions": 2, "executor_cores": 6, "store_nodes": 1,
                                  "max_offsets_per_trigger": 200_000, "trigger": "2000 milliseconds",
                                  "spark.sql.shuffle.partitions": 6}
    assert answer["binds_first"] == "executor cores"


def test_size_for_defaults_to_the_constants_measured_here(capsys):
    assert main(["tune", "--size-for", "1m"]) == 0
    out = capsys.readouterr().out
    assert "binds first:" in out
    assert "constants: bench/scale.py" in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--size-for", "fast"], "error: tune --size-for 'fast': give the records per second as a number > 0, "
                             "e.g. --size-for 250000, 250k or 1.5m"),
    (["--size-for=-5k"], "error: tune --size-for '-5k': give the records per second as a number > 0, "
                            "e.g. --size-for 250000, 250k or 1.5m"),
    (["--size-for", "1k", "--batch-interval-ms", "100"],
     "error: size_cluster(batch_interval_ms=100.0): a batch's fixed cost is 200 ms, so the interval must be "
     "longer; give batch_interval_ms above 200 (e.g. 1000)"),
])
def test_bad_input_is_one_error_line_and_status_2(argv, message, constants_file, capsys):
    assert main(["tune", *argv, "--constants", str(constants_file)]) == 2
    captured = capsys.readouterr()
    assert captured.err.strip() == message
    assert captured.out == ""


def test_a_missing_constants_file_names_it_and_says_where_constants_come_from(tmp_path, capsys):
    missing = tmp_path / "nope.json"
    assert main(["tune", "--size-for", "1k", "--constants", str(missing)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"error: {missing}: cannot read the scale constants (No such file or directory); run bench/scale.py, "
        f"or give its bench/results/scale-constants-*.json")


def test_size_for_with_a_topology_says_they_do_not_go_together(capsys):
    assert main(["tune", "app.py", "--size-for", "1k"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: tune app.py --size-for: --size-for sizes a cluster from measured constants and runs no "
        "topology; leave out app.py, or leave out --size-for to sweep it")


def test_tune_without_a_topology_or_a_rate_says_what_to_give(capsys):
    assert main(["tune"]) == 2
    assert capsys.readouterr().err.strip() == (
        "error: tune: give FILE[:ATTR] to sweep a topology's batch sizes, or --size-for RATE to size a "
        "cluster (trident-spark tune --help)")


def test_parse_rate():
    assert (parse_rate("250k"), parse_rate("1.5M"), parse_rate("1200")) == (250_000.0, 1_500_000.0, 1200.0)
