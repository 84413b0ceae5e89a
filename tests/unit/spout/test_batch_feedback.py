"""Batch feedback is a Spout capability (``Spout.after_batch``): the runtime tells every spout of a
query that a batch finished, without knowing its class; an adaptive KafkaSpout records the duration.

No Spark: the runner's attempt is scripted.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from trident_spark.errors import FailedException
from trident_spark.fields import Fields
from trident_spark.graph import SpoutNode
from trident_spark.planner.query import QueryPlan
from trident_spark.runtime.batch import BatchRunner
from trident_spark.spout import KafkaSpout
from trident_spark.spout.base import BatchFeedback, Spout
from trident_spark.spout.kafka.adaptive import Feedback, read_feedback

BROKER = "127.0.0.1:9092"


class Listening(Spout):
    """A spout that keeps what the runtime told it."""

    def __init__(self) -> None:
        self.told: list[BatchFeedback] = []

    @property
    def fields(self) -> Sequence[str]:
        return ["word"]

    def to_dataframe(self, spark: Any) -> Any:
        raise NotImplementedError

    def after_batch(self, feedback: BatchFeedback) -> None:
        self.told.append(feedback)


class Scripted(BatchRunner):
    """A runner whose attempts raise the given errors in turn, then succeed."""

    def __init__(self, spouts: list[Spout], failures: list[Exception], checkpoint: Path | None) -> None:
        nodes = [SpoutNode(Fields(["word"]), stream_name=f"s{i}", spout=s) for i, s in enumerate(spouts)]
        super().__init__(QueryPlan(nodes, [], [], {}, {}), {}, 3, retry_delay=0.0, checkpoint=checkpoint)
        self.failures = list(failures)

    def run_once(self, df: Any, batch_id: int) -> dict[Any, float]:
        if self.failures:
            raise self.failures.pop(0)
        return {}


def test_every_spout_is_told_each_finished_batch_the_first_as_the_warmup(tmp_path: Path) -> None:
    first, second = Listening(), Listening()
    runner = Scripted([first, second], [FailedException("flaky")], tmp_path)
    runner(None, 7)  # type: ignore[arg-type]
    runner(None, 8)  # type: ignore[arg-type]
    for spout in (first, second):
        assert [(f.batch_id, f.checkpoint, f.warmup) for f in spout.told] == [(7, tmp_path, True),
                                                                             (8, tmp_path, False)]
        assert all(f.duration_ms >= 0 for f in spout.told)


def test_a_spout_that_declares_nothing_is_told_nothing_and_the_batch_goes_on(tmp_path: Path) -> None:
    runner = Scripted([KafkaSpout(BROKER, ["words"])], [], tmp_path)
    runner(None, 0)  # type: ignore[arg-type]
    assert read_feedback(tmp_path) is None  # not adaptive: no feedback file


def test_an_adaptive_kafka_spout_records_the_duration_for_its_planner(tmp_path: Path) -> None:
    spout = KafkaSpout(BROKER, ["words"], adaptive_target_ms=800)
    spout.after_batch(BatchFeedback(7, 812.25, tmp_path, warmup=True))
    assert read_feedback(tmp_path) == Feedback(7, 812.2, warmup=True)
    spout.after_batch(BatchFeedback(8, 90.0, None))  # no checkpoint: nowhere to record
    assert read_feedback(tmp_path) == Feedback(7, 812.2, warmup=True)
