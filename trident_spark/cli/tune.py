"""``trident-spark tune FILE[:ATTR] --sweep ...``: find a topology's batch-size knee on real data;
``trident-spark tune --size-for RATE``: size a cluster for a rate from the scale model."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from trident_spark.cli.run import add_conf_option

HELP = ("sweep batch sizes on a fixed slice of the topics; report the knee and the settings "
        "(or, with --size-for, size a cluster for a rate)")
EPILOG = """examples:
  trident-spark tune examples/wordcount.py --sweep 16k,32k,64k,128k,256k
      run the topology once per max_fetch_bytes on the same records; write ./tune-report-<time>/
  trident-spark tune app.py:build --sweep 8k..1m:8 --records 200000 --repeat 2
      eight sizes from 8k to 1m (a factor ~2 apart) on 200,000 records, each size twice
  trident-spark tune app.py --sweep auto --from '{"events": {"0": 5000, "1": 5000}}'
      sizes chosen from the slice, which starts at the given offsets
  trident-spark tune --size-for 1m
      source partitions, executor cores and store nodes for 1,000,000 records/s, from the
      constants measured by bench/scale.py on this project's 2-core machine (docs/scaling.md)
  trident-spark tune --size-for 250k --constants mine.json --batch-interval-ms 2000 --format json
      the same from your own constants (bench/scale.py writes bench/results/scale-constants-*.json),
      with a 2 s trigger, as JSON

Each size is one availableNow run with a fresh checkpoint under the report directory, reading
the slice from its start: from the earliest offsets (or --from) to the high watermark now,
at most --records in all and --max-batches batches per run. The first batch of every run is
the warm-up and is not counted. States the topology writes are replaced by empty scratch
copies for each run (SQLite: a file in the report directory); Redis and Elasticsearch states
need --allow-state-writes (a scratch key prefix / index per run, in the same store).

The report directory holds report.md, results.json, throughput_latency.png and
stage_breakdown.png.

