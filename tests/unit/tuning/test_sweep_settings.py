"""The sweep's pure parts: sizes, the slice, the spouts' settings per run and scratch states."""

from __future__ import annotations

import pytest

from trident_spark import TridentTopology
from trident_spark.builtin import Count, MapGet
from trident_spark.spout import KafkaSpout
from trident_spark.state import RedisState, SqliteState
from trident_spark.tuning.sweep import (
    StreamSlice,
    SweepError,
    auto_sizes,
    bound_slice,
    parse_size,
    parse_sweep,
    scratch_states,
    size_label,
    sized_config,
    sized_spouts,
)


def test_sizes_as_a_list_a_geometric_range_or_auto():
    assert parse_sweep("16k, 32k,64k") == [16384, 32768, 65536]
    assert [size_label(s) for s in parse_sweep("8k..1m:8")] == \
        ["8k", "16k", "32k", "64k", "128k", "256k", "512k", "1m"]
    assert [size_label(s) for s in parse_sweep("16k..128k")] == ["16k", "32k", "64k", "128k"]
    assert parse_sweep("auto") is None
    assert parse_size("1.5m") == 1572864 and parse_size("4096") == 4096


@pytest.mark.parametrize("text, message", [
    ("16q", "'16q' is not a size"),
    ("1m..8k", "the range must grow"),
    ("8k..1m:1", "at least 2 sizes"),
    (",", "give sizes"),
])
def test_bad_sizes_say_what_to_write(text, message):
    with pytest.raises(SweepError, match=message):
        parse_sweep(text)


def test_auto_sizes_leave_at_least_four_batches_in_the_slice():
    sizes = auto_sizes(partition_bytes=1_000_000, record_bytes=100)
    assert max(sizes) * 4 <= 1_000_000
    assert [size_label(s) for s in sizes] == ["1k", "2k", "4k", "8k", "16k", "32k", "64k", "128k"]
    with pytest.raises(SweepError, match="too few for a sweep"):
        auto_sizes(partition_bytes=5_000, record_bytes=100)


def test_the_slice_spreads_records_over_partitions_and_short_ones_give_way():
    start = {("t", 0): 10, ("t", 1): 0, ("t", 2): 0}
    high = {("t", 0): 1010, ("t", 1): 50, ("t", 2): 1000}
    assert bound_slice(start, high, None) == high
    assert bound_slice(start, high, 900) == {("t", 0): 435, ("t", 1): 50, ("t", 2): 425}
    assert bound_slice(start, high, 2) == {("t", 0): 11, ("t", 1): 1, ("t", 2): 0}
    assert bound_slice(start, high, 10**9) == high


def test_a_run_reads_at_most_max_batches_of_its_size():
    part = StreamSlice("s", {("t", 0): 100, ("t", 1): 0}, {("t", 0): 1100, ("t", 1): 90},
                       {("t", 0): 100.0, ("t", 1): 200.0})
    assert part.records == 1090
    # 1k per partition: 10 records of 100 B, 5 of 200 B per batch; 4 batches
    assert part.run_end(1024, 4) == {("t", 0): 140, ("t", 1): 20}
    assert part.run_end(1 << 20, 4) == part.end


def spout(**options):
    return KafkaSpout("127.0.0.1:9092", ["events"], max_fetch_bytes=1_000_000, max_offsets_per_trigger=500,
                      **options)


def test_each_run_reads_its_slice_with_max_fetch_bytes_as_the_only_limit():
    config = sized_config(spout().config, 16384, {("events", 0): 5, ("events", 1): 0},
                          {("events", 0): 905, ("events", 1): 600})
    assert config.max_fetch_bytes == 16384
    assert config.max_offsets_per_trigger is None and config.min_offsets_per_trigger is None
    assert config.starting_offsets == {"events": {"0": 5, "1": 0}}
    assert config.ending_offsets == {"events": {"0": 905, "1": 600}}
    assert config.adaptive_target_ms is None


