"""The progress view `run` and `demo` show: a live view on a terminal (the one `status` shows), one
line per batch when piped."""

from __future__ import annotations

import json
from types import SimpleNamespace

from rich.console import Console

from tests.unit.cli.test_status_cli import progress_line, write_run, write_stream
from trident_spark.cli import run as run_command
from trident_spark.cli.live import LiveProgress, StreamHistory, render
from trident_spark.cli.main import main
from trident_spark.cli.status import StatusReader
from trident_spark.runtime.progress import BatchProgress

#: The session the command's run gets here: no Spark, and no spark.trident.* setting in its conf.
NO_SPARK = SimpleNamespace(conf={})


def plain_console(**options):
    return Console(record=True, width=120, force_terminal=False, color_system=None, **options)


def lines_of(console):
    return [line.rstrip() for line in console.export_text().splitlines()]


def progress(txid, rows=1000):
    return BatchProgress(stream="wordcount", txid=txid, rows=rows, duration_ms=800, bytes=rows * 25,
                         limited_by="max_fetch_bytes", durations_ms={"addBatch": 750})


def test_piped_it_prints_one_line_per_batch_as_before():
    console = plain_console()
    live = LiveProgress(console, prefix="  ")
    assert not live.interactive
    with live:
        live(progress(0))
        live(progress(1, rows=500))
    assert lines_of(console) == [
        "  [wordcount] batch 0: 1,000 rows, 25,000 B, 800 ms, limited by max_fetch_bytes",
        "  [wordcount] batch 1: 500 rows, 12,500 B, 800 ms, limited by max_fetch_bytes",
    ]


def test_on_a_terminal_it_shows_what_status_shows_for_the_same_batches(tmp_path):
    lines = [progress_line("wordcount", i, backlog=3000 * i) for i in range(6)]
    write_stream(tmp_path, "wordcount", lines, offsets=6, commits=6)
    write_run(tmp_path)
    status_console = plain_console()
    status_console.print(render(StatusReader(tmp_path).views()))

    console = plain_console()  # not a terminal: Live prints its last view once, on stop
    live = LiveProgress(console, trigger_ms=1000, interactive=True)
    with live:
        for line in lines:
            live(json.loads(line))
    shown = lines_of(console)
    assert shown[1] == "status      stopped"
    assert shown[2:] == lines_of(status_console)[2:]  # all but the run's status line
    assert ("verdict     falling behind: the backlog grows by 3,000 records a batch (now 15,000); 100% of "
            "batches are cut by") in shown
    assert not any("[wordcount] batch" in line for line in shown)


def test_a_forced_terminal_is_live_and_shows_every_stream():
    console = Console(record=True, width=120, force_terminal=True, color_system=None)
    live = LiveProgress(console, trigger_ms=1000)
    assert live.interactive
    with live:
        live(progress(0))
        live(BatchProgress(stream="questions", txid=0, rows=4, duration_ms=40))
    text = console.export_text()
    assert "batches     1 (txid 0..0), 1,000 rows" in text and "batches     1 (txid 0..0), 4 rows" in text
    assert "status      stopped" in text


def test_the_live_view_says_how_the_run_ended():
    console = plain_console()
    live = LiveProgress(console, interactive=True)
    try:
        with live:
            live(progress(0))
            raise KeyboardInterrupt
    except KeyboardInterrupt:
        pass
    assert "status      stopped" in lines_of(console)
    console = plain_console()
    live = LiveProgress(console, interactive=True)
    try:
        with live:
            live(progress(0))
            raise RuntimeError("boom")
    except RuntimeError:
        pass
    assert "status      failed: RuntimeError" in lines_of(console)


def test_history_keeps_recent_batches_and_counts_all():
    history = StreamHistory("wordcount", keep=3)
    for txid in range(5):
        history.append(progress(txid, rows=10))
    assert [b.txid for b in history.recent] == [2, 3, 4]
    d = history.diagnose(trigger_ms=None, window=20)
    assert (d.totals.batches, d.totals.rows, d.totals.first_txid, d.totals.last_txid) == (5, 50, 0, 4)
    assert d.window == 3


class FakeHandle:
    def awaitTermination(self, timeout=None):
        return True

    def stop(self):
        pass


class TwoBatchTopology:
    def run(self, **options):
        self.options = options
        options["on_progress"](progress(0))
        options["on_progress"](progress(1))
        return FakeHandle()


def test_run_prints_a_line_per_batch_when_piped(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "1000")
    monkeypatch.setattr("trident_spark.runtime.session.local_session", lambda master=None, conf=None:
                        NO_SPARK)
    topology = TwoBatchTopology()
    monkeypatch.setattr(run_command, "load_topology", lambda target: topology)
    assert main(["run", "app.py", "--checkpoint", "/tmp/never-used", "--trigger", "500ms"]) == 0
    err = capsys.readouterr().err.splitlines()
    assert err[1:] == ["[wordcount] batch 0: 1,000 rows, 25,000 B, 800 ms, limited by max_fetch_bytes",
                       "[wordcount] batch 1: 1,000 rows, 25,000 B, 800 ms, limited by max_fetch_bytes"]
    assert isinstance(topology.options["on_progress"], LiveProgress)
    assert topology.options["on_progress"].trigger_ms == 500


def test_the_trigger_interval_of_run():
    from trident_spark.durations import trigger_millis

    assert trigger_millis("1 second") == 1000
    assert trigger_millis("250 milliseconds") == 250
    assert trigger_millis("available_now") is None
    assert trigger_millis("every now and then") is None
