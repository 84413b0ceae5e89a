"""``trident-spark status CHECKPOINT_DIR``: how each stream of a run is doing, read from its checkpoint."""

from __future__ import annotations

import argparse
import json
import socket
import sys
import time
from collections.abc import Callable
from typing import Any

from trident_spark import checkpoint_files as files
from trident_spark.checkpoint_files import Location
from trident_spark.errors import TridentSparkError
from trident_spark.local.process import pid_alive
from trident_spark.runtime.progress import PROGRESS_FILE, RUN_FILE  # light: no pyspark import
from trident_spark.runtime.progress_log import (
    PROGRESS_FILE_BYTES,
    PROGRESS_FILES_KEPT,
    ProgressTail,
    WholeFileTail,
    has_progress,
    progress_files,
    progress_tail,
)

HELP = "show each stream's progress, principal bottleneck and First-Rule verdict from a checkpoint"
DESCRIPTION = f"""\
Show how each stream of a topology is doing, from its checkpoint directory alone
(no Spark needed): whether the run is alive, batches and rows, input vs
processing rate, the backlog and its trend, batch durations against the
trigger, the task time of each stage (the slowest marked), the principal
bottleneck in the tuning notes' terms, and the verdict against the First Rule
(every stage always ready to accept records, every processed record delivered
promptly): falling behind, keeping up or starved.

It reads CHECKPOINT/<stream>/trident-progress.jsonl (one line per finished
batch; past {PROGRESS_FILE_BYTES // 2**20} MiB it is rotated to trident-progress.jsonl.<n>, and the
{PROGRESS_FILES_KEPT} newest rotated files are kept: all are read, oldest first),
CHECKPOINT/trident-run.json (pid, trigger, cores) and Spark's offsets/ and
commits/ logs (a batch with offsets but no commit is running, or was
interrupted and will be replayed on restart).
"""
EPILOG = """examples:
  trident-spark status checkpoints/wordcount
      every stream of the run that used this checkpoint, once
  trident-spark status /tmp/wc --follow --interval 1
      refresh every second until Ctrl-C
  trident-spark status /tmp/wc --stream sentences --last 50
      one stream, diagnosed over its last 50 batches
  trident-spark status /tmp/wc/sentences
      a stream's own directory works too
  trident-spark status /tmp/wc --format json | jq '.streams[].diagnosis.verdict'
      the diagnosis as JSON, for scripts
  trident-spark status s3a://bucket/checkpoints/wc
      a checkpoint on another filesystem (file://, hdfs://, s3a://, gs://, abfs://: pyarrow.fs,
      credentials from the environment)

exit status: 0 shown (also after Ctrl-C with --follow), 2 no such checkpoint or no progress in it
"""


class StatusError(TridentSparkError):
    """The checkpoint directory cannot be shown: what is wrong, and what to give instead."""


def register(commands: Any) -> None:
    parser = commands.add_parser("status", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkpoint", metavar="CHECKPOINT_DIR",
                        help="the checkpoint directory of a run (or one stream's directory in it)")
    parser.add_argument("--follow", "-f", action="store_true", help="refresh until Ctrl-C")
    parser.add_argument("--stream", metavar="NAME", help="show only this stream")
    parser.add_argument("--last", type=_positive_int, default=20, metavar="N",
                        help="diagnose the last N batches of each stream (default 20)")
    parser.add_argument("--interval", type=_positive_float, default=2.0, metavar="S",
                        help="seconds between refreshes with --follow (default 2)")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="table (default), or json: the diagnosis as one JSON object (per refresh)")
    parser.set_defaults(handler=main)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value


def _positive_float(text: str) -> float:
    value = float(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"must be above 0, not {value}")
    return value


# --- reading the checkpoint -----------------------------------------------------------------------
def batch_ids(directory: Location) -> list[int]:
    """Batch ids of a Spark metadata log (``offsets/`` or ``commits/``): files named by number."""
    try:
        return sorted(int(name) for name in files.list_names(directory) if name.isdigit())
    except OSError:
        return []


def read_run(root: Location) -> dict[str, Any] | None:
    try:
        value = json.loads(files.read_text(files.join(root, RUN_FILE)))
    except (OSError, ValueError):
        return None
    return value if isinstance(value, dict) else None


def run_status(run: dict[str, Any] | None) -> tuple[str, bool | None]:
    """A line on the run, and whether it is alive (None: cannot tell from here)."""
    if run is None:
        return f"unknown: no {RUN_FILE} (written by trident-spark when a run starts)", None
    started = run.get("started") or "?"
    if run.get("stopped"):
        return f"finished (started {started}, stopped {run['stopped']})", False
    pid, host = run.get("pid"), run.get("host")
    if not isinstance(pid, int):
        return f"started {started}, no pid recorded", None
    if host and host != socket.gethostname():
        return f"running on {host} (pid {pid}, started {started}), cannot check from this host", None
    if pid_alive(pid):
        return f"running (pid {pid}, started {started})", True
    return f"not running: pid {pid} is gone without a stop (killed or crashed; started {started})", False


