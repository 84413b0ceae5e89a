"""Errors operations report with collector.reportError: counted per operator in the batch's counters,
carried by BatchProgress (and its JSON line), shown in the progress line and by `trident-spark status`."""

from __future__ import annotations

import json

from trident_spark.cli.status import reported_errors
from trident_spark.executor.metrics import CountersParam, StageClock
from trident_spark.operation import ReportedErrors
from trident_spark.runtime.metrics import split_errors
from trident_spark.runtime.progress import BatchProgress


def _task(label: str, *messages: str) -> dict:
    errors = ReportedErrors(label)
    for message in messages:
        errors.report(ValueError(message))
    clock = StageClock()
    clock.errors(label, errors)
    return clock.counters


def test_tasks_counts_add_up_and_the_last_message_is_kept():
    param = CountersParam()
    total = param.zero({})
    for counters in (_task("each(Parse)", "a", "b"), _task("each(Parse)", "c"), _task("each(Geo)"),
                     {"store_reads": 4}):
        total = param.addInPlace(total, counters)
    assert split_errors(total) == ({"each(Parse)": 3}, {"each(Parse)": "ValueError: c"})
    assert total["store_reads"] == 4


def test_progress_carries_them_and_the_line_shows_them():
    batch = BatchProgress("words", txid=2, rows=10, duration_ms=5)
    counters = {**_task("each(Parse)", "x", "y", "token=abc"), **_task("each(Geo)", "no city")}
    batch.add_task_metrics(counters, {})
    assert batch.errors_reported == {"each(Parse)": 3, "each(Geo)": 1}
    assert batch.last_errors == {"each(Parse)": "ValueError: token=***", "each(Geo)": "ValueError: no city"}
    assert batch.line() == ("[words] batch 2: 10 rows, 5 ms; 3 errors reported by each(Parse), "
                            "1 by each(Geo)")
    line = batch.to_json()
    assert json.loads(line)["errors_reported"] == {"each(Parse)": 3, "each(Geo)": 1}
    assert BatchProgress.from_json(line) == batch


def test_a_batch_without_reported_errors_says_nothing_of_them():
    batch = BatchProgress("words", txid=0, rows=1, duration_ms=1)
    batch.add_task_metrics({}, {})
    assert (batch.errors_reported, batch.line()) == ({}, "[words] batch 0: 1 rows, 1 ms")
    assert BatchProgress.from_json(json.dumps({"stream": "w", "txid": 0, "rows": 0, "duration_ms": 0})) \
        .errors_reported == {}


def test_status_notes_the_errors_of_the_last_batches():
    batches = [{"txid": 1}, {"txid": 2, "errors_reported": {"each(Parse)": 2, "each(Geo)": 1},
                             "last_errors": {"each(Parse)": "ValueError: x", "each(Geo)": "KeyError: 'c'"}},
               {"txid": 3, "errors_reported": {"each(Parse)": 1},
                "last_errors": {"each(Parse)": "ValueError: y"}}]
    assert reported_errors(batches) == (
        "3 errors reported by each(Parse) in the last 3 batches (the batches went on); last, in batch 3: "
        "ValueError: y; 1 error reported by each(Geo); last, in batch 2: KeyError: 'c'")
    assert reported_errors(batches[:1]) is None
