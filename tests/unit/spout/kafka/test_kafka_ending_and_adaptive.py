"""The driver's planning with ending_offsets and adaptive batching, on a stub broker.

The stub holds two partitions of fixed-size records; each test drives
``latestOffset`` the way Spark does (the previous batch's document as ``start``).
"""

from __future__ import annotations

import dataclasses

import pytest
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadMaxBytes

from trident_spark.spout import KafkaSpout
from trident_spark.spout.kafka.adaptive import INITIAL_LIMIT_BYTES, write_feedback
from trident_spark.spout.kafka.client import ProbeResult
from trident_spark.spout.kafka.config import DEFAULT_ADAPTIVE_BOUND_BYTES, KafkaSpoutConfig
from trident_spark.spout.kafka.offsets import PartitionSample
from trident_spark.spout.kafka.run import KafkaRun
from trident_spark.spout.kafka.source import KafkaStreamReader

BROKER = "127.0.0.1:9092"
RECORD = 100


class StubBroker:
    """Topic ``t``: partition p holds offsets [0, ends[p]) of ``RECORD``-byte records."""

    def __init__(self, ends: dict[int, int]) -> None:
        self.ends = dict(ends)

    def topic_partitions(self):
        return [("t", p) for p in sorted(self.ends)]

    def earliest_offsets(self, partitions):
        return {tp: 0 for tp in partitions}

    def probe(self, starts, sample_bytes):
        out = {}
        for tp, start in starts.items():
            end = self.ends[tp[1]]
            count = min(end - start, max(1, sample_bytes // RECORD))
            offsets = list(range(start, start + count))
            sample = PartitionSample(offsets, [RECORD] * count, complete=start + count >= end)
            out[tp] = ProbeResult(end, sample)
        return out

    def close(self):
        pass


def reader(broker: StubBroker, feedback_dir: str | None = None, **options) -> KafkaStreamReader:
    made = KafkaStreamReader(KafkaSpoutConfig(BROKER, topics=("t",), **options), None,  # type: ignore[arg-type]
                             KafkaRun(feedback_dir))
    made._client = broker  # type: ignore[assignment]
    return made


def run_batches(made: KafkaStreamReader, start: dict, n: int, limit=None) -> list[dict]:
    """Plan up to ``n`` batches as Spark would, each from the last one's document."""
    limit = limit or made.getDefaultReadLimit()
    documents = []
    for _ in range(n):
        end = made.latestOffset(start, limit)
        if end is start:
            break
        documents.append(end)
        start = end
    made.stop()
    return documents


# --- ending_offsets ---------------------------------------------------------------------


def test_ending_offsets_mapping_stops_every_partition_at_its_end():
    broker = StubBroker({0: 1000, 1: 1000})
    made = reader(broker, ending_offsets={"t": {"0": 250, "1": -1}}, max_fetch_bytes=10_000)
    initial = made.initialOffset()
    assert initial["until"] == {"t": {"0": 250, "1": 1000}}  # -1: the high watermark now
    broker.ends = {0: 2000, 1: 2000}  # records arriving later are past the end
    documents = run_batches(made, initial, 50)
    assert [d["offsets"]["t"] for d in documents] == [
        {"0": 100, "1": 100}, {"0": 200, "1": 200}, {"0": 250, "1": 300},
        *[{"0": 250, "1": o} for o in range(400, 1001, 100)],
    ]
    assert all(d["until"] == {"t": {"0": 250, "1": 1000}} for d in documents)


def test_ending_offsets_latest_is_the_high_watermark_when_the_query_starts():
    broker = StubBroker({0: 30, 1: 20})
    made = reader(broker, ending_offsets="latest")
    initial = made.initialOffset()
    broker.ends = {0: 60, 1: 60}
    documents = run_batches(made, initial, 5)
    assert [d["offsets"] for d in documents] == [{"t": {"0": 30, "1": 20}}]
    assert documents[0]["batch"]["limited_by"] == "available" and documents[0]["batch"]["rows"] == 50


def test_a_restarted_query_keeps_the_logged_end_not_a_new_latest():
    broker = StubBroker({0: 30})
    first = reader(broker, ending_offsets="latest", max_fetch_bytes=1000)
    batch = run_batches(first, first.initialOffset(), 1)[0]
    assert batch["offsets"] == {"t": {"0": 10}}
    broker.ends = {0: 500}
    restarted = reader(broker, ending_offsets="latest", max_fetch_bytes=1000)  # a new process
    documents = run_batches(restarted, batch, 10)
    assert documents[-1]["offsets"] == {"t": {"0": 30}} and len(documents) == 2


def test_partitions_created_after_the_start_are_not_read():
    broker = StubBroker({0: 10})
    made = reader(broker, ending_offsets="latest")
    initial = made.initialOffset()
    broker.ends = {0: 10, 1: 50}
    documents = run_batches(made, initial, 3)
    assert len(documents) == 1 and documents[0]["batch"]["rows"] == 10
    assert documents[0]["offsets"]["t"]["1"] == 0


def test_ending_offsets_naming_a_missing_partition_fails_naming_it():
    made = reader(StubBroker({0: 10}), ending_offsets={"t": {"3": 5}})
    with pytest.raises(ValueError, match=r"KafkaSpout\(ending_offsets=\.\.\.\) names partitions that do not "
                                         r"exist on 127\.0\.0\.1:9092: t\[3\]"):
        made.initialOffset()


@pytest.mark.parametrize(("ending", "message"), [
    ("earliest", r"ending_offsets='earliest'\): use 'latest' or \{topic: \{partition: offset\}\}"),
    ({"t": {"0": -2}}, r"t\[0\] ends at -2; use an offset >= 0, or -1 for latest"),
])
def test_bad_ending_offsets(ending, message):
    with pytest.raises(ValueError, match=message):
        KafkaSpout(BROKER, ["t"], ending_offsets=ending)


def test_config_copies_carry_the_new_fields_through_json():
    spout = KafkaSpout(BROKER, ["t"], ending_offsets={"t": {0: 10}}, adaptive_target_ms=800)
    assert spout.config.ending_offsets == {"t": {"0": 10}}
    copy = dataclasses.replace(spout.config, max_fetch_bytes=5000, starting_offsets={"t": {"0": 2}},
                               ending_offsets="latest")
    again = KafkaSpoutConfig.from_json(copy.to_json())
    again_run = KafkaRun.from_json(KafkaRun("/tmp/x").to_json())
    assert again == copy
    assert (again.max_fetch_bytes, again.ending_offsets, again.adaptive_target_ms, again_run.checkpoint) == (
        5000, "latest", 800, "/tmp/x")
    with pytest.raises(ValueError, match="ending_offsets='end'"):
        dataclasses.replace(spout.config, ending_offsets="end")


def test_jvm_engine_refuses_the_python_only_options():
    with pytest.raises(ValueError, match=r"engine='jvm'.*ending_offsets=.*adaptive_target_ms="):
        KafkaSpout(BROKER, ["t"], engine="jvm", ending_offsets="latest")


# --- adaptive batching --------------------------------------------------------------------


@pytest.mark.parametrize("target", [0, -5, "1s", True])
def test_bad_adaptive_target(target):
    with pytest.raises(ValueError, match=r"adaptive_target_ms=.* must be a positive number of milliseconds"):
        KafkaSpout(BROKER, ["t"], adaptive_target_ms=target)


def test_max_fetch_bytes_alone_records_its_limit():
    made = reader(StubBroker({0: 1000}), max_fetch_bytes=2000)
    [first, *_] = run_batches(made, made.initialOffset(), 2)
    assert first["batch"]["read_limit_bytes"] == 2000 and first["batch"]["limited_by"] == "max_fetch_bytes"
    assert "adaptive" not in first["batch"]


def test_adaptive_starts_small_and_records_limit_and_reason(tmp_path):
    made = reader(StubBroker({0: 10_000, 1: 10_000}), adaptive_target_ms=1000, feedback_dir=str(tmp_path))
    assert made.getDefaultReadLimit().max_bytes == DEFAULT_ADAPTIVE_BOUND_BYTES  # type: ignore[attr-defined]
    [first] = run_batches(made, made.initialOffset(), 1)
    batch = first["batch"]
    assert batch["read_limit_bytes"] == INITIAL_LIMIT_BYTES and batch["adaptive"] is True
    assert batch["limited_by"] == "adaptive"
    assert first["offsets"] == {"t": {"0": 655, "1": 655}}  # 65536 // 100 records each
    assert batch["partition_bytes"] == 65_500
    assert batch["adapt"] == {"reason": "initial", "feedback_batch": None, "reference": None,
                              "previous": None}


def test_adaptive_follows_the_driver_feedback(tmp_path):
    made = reader(StubBroker({0: 100_000}), adaptive_target_ms=1000, feedback_dir=str(tmp_path))
    limit = ReadMaxBytes(DEFAULT_ADAPTIVE_BOUND_BYTES)
    first = made.latestOffset(made.initialOffset(), limit)
    # no feedback yet (the batch has not run): the limit holds
    assert made.latestOffset(first, limit)["batch"]["adapt"]["reason"] == "hold: no new feedback"
    write_feedback(tmp_path, 0, 250.0)  # batch 0 took a quarter of the target
    second = made.latestOffset(first, limit)
    assert second["batch"]["adapt"] == {"reason": "increase", "feedback_batch": 0, "reference": None,
                                        "previous": [65_500, 250.0]}
    assert second["batch"]["read_limit_bytes"] == 65_536 + round(0.5 * 750 * 65_500 / 250)
    # the same feedback is never used twice
    third = made.latestOffset(second, limit)
    assert third["batch"]["read_limit_bytes"] == second["batch"]["read_limit_bytes"]
    assert third["batch"]["adapt"]["reason"] == "hold: no new feedback"
    write_feedback(tmp_path, 2, 3000.0)  # three times the target: halve
    fourth = made.latestOffset(third, limit)
    made.stop()
    assert fourth["batch"]["read_limit_bytes"] == third["batch"]["partition_bytes"] // 2
    assert fourth["batch"]["adapt"]["reason"] == "decrease"


def test_the_warm_up_batch_is_not_used(tmp_path):
    made = reader(StubBroker({0: 100_000}), adaptive_target_ms=1000, feedback_dir=str(tmp_path))
    limit = ReadMaxBytes(DEFAULT_ADAPTIVE_BOUND_BYTES)
    first = made.latestOffset(made.initialOffset(), limit)
    write_feedback(tmp_path, 0, 15_000.0, warmup=True)  # Python workers starting: not the batch's cost
    second = made.latestOffset(first, limit)
    write_feedback(tmp_path, 1, 250.0)
    third = made.latestOffset(second, limit)
    made.stop()
    assert second["batch"]["read_limit_bytes"] == INITIAL_LIMIT_BYTES
    assert second["batch"]["adapt"]["reason"] == "hold: warm-up batch"
    assert second["batch"]["adapt"]["feedback_batch"] == 0
    assert third["batch"]["adapt"]["reason"] == "increase"


def test_a_batch_that_took_all_data_does_not_raise_the_limit(tmp_path):
    made = reader(StubBroker({0: 50}), adaptive_target_ms=1000, feedback_dir=str(tmp_path))
    limit = ReadMaxBytes(DEFAULT_ADAPTIVE_BOUND_BYTES)
    first = made.latestOffset(made.initialOffset(), limit)
    assert first["batch"]["limited_by"] == "available"
    made._client.ends = {0: 100_000}  # type: ignore[union-attr]
    write_feedback(tmp_path, 0, 100.0)
    second = made.latestOffset(first, limit)
    made.stop()
    assert second["batch"]["read_limit_bytes"] == INITIAL_LIMIT_BYTES
    assert second["batch"]["adapt"]["reason"] == "hold: took all data"


def test_a_restarted_planner_resumes_from_the_logged_limit(tmp_path):
    broker = StubBroker({0: 100_000})
    limit = ReadMaxBytes(DEFAULT_ADAPTIVE_BOUND_BYTES)
    first = reader(broker, adaptive_target_ms=1000, feedback_dir=str(tmp_path))
    logged = first.latestOffset(first.initialOffset(), limit)
    write_feedback(tmp_path, 0, 400.0)
    logged = first.latestOffset(logged, limit)
    first.stop()
    write_feedback(tmp_path, 1, 2000.0)
    restarted = reader(broker, adaptive_target_ms=1000, feedback_dir=str(tmp_path))  # new process
    resumed = restarted.latestOffset(logged, limit)
    restarted.stop()
    assert resumed["batch"]["read_limit_bytes"] == logged["batch"]["partition_bytes"] // 2
    assert resumed["batch"]["adapt"]["feedback_batch"] == 1


def test_adaptive_never_exceeds_max_fetch_bytes(tmp_path):
    made = reader(StubBroker({0: 100_000}), adaptive_target_ms=1000, max_fetch_bytes=80_000,
                  feedback_dir=str(tmp_path))
    limit = made.getDefaultReadLimit()
    document = made.latestOffset(made.initialOffset(), limit)
    for batch_id in range(3):
        write_feedback(tmp_path, batch_id, 10.0)
        document = made.latestOffset(document, limit)
    made.stop()
    assert document["batch"]["read_limit_bytes"] == 80_000
    assert document["batch"]["limited_by"] == "max_fetch_bytes"  # the bound, not the controller, cut it


def test_trigger_once_reads_everything_regardless(tmp_path):
    made = reader(StubBroker({0: 5000}), adaptive_target_ms=1000, feedback_dir=str(tmp_path))
    [document] = run_batches(made, made.initialOffset(), 1, limit=ReadAllAvailable())
    assert document["offsets"] == {"t": {"0": 5000}}


@pytest.mark.parametrize("option", ["starting_offsets", "ending_offsets"])
def test_an_offset_mapping_that_is_not_numbers_names_the_option_and_the_partition(option):
    expected = rf"KafkaSpout\({option}=\.\.\.\): words\[0\] -> 'x' is not a partition number and an offset"
    with pytest.raises(ValueError, match=expected + r"; write e\.g\. "):
        KafkaSpout("127.0.0.1:9092", ["words"], **{option: {"words": {0: "x"}}})