def pending_batch(stream_dir: Location, alive: bool | None) -> str | None:
    """The batch whose offsets Spark logged but did not commit: running now, or interrupted."""
    offsets = batch_ids(files.join(stream_dir, "offsets"))
    commits = batch_ids(files.join(stream_dir, "commits"))
    if not offsets or (commits and commits[-1] >= offsets[-1]):
        return None
    txid = offsets[-1]
    if alive:
        return f"batch {txid} running now (offsets logged, not committed yet)"
    if alive is None:
        return f"batch {txid} has offsets logged but no commit: running, or interrupted"
    return (f"batch {txid} was interrupted (offsets logged, no commit): it is replayed with the same "
            "offsets on restart")


def locate(path: Location, stream: str | None = None) -> tuple[Location, dict[str, Location]]:
    """``(run directory, {stream: its directory})`` for a checkpoint or one stream's directory: a
    local path, or a URI (``hdfs://``, ``s3a://`` ..., read through ``checkpoint_files``)."""
    shown = files.describe(path)
    try:
        if not files.exists(path):
            raise StatusError(f"no such directory: {shown}; give the checkpoint directory of a run "
                              "(topology.run(checkpoint_location=...), trident-spark run --checkpoint)")
        if not files.is_dir(path):
            raise StatusError(f"{shown} is not a directory; give the checkpoint directory of a run "
                              "(topology.run(checkpoint_location=...), trident-spark run --checkpoint)")
        root: Location
        streams: dict[str, Location]
        if has_progress(path):
            root, streams = files.parent_of(path), {files.name_of(path): path}
        else:
            root = path
            streams = {name: files.join(path, name) for name in files.list_names(path)
                       if has_progress(files.join(path, name))}
        if not streams:
            waiting = [name for name in files.list_names(path)
                       if files.is_dir(files.join(path, name, "offsets"))]
    except OSError as exc:  # a remote filesystem that cannot be reached (CheckpointFilesError)
        raise StatusError(str(exc)) from None
    if not streams:
        hint = (f"; streams {', '.join(waiting)} have not finished a batch yet" if waiting else
                f"; give the directory passed as checkpoint_location (each stream writes "
                f"CHECKPOINT/<stream>/{PROGRESS_FILE} after its first batch)")
        raise StatusError(f"no {PROGRESS_FILE} in {shown} or its subdirectories{hint}")
    if stream is not None:
        if stream not in streams:
            raise StatusError(f"no stream {stream!r} in {files.describe(root)}; its streams: "
                              f"{', '.join(streams)}")
        streams = {stream: streams[stream]}
    return root, streams


def reported_errors(batches: list[Any]) -> str | None:
    """The note on what operations reported with ``collector.reportError`` in ``batches``: how
    many by each operator, and its last message (None when none reported any).

    Examples
    --------
    >>> reported_errors([{"txid": 4, "errors_reported": {"each(Parse)": 2},
    ...                   "last_errors": {"each(Parse)": "ValueError: no number in 'x'"}},
    ...                  {"txid": 5, "errors_reported": {"each(Parse)": 1}}])
    "3 errors reported by each(Parse) in the last 2 batches (the batches went on); last, in batch 4: \
ValueError: no number in 'x'"
    """
    from trident_spark.tuning.diagnosis import value_of

    counts: dict[str, int] = {}
    last: dict[str, tuple[int, str]] = {}
    for batch in batches:
        for operator, n in (value_of(batch, "errors_reported", None) or {}).items():
            counts[operator] = counts.get(operator, 0) + int(n)
        for operator, message in (value_of(batch, "last_errors", None) or {}).items():
            last[operator] = (int(value_of(batch, "txid", -1)), str(message))
    if not counts:
        return None
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    parts = []
    for operator, n in ranked:
        where = last.get(operator)
        said = f"; last, in batch {where[0]}: {where[1]}" if where else ""
        parts.append(f"{n} error{'s' if n != 1 else ''} reported by {operator}{said}")
    span = f"the last {len(batches)} batches" if len(batches) != 1 else "the last batch"
    first, rest = parts[0].split(";", 1) if ";" in parts[0] else (parts[0], "")
    shown = f"{first} in {span} (the batches went on)" + (f";{rest}" if rest else "")
    return "; ".join([shown, *parts[1:]])


