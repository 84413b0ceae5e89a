"""Spouts of your own, without Spark: how each kind's batches are made, chained and replayed,
and the errors that name the spout, the partition and the batch."""

from __future__ import annotations

import json
from typing import Any

import pytest

from trident_spark import Fields, TopologyError, TridentTopology
from trident_spark.errors import SpoutError
from trident_spark.spout import (
    IBatchSpout,
    IOpaquePartitionedTridentSpout,
    IPartitionedTridentSpout,
    Spout,
    SpoutRun,
)
from trident_spark.spout.user.batches import ReplayedMetadata, batch_maker, emit_again
from trident_spark.spout.user.spout import UserSpout
from trident_spark.spout.user.tuple_rows import TupleRows


class Part:
    def __init__(self, pid: str) -> None:
        self.pid = pid

    def getId(self) -> Any:
        return self.pid


class Lister(IPartitionedTridentSpout.Coordinator):
    def __init__(self, spout: Any) -> None:
        self.spout = spout

    def getPartitionsForBatch(self) -> Any:
        return list(self.spout.rows)

    def isReady(self, txid: int) -> bool:
        return self.spout.ready


class RowsEmitter(IPartitionedTridentSpout.Emitter):
    """Rows of each partition by offset range; metadata {"start", "end"}; records every call."""

    def __init__(self, spout: Any) -> None:
        self.spout = spout

    def getOrderedPartitions(self, all_partition_info: Any) -> Any:
        return [Part(pid) for pid in all_partition_info]

    def refreshPartitions(self, partition_responsibilities: Any) -> None:
        self.spout.calls.append(("refresh", [p.getId() for p in partition_responsibilities]))

    def emitPartitionBatchNew(self, tx: Any, collector: Any, partition: Any, last_partition_meta: Any) -> Any:
        self.spout.calls.append(("new", tx.getTransactionId(), partition.getId(), last_partition_meta))
        start = last_partition_meta["end"] if last_partition_meta else 0
        meta = self.spout.meta_of(start, len(self.spout.rows[partition.getId()]))
        self.emitPartitionBatch(tx, collector, partition, meta)
        return meta

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Any, partition_meta: Any) -> None:
        self.spout.calls.append(("again", tx.getTransactionId(), tx.getAttemptId(), partition.getId(),
                                 partition_meta))
        for value in self.spout.rows[partition.getId()][partition_meta["start"]:partition_meta["end"]]:
            collector.emit(self.spout.shape(value))


class Rows(IPartitionedTridentSpout):
    def __init__(self, rows: dict[str, list[Any]], per_batch: int = 2) -> None:
        self.rows = rows
        self.per_batch = per_batch
        self.ready = True
        self.calls: list[Any] = []

    def meta_of(self, start: int, size: int) -> Any:
        return {"start": start, "end": min(start + self.per_batch, size)}

    def shape(self, value: Any) -> list[Any]:
        return [value]

    def getCoordinator(self, conf: dict[str, Any], context: Any) -> Lister:
        return Lister(self)

    def getEmitter(self, conf: dict[str, Any], context: Any) -> RowsEmitter:
        return RowsEmitter(self)

    def getOutputFields(self) -> list[str]:
        return ["value"]


def made(spout: Any, kind: str, replayed: ReplayedMetadata | None = None) -> Any:
    return batch_maker(kind, spout, "s", list(Fields.of(spout.getOutputFields())),
                       replayed or ReplayedMetadata(None))


def tuples_of(batch: Any) -> dict[str, Any]:
    return {part.pid: part.tuples for part in batch.parts}


# --- IPartitionedTridentSpout -----------------------------------------------------------------------

def test_each_new_batch_starts_from_the_previous_batch_metadata_and_counts_txids():
    spout = Rows({"a": ["a0", "a1", "a2"], "b": ["b0"]})
    maker = made(spout, "transactional")
    start = maker.initial_offset()
    first = maker.next_batch(start)
    assert first.txid == 0
    assert first.end == {"batch": 1, "partitions": {"a": {"start": 0, "end": 2}, "b": {"start": 0, "end": 1}}}
    assert tuples_of(first) == {"a": [["a0"], ["a1"]], "b": [["b0"]]}
    second = maker.next_batch(json.loads(json.dumps(first.end)))  # as Spark's offset log gives it back
    assert second.txid == 1 and tuples_of(second) == {"a": [["a2"]], "b": []}
    assert [c for c in spout.calls if c[0] == "new"] == [
        ("new", 0, "a", None), ("new", 0, "b", None),
        ("new", 1, "a", {"start": 0, "end": 2}), ("new", 1, "b", {"start": 0, "end": 1})]
    assert spout.calls[0] == ("refresh", ["a", "b"])  # once, the partitions did not change


