"""Each storm-starter port runs with ``trident-spark run FILE --available-now`` (in this process, on
the session's Spark): the command loads the file alone, as a user runs it, and runs its
``topology`` (or the builder named after the colon) to the end of one pass over its spout.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from trident_spark.cli.main import main

pytestmark = pytest.mark.integration

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "storm_starter"


def run(target: str, checkpoint: Path, capsys: pytest.CaptureFixture[str], rows: bool = False) -> list[str]:
    """``trident-spark run`` the example; the batches it reports, as ``[stream] batch N`` (with
    ``rows``: ``[stream] batch N: R rows``)."""
    code = main(["run", str(EXAMPLES / target), "--available-now", "--checkpoint", str(checkpoint)])
    err = capsys.readouterr().err
    assert code == 0, err[-3000:]
    return re.findall(r"\[[\w-]+\] batch \d+: \d+ rows" if rows else r"\[[\w-]+\] batch \d+", err)


@pytest.mark.parametrize(("target", "batches"), [
    # The DRPC stream is answered in the driver (run(drpc_path="auto")): no Spark batch of its own.
    ("trident_word_count.py", ["[spout1] batch 0", "[spout1] batch 1"]),
    ("trident_map_example.py", ["[spout1] batch 0", "[spout1] batch 1"]),
    ("trident_min_max_of_devices_topology.py", [f"[devicegen-spout] batch {k}" for k in range(10)]),
    ("trident_min_max_operations_topology.py", ["[spout1] batch 0", "[spout1] batch 1"]),
    ("trident_min_max_operations_topology.py:buildIdsTopology",
     [f"[numgen-spout] batch {k}" for k in range(10)]),
])
def test_the_example_runs_one_pass(spark: Any, target: str, batches: list[str], tmp_path: Path,
                                   capsys: pytest.CaptureFixture[str]) -> None:
    assert sorted(run(target, tmp_path / "ckpt", capsys)) == sorted(batches)  # queries run side by side


@pytest.mark.parametrize("target", [
    "trident_min_max_of_vehicles_topology.py",
    "trident_min_max_of_devices_topology.py:buildVehiclesTopology",
    "trident_min_max_operations_topology.py:buildVehiclesTopology",
])
def test_the_vehicles_examples_run_one_pass(spark: Any, target: str, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert run(target, tmp_path / "ckpt", capsys) == ["[spout1] batch 0", "[spout1] batch 1"]


def test_the_kafka_word_count_runs_from_the_latest_offset(spark: Any, kafka_bootstrap: str, tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    from trident_spark.local.kafka import create_topic
    from trident_spark.state import memory

    create_topic(kafka_bootstrap, "test", partitions=1, exist_ok=True)
    monkeypatch.setenv("KAFKA_BOOTSTRAP_SERVERS", kafka_bootstrap)
    # The example counts into MemoryState "wordCounter", which lives as long as this process (as
    # Storm's in-memory state lives as long as the LocalCluster): this run's goes when it ends, so
    # that other tests that run the example start from an empty state.
    monkeypatch.setattr(memory, "_STORES", {})
    # from the latest offset there is nothing to read now: the run reads nothing and ends
    assert run("trident_kafka_word_count.py", tmp_path / "ckpt", capsys, rows=True) in (
        [], ["[spout1] batch 0: 0 rows"])
