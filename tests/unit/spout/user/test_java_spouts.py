"""ITridentSpout and IRichSpout batches without Spark: what the driver's batch maker calls, in
Trident's order (TridentSpoutCoordinator, RichSpoutBatchExecutor), and the end offsets it logs."""

from __future__ import annotations

from typing import Any

import pytest

from trident_spark import Fields, TopologyError, TridentTopology
from trident_spark.spout import BaseRichSpout, ITridentSpout, RichSpoutBatchExecutor
from trident_spark.spout.user.batches import ReplayedMetadata, TridentSpoutMaker


class Coordinator(ITridentSpout.BatchCoordinator):
    def __init__(self, calls: list[Any], shift: int = 0) -> None:
        self.calls, self.shift = calls, shift

    def initializeTransaction(self, txid: int, prevMetadata: Any, currMetadata: Any) -> Any:
        self.calls.append(("init", txid, prevMetadata, currMetadata))
        if currMetadata is not None:
            return {"start": currMetadata["start"], "end": currMetadata["end"] + self.shift}
        start = 0 if prevMetadata is None else prevMetadata["end"]
        return {"start": start, "end": start + 2}

    def success(self, txid: int) -> None:
        self.calls.append(("coordinator-success", txid))


class Emitter(ITridentSpout.Emitter):
    def __init__(self, calls: list[Any]) -> None:
        self.calls = calls

    def emitBatch(self, tx: Any, coordinatorMeta: Any, collector: Any) -> None:
        self.calls.append(("emit", tx.getTransactionId(), tx.getAttemptId(), coordinatorMeta))
        for n in range(coordinatorMeta["start"], coordinatorMeta["end"]):
            collector.emit([n])

    def success(self, tx: Any) -> None:
        self.calls.append(("emitter-success", tx.getTransactionId()))


class Numbers(ITridentSpout):
    def __init__(self, shift: int = 0) -> None:
        self.calls: list[Any] = []
        self.shift = shift

    def getCoordinator(self, txStateId: str, conf: Any, context: Any) -> Coordinator:
        self.calls.append(("coordinator", txStateId))
        return Coordinator(self.calls, self.shift)

    def getEmitter(self, txStateId: str, conf: Any, context: Any) -> Emitter:
        return Emitter(self.calls)

    def getOutputFields(self) -> list[str]:
        return ["n"]


def test_new_batches_log_the_coordinators_metadata_and_succeed_in_tridents_order():
    spout = Numbers()
    maker = TridentSpoutMaker(spout, "numbers", ["n"], ReplayedMetadata(None))
    first = maker.next_batch(maker.initial_offset())
    assert first is not None and first.end == {"batch": 1, "meta": {"start": 0, "end": 2}}
    assert first.parts[0].tuples == [[0], [1]]
    second = maker.next_batch(first.end)
    assert second is not None and second.end == {"batch": 2, "meta": {"start": 2, "end": 4}}
    maker.committed(first.end)
    assert spout.calls == [
        ("coordinator", "numbers"),
        ("init", 0, None, None), ("emit", 0, 0, {"start": 0, "end": 2}),
        ("init", 1, {"start": 0, "end": 2}, None), ("emit", 1, 0, {"start": 2, "end": 4}),
        ("emitter-success", 0), ("coordinator-success", 0)]


def test_a_replay_is_initialized_with_its_logged_metadata_and_emitted_from_the_result():
    spout = Numbers()
    maker = TridentSpoutMaker(spout, "numbers", ["n"], ReplayedMetadata(None))
    replayed = maker.replay({"batch": 1, "meta": {"start": 0, "end": 2}},
                            {"batch": 2, "meta": {"start": 2, "end": 4}})
    assert spout.calls[1:] == [("init", 1, {"start": 0, "end": 2}, {"start": 2, "end": 4}),
                               ("emit", 1, 1, {"start": 2, "end": 4})]
    assert replayed.parts[0].tuples == [[2], [3]] and replayed.end["meta"] == {"start": 2, "end": 4}


def test_a_replay_that_returns_other_metadata_is_where_the_next_batch_goes_on():
    spout = Numbers(shift=1)
    maker = TridentSpoutMaker(spout, "numbers", ["n"], ReplayedMetadata(None))
    logged_end = {"batch": 2, "meta": {"start": 2, "end": 4}}
    maker.replay({"batch": 1, "meta": {"start": 0, "end": 2}}, logged_end)
    after = maker.next_batch(logged_end)
    assert after is not None and after.end["meta"] == {"start": 5, "end": 7}   # from the replay's end, 5


class Words(BaseRichSpout):
    def __init__(self, words: list[str]) -> None:
        self.words = words
        self.acked: list[Any] = []
        self.failed: list[Any] = []
        self.calls = 0

    def open(self, conf: Any, context: Any, collector: Any) -> None:
        self.collector, self.left = collector, list(self.words)

    def nextTuple(self) -> None:
        self.calls += 1
        if self.left:
            word = self.left.pop(0)
            self.collector.emit([word], f"id-{word}")

    def ack(self, msgId: Any) -> None:
        self.acked.append(msgId)

    def fail(self, msgId: Any) -> None:
        self.failed.append(msgId)

    def declareOutputFields(self, declarer: Any) -> None:
        declarer.declare(Fields("word"))

    def getComponentConfiguration(self) -> dict[str, Any]:
        return {"topology.spout.max.batch.size": 3}


def test_a_rich_spout_batch_ends_when_full_or_at_the_first_empty_call_and_acks_on_success():
    spout = Words(["a", "b", "c", "d"])
    maker = TridentSpoutMaker(RichSpoutBatchExecutor(spout), "words", ["word"], ReplayedMetadata(None))
    first = maker.next_batch(maker.initial_offset())
    assert first is not None and first.parts[0].tuples == [["a"], ["b"], ["c"]] and spout.calls == 3
    second = maker.next_batch(first.end)
    assert second is not None and second.parts[0].tuples == [["d"]] and spout.calls == 5  # 5th: nothing
    maker.committed(first.end)
    assert spout.acked == ["id-a", "id-b", "id-c"]
    maker.replay(first.end, second.end)               # batch 1 emitted again: its ids failed first
    assert spout.failed == ["id-d"]
    assert first.end == {"batch": 1, "meta": None}


def test_a_rich_spout_with_two_streams_is_refused():
    class Two(Words):
        def declareOutputFields(self, declarer: Any) -> None:
            declarer.declare(["word"])
            declarer.declareStream("other", ["x"])

    with pytest.raises(TopologyError) as caught:
        TridentTopology().newStream("s", Two([]))
    assert str(caught.value) == ("Two.declareOutputFields declared 2 streams ['default', 'other']; Trident "
                                 "reads a spout with exactly one stream: declarer.declare(Fields(...))")