class StatusReader:
    """Reads a checkpoint directory, and on each :meth:`views` what was appended since."""

    def __init__(self, path: Location, *, stream: str | None = None, window: int = 20) -> None:
        from trident_spark.cli.live import StreamHistory

        self.path, self.stream, self.window = path, stream, window
        self.root, dirs = locate(path, stream)
        self.dirs = dirs
        self.tails: dict[str, ProgressTail | WholeFileTail] = {
            name: progress_tail(files.join(d, PROGRESS_FILE)) for name, d in dirs.items()}
        self.histories = {name: StreamHistory(name) for name in dirs}

    def _rescan(self) -> None:
        from trident_spark.cli.live import StreamHistory

        if self.stream is not None or self.dirs.get(files.name_of(self.path)) == self.path:
            return  # one stream asked for
        try:
            _, dirs = locate(self.path)
        except (StatusError, OSError):
            return
        for name, directory in dirs.items():
            if name not in self.dirs:
                self.dirs[name] = directory
                self.tails[name] = progress_tail(files.join(directory, PROGRESS_FILE))
                self.histories[name] = StreamHistory(name)

    def views(self) -> list[Any]:
        from trident_spark.cli.live import StreamView
        from trident_spark.outage import describe_wait, read_wait

        self._rescan()
        run = read_run(self.root)
        if run and isinstance(run.get("streams"), list):  # the topology's order, others after
            order = {name: i for i, name in enumerate(run["streams"])}
            self.histories = dict(sorted(self.histories.items(), key=lambda kv: order.get(kv[0], len(order))))
        status, alive = run_status(run)
        trigger_ms = run.get("trigger_ms") if run else None
        cores = run.get("cores") if run else None
        views = []
        for name, history in self.histories.items():
            for batch in self.tails[name].read():
                history.append(batch)
            notes = []
            if self.tails[name].bad_lines:
                notes.append(f"{self.tails[name].bad_lines} unreadable lines in "
                             f"{files.describe(files.join(self.dirs[name], PROGRESS_FILE))} skipped")
            if self.tails[name].dropped:
                notes.append(f"progress before txid {history.first_txid} was rotated away: the figures "
                             f"cover the {len(progress_files(self.dirs[name]))} progress files kept in "
                             f"{files.describe(self.dirs[name])}")
            if run and run.get("trigger") and not trigger_ms:
                notes.append(f"trigger {run['trigger']}: batches run back to back, no interval to meet")
            errors = reported_errors(list(history.recent)[-self.window:])
            if errors:  # collector.reportError: the batches went on
                notes.append(errors)
            wait = read_wait(self.dirs[name]) if alive is not False else None
            if wait:  # a broker or store that does not answer (trident_spark.outage)
                notes.append(describe_wait(wait))
            diagnosis = history.diagnose(trigger_ms=trigger_ms, window=self.window, cores=cores)
            views.append(StreamView(diagnosis, status=status, pending=pending_batch(self.dirs[name], alive),
                                    notes=notes))
        return views

    def as_json(self, views: list[Any]) -> str:
        run = read_run(self.root)
        return json.dumps({"checkpoint": files.describe(self.root), "run": run,
                           "streams": [{"stream": v.diagnosis.stream, "status": v.status,
                                        "pending": v.pending, "notes": v.notes,
                                        "diagnosis": v.diagnosis.to_dict()} for v in views]}, default=str)


# --- showing it -----------------------------------------------------------------------------------
def follow(reader: StatusReader, console: Any, *, interval: float, refreshes: int | None = None,
           sleep: Callable[[float], None] | None = None, as_json: bool = False) -> int:
    """Show the view and refresh it every ``interval`` seconds until Ctrl-C (or ``refreshes`` times)."""
    from rich.live import Live

    from trident_spark.cli.live import render

    sleep = sleep or time.sleep
    done = 0
    try:
        if as_json:
            while True:
                print(reader.as_json(reader.views()), flush=True)
                if refreshes is not None and done >= refreshes:
                    return 0
                sleep(interval)
                done += 1
        with Live(render(reader.views()), console=console, auto_refresh=False) as live:
            while refreshes is None or done < refreshes:
                sleep(interval)
                live.update(render(reader.views()), refresh=True)
                done += 1
    except KeyboardInterrupt:
        pass
    return 0


def main(args: argparse.Namespace, console: Any = None) -> int:
    from rich.console import Console

    from trident_spark.cli.live import render

    try:
        # A plain path or file:// URI is read as a local directory; another URI through pyarrow.fs.
        local = files.local_path(args.checkpoint)
        reader = StatusReader(local if local is not None else args.checkpoint.rstrip("/"),
                              stream=args.stream, window=args.last)
    except StatusError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    console = console or Console(highlight=False)
    if args.follow:
        return follow(reader, console, interval=args.interval, as_json=args.format == "json")
    views = reader.views()
    if args.format == "json":
        print(reader.as_json(views))
    else:
        console.print(render(views))
    return 0