def test_a_poll_with_no_tuple_is_not_a_batch_and_is_asked_again_from_the_same_metadata():
    spout = Rows({"a": ["a0"]})
    maker = made(spout, "transactional")
    first = maker.next_batch(maker.initial_offset())
    assert maker.next_batch(first.end) is None
    spout.rows["a"].append("a1")
    again = maker.next_batch(first.end)
    assert again.txid == 1 and tuples_of(again) == {"a": [["a1"]]}


def test_a_coordinator_that_is_not_ready_makes_no_batch():
    spout = Rows({"a": ["a0"]})
    spout.ready = False
    maker = made(spout, "transactional")
    assert maker.next_batch(maker.initial_offset()) is None
    assert not [c for c in spout.calls if c[0] == "new"]


def test_a_replay_is_emitted_again_in_the_task_from_the_logged_metadata():
    spout = Rows({"a": ["a0", "a1", "a2"], "b": ["b0", "b1"]})
    logged_start = {"batch": 4, "partitions": {"a": {"start": 0, "end": 1}}}
    logged_end = {"batch": 5, "partitions": {"a": {"start": 1, "end": 3}}}  # b came after: not in this batch
    batch = made(spout, "transactional").replay(logged_start, logged_end)
    assert batch.txid == 4 and batch.end == logged_end
    [part] = batch.parts
    assert part.tuples is None and part.meta == {"start": 1, "end": 3}
    fresh = Rows(spout.rows)  # the task unpickles its own copy of the spout and builds an emitter
    assert emit_again(fresh, "s", ["value"], batch.txid, part) == [["a1"], ["a2"]]
    assert ("again", 4, 1, "a", {"start": 1, "end": 3}) in fresh.calls


def test_a_replay_whose_partition_is_gone_names_it():
    spout = Rows({"a": ["a0"]})
    with pytest.raises(SpoutError,
                       match=r"spout Rows \(stream 's'\), batch 2: the batch's partitions \['gone'\]"):
        made(spout, "transactional").replay({"batch": 2}, {"batch": 3, "partitions": {"gone": {}}})


def test_metadata_that_is_not_json_names_the_spout_partition_and_batch():
    spout = Rows({"a": ["a0"]})
    spout.meta_of = lambda start, size: {"start": start, "end": size, "seen": {1, 2}}  # type: ignore[method-assign]
    with pytest.raises(SpoutError, match=r"spout Rows \(stream 's'\), partition 'a', batch 0: "
                                         r"emitPartitionBatchNew returned metadata .* not JSON"):
        made(spout, "transactional").next_batch({"batch": 0})


def test_metadata_comes_back_as_json_reads_it():
    spout = Rows({"a": ["a0"]})
    spout.meta_of = lambda start, size: {"start": start, "end": size, "span": (start, size)}  # type: ignore[method-assign]
    batch = made(spout, "transactional").next_batch({"batch": 0})
    assert batch.end["partitions"]["a"]["span"] == [0, 1]


def test_a_tuple_of_the_wrong_width_names_the_spout_partition_and_batch():
    spout = Rows({"a": ["a0"]})
    spout.shape = lambda value: [value, "extra"]  # type: ignore[method-assign]
    with pytest.raises(SpoutError, match=r"spout Rows \(stream 's'\), partition 'a', batch 3: emitted "
                                         r"\['a0', 'extra'\] \(2 values\), but the spout's output "
                                         r"fields are \['value'\]"):
        made(spout, "transactional").next_batch({"batch": 3, "partitions": {}})


def test_an_emitter_that_raises_is_named_with_its_method():
    spout = Rows({"a": ["a0"]})

    def broken(start: int, size: int) -> Any:
        raise ConnectionError("database is down\nretry later")

    spout.meta_of = broken  # type: ignore[method-assign]
    with pytest.raises(SpoutError, match=r"partition 'a', batch 0: emitPartitionBatchNew raised "
                                         r"ConnectionError: database is down retry later$"):
        made(spout, "transactional").next_batch({"batch": 0})