--size-for runs nothing: it applies the scale model (rows/s = min(partitions x read rate,
cores x per-core rate, store nodes x write rate / keys per record), a fixed cost per batch,
Little's Law) and says which term binds first. See docs/scaling.md.
"""


def register(commands: Any) -> None:
    parser = commands.add_parser("tune", help=HELP, description=HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="FILE[:ATTR]", nargs="?",
                        help="Python file, and the TridentTopology (or function returning one) in it "
                             "(not with --size-for)")
    parser.add_argument("--sweep", default="auto", metavar="SIZES",
                        help="per-partition max_fetch_bytes to try: 16k,32k,64k; a geometric range "
                             "8k..1m:8 (8 sizes); or auto (default)")
    parser.add_argument("--records", type=int, metavar="N",
                        help="at most N records in the slice, spread over the partitions (default: all)")
    parser.add_argument("--from", dest="start", metavar="OFFSETS",
                        help='where the slice starts, as JSON {"topic": {"partition": offset}} '
                             "(default: the earliest offsets)")
    parser.add_argument("--repeat", type=int, default=1, metavar="R", help="runs per size (default 1)")
    parser.add_argument("--max-batches", type=int, default=10, metavar="B",
                        help="most batches per run, the warm-up included (default 10)")
    parser.add_argument("--stream", help="the stream to measure when the topology has several "
                                         "(default: the one with the most records)")
    parser.add_argument("--out", help="report directory (default: ./tune-report-<date>-<time>)")
    parser.add_argument("--master", help="Spark master URL (default: local on all cores)")
    add_conf_option(parser)
    parser.add_argument("--allow-state-writes", action="store_true",
                        help="let runs write Redis/Elasticsearch states, each under a scratch key "
                             "prefix / index in the same store")
    parser.add_argument("--no-warmup", action="store_true",
                        help="skip the short unmeasured run that starts Spark's Python workers first")
    parser.add_argument("--run-timeout", type=float, default=600.0, metavar="S",
                        help="seconds one run may take before the sweep fails (default 600)")
    sizing = parser.add_argument_group("cluster sizing (the scale model; runs nothing)")
    sizing.add_argument("--size-for", metavar="RATE",
                        help="records/s to size a cluster for: 250000, 250k or 1.5m")
    sizing.add_argument("--constants", metavar="FILE",
                        help="measured constants, a JSON file of bench/scale.py "
                             "(default: the ones measured on this project's 2-core machine)")
    sizing.add_argument("--batch-interval-ms", type=float, default=1000.0, metavar="MS",
                        help="trigger interval to size for (default 1000)")
    sizing.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                        help="how to print the sizing (default table)")
    parser.set_defaults(handler=main)


def parse_rate(text: str) -> float:
    """Records/s from ``250000``, ``250k`` or ``1.5m``.

    Examples
    --------
    >>> parse_rate("250k"), parse_rate("1.5m"), parse_rate("1200")
    (250000.0, 1500000.0, 1200.0)
    """
    from trident_spark.errors import InvalidArgumentError

    scale = {"k": 1e3, "m": 1e6}.get(text.strip()[-1:].lower(), 1.0)
    digits = text.strip()[:-1] if scale != 1.0 else text.strip()
    try:
        value = float(digits) * scale
    except ValueError:
        value = float("nan")
    if not value > 0 or value == float("inf"):
        raise InvalidArgumentError(f"tune --size-for {text!r}: give the records per second as a number > 0, "
                                   f"e.g. --size-for 250000, 250k or 1.5m")
    return value


def size(args: argparse.Namespace) -> int:
    """``tune --size-for``: the scale model's cluster for a rate, printed as a table, markdown or JSON."""
    from rich.console import Console

    from trident_spark.errors import InvalidArgumentError
    from trident_spark.tuning.cluster_sizing import size_cluster
    from trident_spark.tuning.scale_model import MEASURED_HERE, ScaleConstants

    if args.target:
        print(f"error: tune {args.target} --size-for: --size-for sizes a cluster from measured constants "
              f"and runs no topology; leave out {args.target}, or leave out --size-for to sweep it",
              file=sys.stderr)
        return 2
    try:  # bad arguments: one `error:` line and status 2, as argparse's own
        rate = parse_rate(args.size_for)
        constants = ScaleConstants.from_file(args.constants) if args.constants else MEASURED_HERE
        sizing = size_cluster(rate, constants, batch_interval_ms=args.batch_interval_ms)
    except InvalidArgumentError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.format == "json":
        print(json.dumps({"settings": sizing.settings(), "binds_first": sizing.binds_first.resource,
                          "max_records_per_s": sizing.max_records_per_s, "batch_ms": sizing.batch_ms,
                          "latency_ms": sizing.latency_ms, "formulas": list(sizing.formulas),
                          "constants": constants.to_dict()}, indent=2))
    elif args.format == "markdown":
        print(sizing.to_markdown(), end="")
    else:
        console = Console()
        console.print(sizing)
        console.print(sizing.explain(), highlight=False, markup=False)
        console.print(f"constants: {constants.measured or args.constants}", highlight=False, markup=False)
    return 0


def main(args: argparse.Namespace) -> int:
    from rich.console import Console

    from trident_spark.cli.run import load_topology
    from trident_spark.runtime.session import local_session
    from trident_spark.tuning.report import summarize, write_report
    from trident_spark.tuning.sweep import SweepError, SweepSettings, parse_sweep, run_sweep

    if args.size_for is not None:
        return size(args)
    if not args.target:
        print("error: tune: give FILE[:ATTR] to sweep a topology's batch sizes, or --size-for RATE to size "
              "a cluster (trident-spark tune --help)", file=sys.stderr)
        return 2
    console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())  # piped: whole lines
    try:
        sizes = parse_sweep(args.sweep)
        start = _offsets(args.start)
    except SweepError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    out = Path(args.out or f"tune-report-{time.strftime('%Y%m%d-%H%M%S')}")
    settings = SweepSettings(sizes=sizes, out_dir=out, records=args.records, start=start, repeat=args.repeat,
                             max_batches=args.max_batches, stream=args.stream,
                             allow_state_writes=args.allow_state_writes, run_timeout_s=args.run_timeout,
                             warmup=not args.no_warmup)
    topology = load_topology(args.target)
    spark = local_session(master=args.master, conf=dict(args.conf) or None)
    with _ProgressBar(console) as bar:  # an error: the command's `error:` line (cli/failure.py)
        sweep = run_sweep(topology, spark, settings, bar)
    results = summarize(sweep, target=args.target, settings={
        "sweep": args.sweep, "records": args.records, "repeat": args.repeat,
        "max_batches": args.max_batches, "from": start})
    report = write_report(results, out)
    _print_summary(Console(), results)  # the result: stdout (the progress went to stderr)
    print(report)
    return 0


