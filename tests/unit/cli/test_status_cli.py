"""`trident-spark status CHECKPOINT_DIR`: a checkpoint directory written as a run writes it (progress
JSON lines, trident-run.json, Spark's offsets and commits logs), shown as users see it."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest
from rich.console import Console

from trident_spark.cli import status
from trident_spark.cli.main import build_parser, main

SPLIT_HEAVY = (("kafka", "source", 200, None, 1000), ("split", "python", 1200, 1000, 5000),
               ("count", "aggregate", 300, 5000, 120), ("state_get", "state_get", 100, 120, 120),
               ("state_put", "state_put", 100, 120, 120), ("spark", "spark", 100, None, None))


def progress_line(stream, txid, *, rows=1000, duration=1200, add=1150, backlog=0, limited="max_fetch_bytes",
                  stages=SPLIT_HEAVY):
    """One line of trident-progress.jsonl, in the format of BatchProgress.to_json() (issue 5's fields)."""
    staged = [{"name": n, "kind": k, "ms": float(ms), "rows_in": i, "rows_out": o}
              for n, k, ms, i, o in stages]
    task_ms = sum(s["ms"] for s in staged)
    return json.dumps({
        "stream": stream, "txid": txid, "rows": rows, "duration_ms": duration, "bytes": rows * 25,
        "record_bytes": 25.0, "limited_by": limited, "lost_records": 0, "malformed_records": 0,
        "input_rows_per_second": rows / 1.2, "processed_rows_per_second": rows / 1.2,
        "timestamp": f"2024-05-01T10:00:{txid:02d}.000Z",
        "durations_ms": {"addBatch": add, "latestOffset": 20, "walCommit": 15, "triggerExecution": duration},
        "end_offsets": {"sentences": {"0": (txid + 1) * rows}},
        "state": {"store_reads": 1, "store_writes": 1},
        "start_offsets": {"sentences": {"0": txid * rows}}, "latest_offsets": None,
        "partition_rows": {"sentences[0]": rows, "sentences[1]": 0}, "backlog": backlog,
        "read_limit_bytes": 25_000, "stages": staged,
        "spark": {"stages": 2, "tasks": 4, "executor_run_ms": task_ms, "executor_cpu_ms": 0.9 * task_ms,
                  "gc_ms": 0.02 * task_ms, "shuffle_read_bytes": 0, "shuffle_write_bytes": 0},
        "cores": 2,
    }, sort_keys=True)


def write_stream(root, name, lines, *, offsets, commits):
    directory = root / name
    (directory / "offsets").mkdir(parents=True)
    (directory / "commits").mkdir()
    (directory / status.PROGRESS_FILE).write_text("".join(line + "\n" for line in lines))
    for n in range(offsets):
        (directory / "offsets" / str(n)).write_text('v1\n{"batchWatermarkMs":0}\n{}\n')
        (directory / "offsets" / f".{n}.crc").write_bytes(b"crc")
    for n in range(commits):
        (directory / "commits" / str(n)).write_text('v1\n{"nextBatchWatermarkMs":0}\n')
    return directory


def write_run(root, *, pid=None, stopped=None, trigger_ms=1000):
    (root / status.RUN_FILE).write_text(json.dumps({
        "started": "2024-05-01T10:00:00", "stopped": stopped, "pid": os.getpid() if pid is None else pid,
        "host": socket.gethostname(), "trigger": "1 second" if trigger_ms else "available_now",
        "trigger_ms": trigger_ms, "master": "local[2]", "cores": 2, "streams": ["wordcount", "questions"]}))


@pytest.fixture
def checkpoint(tmp_path):
    """A live run (this process's pid): wordcount falls behind with batch 6 running; questions starve."""
    root = tmp_path / "ckpt"
    write_stream(root, "wordcount", [progress_line("wordcount", i, backlog=3000 * i) for i in range(6)],
                 offsets=7, commits=6)
    small = (("kafka", "source", 10, None, 3), ("split", "python", 12, 3, 6), ("state_query", "state_query",
                                                                                 8, 6, 6))
    write_stream(root, "questions", [progress_line("questions", i, rows=3, duration=45, add=40,
                                                   limited="available", stages=small) for i in range(4)],
                 offsets=4, commits=4)
    write_run(root)
    return root


def show(path, *extra):
    console = Console(record=True, width=120, force_terminal=False, color_system=None)
    args = build_parser().parse_args(["status", str(path), *extra])
    assert status.main(args, console=console) == 0
    return [line.rstrip() for line in console.export_text().splitlines()]


def test_status_shows_each_stream_with_its_numbers_bottleneck_and_verdict(checkpoint):
    lines = show(checkpoint)
    wordcount = lines[:lines.index(next(x for x in lines if x.startswith("questions ")))]
    assert wordcount == [
        "wordcount " + "─" * 110,
        f"status      running (pid {os.getpid()}, started 2024-05-01T10:00:00)",
        "            batch 6 running now (offsets logged, not committed yet)",
        "batches     6 (txid 0..5), 6,000 rows",
        "last batch  txid 5: 1,000 rows, 25,000 B, 1,200 ms, limited by max_fetch_bytes",
        "rates       input 4,000 rows/s (arrivals, from offsets), processing 833 rows/s",
        "backlog     15,000 records, growing (+3,000 a batch)",
        "duration    last 1,200 ms, p50 1,200 ms, p95 1,200 ms; trigger 1,000 ms",
        "stages: task time per batch, mean of the last 6 batches",
        "stage       kind           ms   share   rows in   rows out",
        "─" * 71,
        "kafka       source        200     10%         -      1,000",
        "split       python      1,200     60%     1,000      5,000   <- slowest",
        "count       aggregate     300     15%     5,000        120",
        "state_get   state_get     100      5%       120        120",
        "state_put   state_put     100      5%       120        120",
        "spark       spark         100      5%         -          -",
        "bottleneck  CPU (Python operators): split+count dominates: 75% of task time (1,500 ms a batch): "
        "the Python code itself;",
        "            cheaper operators or more cores",
        "verdict     falling behind: the backlog grows by 3,000 records a batch (now 15,000); 100% of "
        "batches are cut by",
        "            max_fetch_bytes",
    ]
    questions = lines[len(wordcount):]
    assert "batches     4 (txid 0..3), 12 rows" in questions
    assert not any("running now" in line for line in questions)  # its offsets are all committed
    assert ("verdict     starved: batches take everything available and finish in 45 ms (p50) of a 1,000 ms "
            "trigger: the stages wait") in questions
    assert "            for input 96% of the time" in questions


def test_an_interrupted_batch_of_a_run_whose_process_is_gone(checkpoint):
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    write_run(checkpoint, pid=gone.pid)
    lines = show(checkpoint, "--stream", "wordcount")
    assert lines[1] == (f"status      not running: pid {gone.pid} is gone without a stop (killed or crashed; "
                        "started 2024-05-01T10:00:00)")
    assert lines[2] == ("            batch 6 was interrupted (offsets logged, no commit): it is replayed "
                        "with the same offsets on restart")
    assert not any(line.startswith("questions") for line in lines)


def test_a_finished_run_and_one_stream_directory_given(checkpoint):
    write_run(checkpoint, stopped="2024-05-01T10:05:00")
    lines = show(checkpoint / "questions")
    assert lines[0].startswith("questions ─")
    assert lines[1] == "status      finished (started 2024-05-01T10:00:00, stopped 2024-05-01T10:05:00)"
    assert lines[2].startswith("batches     4 (txid 0..3)")


def test_without_a_run_file_or_a_trigger(checkpoint):
    (checkpoint / status.RUN_FILE).unlink()
    lines = show(checkpoint, "--stream", "wordcount", "--last", "3")
    assert lines[1] == "status      unknown: no trident-run.json (written by trident-spark when a run starts)"
    assert lines[2] == "            batch 6 has offsets logged but no commit: running, or interrupted"
    assert "stages: task time per batch, mean of the last 3 batches" in lines
    assert "duration    last 1,200 ms, p50 1,200 ms, p95 1,200 ms; no trigger interval" in lines


def test_a_half_written_last_line_is_left_for_later_and_a_bad_line_is_counted(checkpoint):
    progress = checkpoint / "wordcount" / status.PROGRESS_FILE
    with open(progress, "a") as out:
        out.write("not json\n" + progress_line("wordcount", 6)[:40])
    lines = show(checkpoint, "--stream", "wordcount")
    assert "batches     6 (txid 0..5), 6,000 rows" in lines
    note = lines.index("note        1 unreadable lines in")  # the path goes on the next line
    # whole, folded over more lines when it is longer than one
    assert "".join(line.strip() for line in lines[note + 1:]).startswith(f"{progress} skipped")


def rotate(directory, parts):
    """Split a stream's progress file as the runtime rotates it: ``{number: lines}`` rotated files,
    the rest left in the current file."""
    path = directory / status.PROGRESS_FILE
    lines = path.read_text().splitlines(keepends=True)
    start = 0
    for number, count in parts.items():
        (directory / f"{status.PROGRESS_FILE}.{number}").write_text("".join(lines[start:start + count]))
        start += count
    path.write_text("".join(lines[start:]))


def test_rotated_progress_files_are_read_oldest_first(checkpoint):
    whole = show(checkpoint, "--stream", "wordcount")
    rotate(checkpoint / "wordcount", {1: 2, 2: 3})  # .1: txid 0-1, .2: txid 2-4, current: txid 5
    assert show(checkpoint, "--stream", "wordcount") == whole
    (checkpoint / "wordcount" / status.PROGRESS_FILE).unlink()  # rotated, the next line not written yet
    lines = show(checkpoint, "--stream", "wordcount")
    assert "batches     5 (txid 0..4), 5,000 rows" in lines
    assert "last batch  txid 4: 1,000 rows, 25,000 B, 1,200 ms, limited by max_fetch_bytes" in lines


def test_status_says_when_older_progress_was_rotated_away(checkpoint):
    rotate(checkpoint / "wordcount", {3: 2, 4: 2})  # .1 and .2 deleted by the runtime
    (checkpoint / "wordcount" / f"{status.PROGRESS_FILE}.3").unlink()
    lines = show(checkpoint, "--stream", "wordcount")
    assert "batches     4 (txid 2..5), 4,000 rows" in lines
    note = lines.index("note        progress before txid 2 was rotated away: the figures cover the 2 "
                       "progress files kept in")
    assert "".join(line.strip() for line in lines[note + 1:]).startswith(f"{checkpoint / 'wordcount'}")
    assert not any(line.startswith("note") for line in show(checkpoint, "--stream", "questions"))


def test_the_cli_entry_prints_once_and_exits_0(checkpoint, capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["status", str(checkpoint)]) == 0
    out = capsys.readouterr().out
    assert ("verdict     falling behind: the backlog grows by 3,000 records a batch (now 15,000); 100% of "
            "batches are cut by max_fetch_bytes") in out
    assert "split       python      1,200     60%     1,000      5,000   <- slowest" in out


def test_json_format_for_scripts(checkpoint, capsys):
    assert main(["status", str(checkpoint), "--format", "json"]) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["checkpoint"] == str(checkpoint) and shown["run"]["trigger_ms"] == 1000
    by_name = {s["stream"]: s for s in shown["streams"]}
    assert by_name["wordcount"]["pending"] == "batch 6 running now (offsets logged, not committed yet)"
    diagnosis = by_name["wordcount"]["diagnosis"]
    assert (diagnosis["verdict"]["kind"], diagnosis["bottleneck"]["kind"]) == ("falling behind", "cpu")
    assert diagnosis["totals"] == {"batches": 6, "rows": 6000, "first_txid": 0, "last_txid": 5}
    assert by_name["questions"]["diagnosis"]["verdict"]["kind"] == "starved"


def test_follow_shows_batches_appended_while_it_runs(checkpoint):
    progress = checkpoint / "wordcount" / status.PROGRESS_FILE
    appended = iter([progress_line("wordcount", 6, backlog=18_000)[:50],     # half a line first
                     progress_line("wordcount", 6, backlog=18_000)[50:] + "\n"])
    sleeps = []

    def sleep(seconds):
        sleeps.append(seconds)
        with open(progress, "a") as out:
            out.write(next(appended))

    reader = status.StatusReader(checkpoint, stream="wordcount")
    console = Console(record=True, width=120, force_terminal=False, color_system=None)
    assert status.follow(reader, console, interval=0.5, refreshes=2, sleep=sleep) == 0
    assert sleeps == [0.5, 0.5]
    text = console.export_text()
    assert "batches     7 (txid 0..6), 7,000 rows" in text
    assert "backlog     18,000 records, growing (+3,000 a batch)" in text
    assert reader.tails["wordcount"].bad_lines == 0


def test_follow_stops_on_ctrl_c_with_exit_0(checkpoint, monkeypatch, capsys):
    def interrupt(seconds):
        raise KeyboardInterrupt

    monkeypatch.setattr(status.time, "sleep", interrupt)
    assert main(["status", str(checkpoint), "--follow", "--interval", "0.1"]) == 0
    assert "verdict" in capsys.readouterr().out


def test_follow_as_json_prints_one_object_per_refresh(checkpoint, capsys):
    reader = status.StatusReader(checkpoint)
    assert status.follow(reader, None, interval=1, refreshes=2, sleep=lambda s: None, as_json=True) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 3 and all(json.loads(line)["streams"] for line in lines)


def test_a_new_stream_appears_while_following(checkpoint):
    reader = status.StatusReader(checkpoint)
    assert [v.diagnosis.stream for v in reader.views()] == ["wordcount", "questions"]  # the run's order
    write_stream(checkpoint, "clicks", [progress_line("clicks", 0)], offsets=1, commits=1)
    assert [v.diagnosis.stream for v in reader.views()] == ["wordcount", "questions", "clicks"]


# --- errors ---------------------------------------------------------------------------------------
def status_error(capsys, *argv):
    assert main(["status", *argv]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    return captured.err.strip()


def test_a_missing_directory_is_named_with_what_to_give(tmp_path, capsys):
    missing = tmp_path / "nope"
    assert status_error(capsys, str(missing)) == (
        f"error: no such directory: {missing}; give the checkpoint directory of a run "
        "(topology.run(checkpoint_location=...), trident-spark run --checkpoint)")


def test_a_file_is_not_a_checkpoint(tmp_path, capsys):
    (tmp_path / "f.txt").write_text("x")
    assert status_error(capsys, str(tmp_path / "f.txt")).startswith(
        f"error: {tmp_path / 'f.txt'} is not a directory; give the checkpoint directory")


def test_a_directory_without_progress(tmp_path, capsys):
    assert status_error(capsys, str(tmp_path)) == (
        f"error: no trident-progress.jsonl in {tmp_path} or its subdirectories; give the "
        "directory passed as checkpoint_location (each stream writes "
        "CHECKPOINT/<stream>/trident-progress.jsonl after its first batch)")
    (tmp_path / "wordcount" / "offsets").mkdir(parents=True)
    assert status_error(capsys, str(tmp_path)) == (
        f"error: no trident-progress.jsonl in {tmp_path} or its subdirectories; streams "
        "wordcount have not finished a batch yet")


def test_an_unknown_stream_lists_the_streams(checkpoint, capsys):
    assert status_error(capsys, str(checkpoint), "--stream", "clicks") == (
        f"error: no stream 'clicks' in {checkpoint}; its streams: questions, wordcount")


def test_bad_numbers_are_usage_errors(checkpoint, capsys):
    for option in (["--last", "0"], ["--interval", "-1"]):
        with pytest.raises(SystemExit) as info:
            main(["status", str(checkpoint), *option])
        assert info.value.code == 2
        assert f"argument {option[0]}" in capsys.readouterr().err


def test_help_has_examples(capsys):
    with pytest.raises(SystemExit) as info:
        main(["status", "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: trident-spark status")
    for option in ("CHECKPOINT_DIR", "--follow", "--stream NAME", "--last N", "--interval S", "--format"):
        assert option in out
    examples = out.split("\nexamples:\n", 1)[1]
    assert examples.count("trident-spark status") >= 4


def test_the_progress_file_name_is_the_runtimes():
    from trident_spark.runtime.handle import PROGRESS_FILE

    assert status.PROGRESS_FILE == PROGRESS_FILE


def test_the_tail_reads_a_line_once_it_is_complete(tmp_path):
    path = tmp_path / status.PROGRESS_FILE
    path.write_text(progress_line("s", 0) + "\n" + progress_line("s", 1)[:30])
    tail = status.ProgressTail(path)
    assert [b["txid"] for b in tail.read()] == [0]
    assert tail.read() == []
    with open(path, "a") as out:
        out.write(progress_line("s", 1)[30:] + "\n" + progress_line("s", 2))  # whole, without its newline
    assert [b["txid"] for b in tail.read()] == [1, 2]
    with open(path, "a") as out:
        out.write("\n")
    assert tail.read() == [] and tail.bad_lines == 0
