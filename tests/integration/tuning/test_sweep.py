"""``trident-spark tune`` on a real topic (Kafka broker + Spark local[2]): the sweep finds the knee.

The topology's one expensive operator costs, per partition and batch, a fixed part, a part per
record, and a steep extra part per record above a limit of K records -- the shape of a stage
that stops scaling (a cache that spills, a store that throttles). The knee must be the largest
size whose partition batches stay under K.
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from trident_spark.cli.main import main
from trident_spark.local.kafka import produce
from trident_spark.state import SqliteState, open_state

pytestmark = pytest.mark.integration

RECORD_BYTES = 200
PARTITIONS = 2
PER_PARTITION = 700
LIMIT = 100  # records per partition batch above which the steep cost applies
SIZES = ["2k", "4k", "8k", "16k", "32k"]
MAX_BATCHES = 3

TOPOLOGY = '''
"""A topology for the sweep test: per partition batch, {fixed} ms + {per_record} ms per record,
and {steep} ms more per record above {limit} records."""
import time

from trident_spark import TridentTopology
from trident_spark.builtin import Sum
from trident_spark.operation import Aggregator
from trident_spark.spout import KafkaSpout
from trident_spark.state import SqliteState


class CostlyCount(Aggregator):
    def init(self, batch_id, collector):
        return [0]

    def aggregate(self, state, tuple, collector):
        state[0] += 1

    def complete(self, state, collector):
        n = state[0]
        time.sleep(({fixed} + {per_record} * n + {steep} * max(0, n - {limit})) / 1000)
        collector.emit([n])


topology = TridentTopology()
(topology.newStream("load", KafkaSpout({bootstrap!r}, [{topic!r}], max_fetch_bytes=1_000_000))
 .partitionAggregate(["value"], CostlyCount(), ["n:bigint"]).name("costly")
 .persistentAggregate(SqliteState.opaque(path={state!r}, table="totals"), ["n"], Sum(), ["total"]))
'''


def test_tune_finds_the_size_just_below_the_limit_and_writes_the_report(
        spark, kafka_bootstrap, new_topic, tmp_path, capsys):
    topic = new_topic(partitions=PARTITIONS)
    produce(kafka_bootstrap, topic, [(None, f"{i:06d}".ljust(RECORD_BYTES, "x").encode(), i % PARTITIONS)
                                     for i in range(PARTITIONS * PER_PARTITION)])
    user_state = tmp_path / "user-state.db"
    app = tmp_path / "costly_app.py"
    app.write_text(textwrap.dedent(TOPOLOGY.format(fixed=20, per_record=10, steep=40, limit=LIMIT,
                                                   bootstrap=kafka_bootstrap, topic=topic,
                                                   state=str(user_state))))
    out = tmp_path / "report"

    code = main(["tune", f"{app}:topology", "--sweep", ",".join(SIZES), "--max-batches", str(MAX_BATCHES),
                 "--out", str(out)])

    assert code == 0
    printed = capsys.readouterr().out.strip().splitlines()
    assert printed[-1] == str(out / "report.md")
    results = json.loads((out / "results.json").read_text())
    sizes = {s["label"]: s for s in results["sizes"]}
    print({label: (s["records_per_batch"], s["latency_p50_ms"], round(s["throughput"]), s["regime"])
           for label, s in sizes.items()})

    # Trident's rule, exactly: records per batch = partitions x (max_fetch_bytes // record bytes)
    assert [sizes[label]["records_per_batch"] for label in SIZES] == \
        [PARTITIONS * (int(label[:-1]) * 1024 // RECORD_BYTES) for label in SIZES]
    # every run read MAX_BATCHES full batches of the slice; the warm-up is not counted
    for run in results["runs"]:
        per_batch = PARTITIONS * (run["size"] // RECORD_BYTES)
        assert [b["rows"] for b in run["batches"]] == [per_batch] * MAX_BATCHES
    assert all(s["measured_batches"] == MAX_BATCHES - 1 for s in results["sizes"])

    # 16k gives 81 records per partition batch (under the limit of 100), 32k gives 163 (over it)
    knee = results["knee"]
    assert knee["label"] == "16k", knee
    assert knee["regimes"]["sharp"] == ["32k"]
    assert results["recommendation"]["kafka_spout"] == {"max_fetch_bytes": 16 * 1024,
                                                        "max_offsets_per_trigger": 162}

    # the report shows the measured numbers
    report = (out / "report.md").read_text()
    assert "**Knee: 16k**" in report
    for s in results["sizes"]:
        row = next(line for line in report.splitlines() if line.startswith(f"| {s['label']} "))
        for number in (s["records_per_batch"], s["latency_p50_ms"], s["latency_p95_ms"], s["throughput"]):
            assert f"{number:,.0f}" in row, (number, row)
    assert "max_fetch_bytes=16384, max_offsets_per_trigger=162" in report
    for name in ("throughput_latency.png", "stage_breakdown.png"):
        data = (out / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000, name

    # the user's state was never written: each run counted into its own scratch SQLite file
    assert not user_state.exists()
    assert len(results["scratch_states"]) == len(SIZES)
    assert all(str(out) in name for name in results["scratch_states"])
    for run in results["runs"]:
        scratch = next(Path(run["checkpoint"]).parent.glob("state/*.db"))
        with open_state(SqliteState.opaque(path=str(scratch), table="totals")) as store:
            totals = [t[-1] for t in store.getTuples()]
        assert totals == [sum(b["rows"] for b in run["batches"])]