@pytest.mark.parametrize(("ids", "problem"), [
    (["a", "a"], r"two partitions have the id 'a'"),
    ([7], r"getId\(\) returned 7; return a non-empty str"),
])
def test_partition_ids_are_unique_strs(ids: list[Any], problem: str):
    spout = Rows({"a": ["a0"]})
    spout.getEmitter = lambda conf, context: _FixedPartitions(spout, ids)  # type: ignore[method-assign]
    with pytest.raises(SpoutError, match=problem):
        made(spout, "transactional").next_batch({"batch": 0})


class _FixedPartitions(RowsEmitter):
    def __init__(self, spout: Any, ids: list[Any]) -> None:
        super().__init__(spout)
        self.ids = ids

    def getOrderedPartitions(self, all_partition_info: Any) -> Any:
        return [Part(pid) for pid in self.ids]


# --- IOpaquePartitionedTridentSpout --------------------------------------------------------------

class Counting(IOpaquePartitionedTridentSpout):
    """One partition 'p' of numbers 0, 1, 2, ...; each batch takes ``sizes[attempt]`` of them."""

    def __init__(self, sizes: tuple[int, int] = (3, 2), limit: int = 100) -> None:
        self.sizes = sizes
        self.limit = limit
        self.seen: list[Any] = []

    def getCoordinator(self, conf: dict[str, Any], context: Any) -> Any:
        return _OneLister()

    def getEmitter(self, conf: dict[str, Any], context: Any) -> Any:
        return _CountingEmitter(self)

    def getOutputFields(self) -> list[str]:
        return ["n"]


class _OneLister(IOpaquePartitionedTridentSpout.Coordinator):
    def getPartitionsForBatch(self) -> Any:
        return ["p"]


class _CountingEmitter(IOpaquePartitionedTridentSpout.Emitter):
    def __init__(self, spout: Counting) -> None:
        self.spout = spout

    def getOrderedPartitions(self, all_partition_info: Any) -> Any:
        return [Part(pid) for pid in all_partition_info]

    def emitPartitionBatch(self, tx: Any, collector: Any, partition: Any, last_partition_meta: Any) -> Any:
        self.spout.seen.append((tx.getTransactionId(), tx.getAttemptId(), last_partition_meta))
        start = last_partition_meta or 0
        end = min(start + self.spout.sizes[tx.getAttemptId()], self.spout.limit)
        for n in range(start, end):
            collector.emit([n])
        return end


def test_opaque_batches_chain_their_metadata():
    spout = Counting()
    maker = made(spout, "opaque")
    first = maker.next_batch(maker.initial_offset())
    second = maker.next_batch(first.end)
    assert tuples_of(first) == {"p": [[0], [1], [2]]} and tuples_of(second) == {"p": [[3], [4], [5]]}
    assert second.end == {"batch": 2, "partitions": {"p": 6}}


def test_an_opaque_replay_that_ends_elsewhere_is_where_the_next_batch_starts(tmp_path):
    log = ReplayedMetadata(str(tmp_path / "replayed"))
    spout = Counting(sizes=(3, 2))
    start, end = {"batch": 1, "partitions": {"p": 3}}, {"batch": 2, "partitions": {"p": 6}}
    replayed = made(spout, "opaque", log).replay(start, end)
    assert tuples_of(replayed) == {"p": [[3], [4]]}   # other tuples than batch 1 first held: opaque
    assert replayed.end == end                        # Spark's log is what it is ...
    assert log.get(1) == {"p": 5}                     # ... the replay's own end is kept
    restarted = made(Counting(sizes=(3, 2)), "opaque", ReplayedMetadata(str(tmp_path / "replayed")))
    after = restarted.next_batch(end)
    assert tuples_of(after) == {"p": [[5], [6], [7]]}  # from where the replay ended: each number once
    restarted.committed(after.end)
    assert log.get(1) is None


def test_an_opaque_replay_that_ends_where_the_log_says_keeps_nothing():
    log = ReplayedMetadata(None)
    log.put(1, {"p": 99})
    made(Counting(sizes=(3, 3)), "opaque", log).replay({"batch": 1, "partitions": {"p": 3}},
                                                       {"batch": 2, "partitions": {"p": 6}})
    assert log.get(1) is None


# --- IBatchSpout ------------------------------------------------------------------------------------