def test_the_users_spouts_come_back_after_a_run():
    topology = TridentTopology()
    original = spout()
    topology.newStream("events", original).filter(lambda t: True)
    node = topology._spouts["events"]
    part = StreamSlice("events", {("events", 0): 0}, {("events", 0): 50}, {("events", 0): 10.0})
    with sized_spouts([node], [part], {"events": {("events", 0): 40}}, 2048):
        assert node.spout is not original
        assert node.spout.config.ending_offsets == {"events": {"0": 40}}
    assert node.spout is original
    assert original.config.max_offsets_per_trigger == 500


def counting_topology(state):
    topology = TridentTopology()
    words = topology.newStream("events", spout())
    counts = words.groupBy(["key"]).persistentAggregate(state, Count(), ["count"])
    words.stateQuery(counts, ["key"], MapGet(), ["count"])
    return topology, counts


def test_a_written_sqlite_state_becomes_an_empty_scratch_file_per_run(tmp_path):
    user = SqliteState.opaque(path=str(tmp_path / "user.db"), table="counts")
    topology, counts = counting_topology(user)
    with scratch_states(topology, tmp_path / "run", "tune-1", allow_writes=False) as names:
        assert counts.factory is counts.node.state  # persist and stateQuery see the same scratch copy
        assert counts.factory.path == str(tmp_path / "run" / "state" / "tune-1-0.db")
        assert counts.factory.table == "counts" and counts.factory.state_type == user.state_type
        assert names == [counts.factory.url]
    assert counts.factory is user and counts.node.state is user
    assert not (tmp_path / "user.db").exists()


def test_a_redis_state_needs_allow_state_writes_and_then_gets_a_scratch_prefix(tmp_path):
    user = RedisState.opaque(url="redis://127.0.0.1:6379/0", key_prefix="wc")
    topology, counts = counting_topology(user)
    with pytest.raises(SweepError, match=r"writes state redis://127\.0\.0\.1:6379/0.*--allow-state-writes"), \
            scratch_states(topology, tmp_path, "tune-1", allow_writes=False):
        pass
    assert counts.factory is user
    with scratch_states(topology, tmp_path, "tune-1", allow_writes=True):
        assert counts.factory.key_prefix == "wc-tune-1-0"
    assert counts.factory is user


def test_repeats_pool_their_measured_batches():
    from trident_spark.tuning.report import size_stats
    from trident_spark.tuning.sweep import RunResult

    def run(repeat, durations):
        batches = [{"txid": i, "rows": 100, "duration_ms": d, "durations_ms": {}, "stages": []}
                   for i, d in enumerate(durations)]
        return RunResult(4096, repeat, 100 * len(durations), 10.0, "/tmp/c", batches)

    stats = size_stats(4096, [run(0, [5000, 400, 420]), run(1, [4000, 380, 600])])
    assert (stats.runs, stats.batches, stats.measured_batches) == (2, 6, 4)
    assert (stats.latency_p50_ms, stats.latency_p95_ms) == (400, 600)
    assert stats.throughput == pytest.approx(400 / 1800 * 1000)
    assert stats.wall_throughput == pytest.approx(600 / 20.0)


@pytest.mark.parametrize("argv, message", [
    (["--sweep", "16q"], "'16q' is not a size"),
    (["--from", "events:0=5"], "--from 'events:0=5': give JSON offsets"),
])
def test_tune_rejects_bad_options_before_starting_spark(argv, message, capsys):
    from trident_spark.cli.main import main

    assert main(["tune", "app.py", *argv]) == 2
    assert message in capsys.readouterr().err


def test_only_python_kafka_spouts_can_be_swept():
    from trident_spark.spout import FeederBatchSpout
    from trident_spark.tuning.sweep import kafka_spouts

    topology = TridentTopology()
    topology.newStream("jvm", KafkaSpout("127.0.0.1:9092", ["events"], engine="jvm"))
    with pytest.raises(SweepError, match="stream 'jvm' reads Kafka with engine='jvm'"):
        kafka_spouts(topology)
    topology = TridentTopology()
    topology.newStream("fed", FeederBatchSpout(["word"]))
    with pytest.raises(SweepError, match=r"stream 'fed' \(FeederBatchSpout\) does not read a KafkaSpout"):
        kafka_spouts(topology)