def _offsets(text: str | None) -> dict[str, dict[str, int]] | None:
    from trident_spark.tuning.sweep import SweepError

    if not text:
        return None
    try:
        data = json.loads(text)
        return {str(t): {str(p): int(o) for p, o in parts.items()} for t, parts in data.items()}
    except (ValueError, AttributeError, TypeError) as exc:
        raise SweepError(f'--from {text!r}: give JSON offsets, e.g. {{"events": {{"0": 5000, "1": 0}}}} '
                         f"({exc})") from exc


class _ProgressBar:
    """The sweep's runs as a rich progress bar: runs done, and the records of the current run."""

    def __init__(self, console: Any) -> None:
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self._progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                  TimeElapsedColumn(), console=console, transient=False)
        self._runs: Any = None
        self._records: Any = None

    def __enter__(self) -> Any:
        self._progress.__enter__()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._progress.__exit__(*exc)

    # SweepObserver's methods (duck-typed)
    def warmup_started(self, size: int, records: int) -> None:
        from trident_spark.tuning.sweep import size_label

        self._records = self._progress.add_task(f"  warm-up at {size_label(size)} (not measured)",
                                                total=records)

    def run_started(self, index: int, total: int, size: int, repeat: int, records: int) -> None:
        from trident_spark.tuning.sweep import size_label

        if self._runs is None:
            self._runs = self._progress.add_task("runs", total=total)
        if self._records is None:
            self._records = self._progress.add_task("records", total=records)
        label = size_label(size)
        self._progress.update(self._runs, completed=index,
                              description=f"run {index + 1}/{total}: {label} (repeat {repeat + 1})")
        self._progress.reset(self._records, total=records, description=f"  records at {size_label(size)}")

    def batch_done(self, batch: Any) -> None:
        if self._records is not None:
            self._progress.advance(self._records, batch.rows)

    def run_finished(self, result: Any) -> None:
        self._progress.advance(self._runs, 1)
        self._progress.update(self._records, completed=result.records)


def _print_summary(console: Any, results: dict[str, Any]) -> None:
    from rich.table import Table

    knee = results.get("knee") or {}
    table = Table(title=f"batch sizes of {results['stream']}")
    for column in ("size", "regime", "records/batch", "p50 ms", "p95 ms", "records/s"):
        table.add_column(column, justify="right")
    for s in results["sizes"]:
        label = f"[bold red]{s['label']} knee[/]" if knee.get("label") == s["label"] else s["label"]
        table.add_row(label, s.get("regime", ""), f"{s['records_per_batch']:,.0f}",
                      f"{s['latency_p50_ms']:,.0f}", f"{s['latency_p95_ms']:,.0f}", f"{s['throughput']:,.0f}")
    console.print(table)
    if "error" in knee:
        console.print(f"[yellow]{knee['error']}[/]", markup=True, highlight=False)
    else:
        console.print(knee["reason"], highlight=False, markup=False)
        for note in knee.get("notes", []):
            console.print(f"note: {note}", highlight=False, markup=False)
    bottleneck = results.get("bottleneck")
    if bottleneck:
        console.print(f"principal bottleneck at the knee: {bottleneck['title'] or bottleneck['kind']}: "
                      f"{bottleneck['explanation']}", highlight=False, markup=False)
    rec = results.get("recommendation")
    if rec:
        spout = rec["kafka_spout"]
        console.print(f"recommended: KafkaSpout(max_fetch_bytes={spout['max_fetch_bytes']}, "
                      f"max_offsets_per_trigger={spout['max_offsets_per_trigger']}), "
                      f"trigger={rec['trigger']!r}", highlight=False, markup=False)
    console.print("report:", highlight=False)