class Batches(IBatchSpout):
    def __init__(self, batches: list[list[Any]]) -> None:
        self.batches = batches
        self.calls: list[Any] = []

    def open(self, conf: dict[str, Any], context: Any) -> None:
        self.calls.append(("open", conf, context.stream))

    def emitBatch(self, batch_id: int, collector: Any) -> None:
        self.calls.append(("emit", batch_id))
        for value in self.batches[batch_id] if batch_id < len(self.batches) else []:
            collector.emit([value])

    def ack(self, batch_id: int) -> None:
        self.calls.append(("ack", batch_id))

    def close(self) -> None:
        self.calls.append(("close",))

    def getOutputFields(self) -> list[str]:
        return ["word"]

    def getComponentConfiguration(self) -> dict[str, Any]:
        return {"size": 2}


def test_every_emit_is_a_batch_and_acks_come_at_commit():
    spout = Batches([["a"], [], ["b"]])
    maker = made(spout, "batch")
    ends = []
    offset = maker.initial_offset()
    for _ in range(3):
        batch = maker.next_batch(offset)
        ends.append(batch.end)
        offset = batch.end
    assert ends == [{"batch": 1}, {"batch": 2}, {"batch": 3}]   # the empty batch 1 is a batch too
    maker.committed({"batch": 2})
    maker.close()
    assert spout.calls == [("open", {"size": 2}, "s"), ("emit", 0), ("emit", 1), ("emit", 2), ("ack", 1),
                           ("close",)]


def test_an_available_now_run_ends_after_the_first_empty_batch():
    spout = Batches([["a"], []])
    maker = made(spout, "batch")
    maker.available_now = True
    first = maker.next_batch({"batch": 0})
    empty = maker.next_batch(first.end)
    assert empty.empty and maker.next_batch(empty.end) is None


def test_a_replayed_batch_id_is_asked_again_with_the_same_id():
    spout = Batches([["a"], ["b", "c"]])
    batch = made(spout, "batch").replay({"batch": 1}, {"batch": 2})
    assert batch.txid == 1 and tuples_of(batch) == {"batch": [["b"], ["c"]]}


# --- behind the Spout interface ---------------------------------------------------------------------

def test_new_stream_takes_the_users_spout_as_it_is():
    topology = TridentTopology()
    stream = topology.newStream("letters", Rows({"a": []}))
    node = stream.node
    assert isinstance(node.spout, Spout) and isinstance(node.spout, UserSpout)
    assert node.spout.kind == "transactional" and list(stream.getOutputFields()) == ["value"]
    assert repr(node.spout) == "Rows (IPartitionedTridentSpout, stream 'letters')"


def test_an_opaque_spout_keeps_its_replays_metadata_in_the_checkpoint(tmp_path):
    spout = UserSpout(Counting(), "opaque", "numbers").for_run(SpoutRun(tmp_path))
    assert spout.metadata_dir == str(tmp_path / "user-spout-numbers")


def test_output_fields_that_are_not_fields_are_refused_when_the_stream_is_made():
    spout = Batches([])
    spout.getOutputFields = lambda: []  # type: ignore[method-assign]
    with pytest.raises(TopologyError, match=r"newStream\('w'\): Batches.getOutputFields\(\) returned \[\]"):
        TridentTopology().newStream("w", spout)


def test_a_spout_that_does_not_pickle_fails_the_check():
    import threading

    spout = Batches([])
    spout.lock = threading.Lock()  # type: ignore[attr-defined]
    with pytest.raises(SpoutError, match=r"spout Batches \(stream 'w'\): the spout does not pickle"):
        UserSpout(spout, "batch", "w").check()


def test_a_declared_type_is_checked_naming_the_tuple_and_field():
    rows = TupleRows(Fields("word", "n:bigint"))
    with pytest.raises(SpoutError, match=r"spout S, batch 0: tuple 1, field 'n' \(declared bigint\): "):
        rows.table([["a", 1], ["b", "two"]], "spout S, batch 0")


@pytest.mark.parametrize("name", ["trident_spark.spout.user.ibatch_spout",
                                  "trident_spark.spout.user.partitioned",
                                  "trident_spark.spout.user.opaque", "trident_spark.spout.user.collector",
                                  "trident_spark.spout.user.transaction", "trident_spark.spout.user.batches",
                                  "trident_spark.spout.user.spout", "trident_spark.spout.user.tuple_rows"])
def test_docstring_examples(name: str):
    import doctest
    import importlib

    failures, attempted = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0
