"""``trident-spark run FILE[:ATTR]``: run a topology defined in a Python file."""

from __future__ import annotations

import argparse
import importlib.util
import re
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from trident_spark.checkpoint_files import checkpoint_location
from trident_spark.cli.stops import StopSignals
from trident_spark.errors import (
    BrokerUnavailableError,
    FailedException,
    StateConflictError,
    StateUnavailableError,
    TridentSparkError,
)
from trident_spark.runner import (
    DEFAULT_DRPC_PATH,
    DEFAULT_MAX_BATCH_RETRIES,
    DEFAULT_OUTAGE_BUDGET,
    DEFAULT_TRIGGER,
    RunSettings,
)
from trident_spark.runtime.failures import StreamFailedError

HELP = "run a topology defined in a Python file"
EPILOG = """examples:
  trident-spark run examples/wordcount.py
      run `topology` (or `build_topology()`) from the file, a batch every second, until Ctrl-C
  trident-spark run app.py:make_topology --available-now --checkpoint /tmp/app
      call make_topology(), read everything in the topics now, then stop
  trident-spark run app.py --trigger "500 milliseconds"
      Trident's batch emit interval of 500 ms
  trident-spark run examples/wordcount.py --explain
      print each query's operations and the Spark plan of one batch, then exit
  trident-spark run app.py --metrics-port 9108
      serve each batch's metrics for Prometheus on http://127.0.0.1:9108/metrics (docs/metrics.md)
  trident-spark run app.py --spark-metrics
      Spark's own metrics system for the streaming queries, on the Spark UI's /metrics/prometheus
  trident-spark run app.py --outage-budget 10m --restart-on-failure 5
      wait up to 10 minutes for a broker or store that does not answer; if the run still
      fails, restart it from its checkpoint (up to 5 times, 30 s apart)
"""
DEFAULT_ATTRS = ("topology", "build_topology")
#: How often the command looks for Ctrl-C or SIGTERM while the topology runs.
STOP_CHECK_SECONDS = 0.5

#: Failures a restart from the checkpoint can cure: a broker or store down for longer than the
#: outage budget, a batch that kept asking to be replayed or losing conditional writes, and Spark
#: failures that are not ours (an executor or the Python workers lost, ...). Others come back on
#: every restart (a wrong topology, a missing topic, lost or malformed data, a state that disagrees
#: with the checkpoint, a bug in an operation) and end the command at once.
RESTARTABLE: tuple[type[BaseException], ...] = (
    BrokerUnavailableError, StateUnavailableError, StateConflictError, FailedException, StreamFailedError)
DEFAULT_RESTART_DELAY = 30.0
#: ``--spark-metrics``: Spark's metrics system reports each streaming query (Spark's
#: ``spark.sql.streaming.metricsEnabled``), and the Spark UI serves the driver's metrics in
#: Prometheus' format at ``/metrics/prometheus`` and the executors' at
#: ``/metrics/executors/prometheus``.
SPARK_METRICS_CONF = {
    "spark.sql.streaming.metricsEnabled": "true",
    "spark.ui.prometheus.enabled": "true",
    "spark.metrics.conf.*.sink.prometheusServlet.class": "org.apache.spark.metrics.sink.PrometheusServlet",
    "spark.metrics.conf.*.sink.prometheusServlet.path": "/metrics/prometheus",
}


class TopologyFileError(TridentSparkError):
    """FILE[:ATTR] names no topology: the file does not exist, or has no such attribute."""


def register(commands: Any) -> None:
    parser = commands.add_parser("run", help=HELP, description=HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="FILE[:ATTR]",
                        help="Python file, and the TridentTopology (or function returning one) in it")
    parser.add_argument("--checkpoint",
                        help="checkpoint directory (default: the Spark conf's "
                             "spark.trident.checkpointLocation, else ./checkpoints/<file name>)")
    parser.add_argument("--trigger", default=DEFAULT_TRIGGER,
                        help="batch interval (default: the Spark conf's spark.trident.trigger, else "
                             "'1 second')")
    parser.add_argument("--available-now", action="store_true",
                        help="process what is available now, in limited batches, then stop")
    parser.add_argument("--master", help="Spark master URL (default: local on all cores)")
    add_conf_option(parser)
    parser.add_argument("--retries", type=int, default=DEFAULT_MAX_BATCH_RETRIES, metavar="N",
                        help="replays of a batch that raises FailedException before the stream fails "
                             "(default 3)")
    parser.add_argument("--outage-budget", type=_seconds, default=DEFAULT_OUTAGE_BUDGET, metavar="DURATION",
                        help="how long a stream waits for a broker or store that does not answer, "
                             "retrying with backoff, before it fails (e.g. 90s, 10m; default 3m)")
    parser.add_argument("--restart-on-failure", type=_count, default=0, metavar="N",
                        help="restart the topology from its checkpoint after a failure a restart can "
                             "cure (an outage past the budget, replays run out, a Spark failure), up "
                             "to N times (default 0: exit)")
    parser.add_argument("--restart-delay", type=_seconds, default=DEFAULT_RESTART_DELAY,
                        metavar="DURATION", help="wait before each restart (default 30s)")
    parser.add_argument("--metrics-port", type=int, metavar="PORT",
                        help="serve each batch's metrics for Prometheus on this port (off by default; "
                             "needs the metrics extra)")
    parser.add_argument("--metrics-host", default="127.0.0.1", metavar="HOST",
                        help="address the metrics endpoint listens on (default: 127.0.0.1; 0.0.0.0 for "
                             "a scraper on another machine)")
    parser.add_argument("--spark-metrics", action="store_true",
                        help="turn on Spark's metrics system for the streaming queries (input and processing "
                             "rates, latency, state rows), served by the Spark UI at /metrics/prometheus")
    parser.add_argument("--drpc", metavar="HOST:PORT",
                        help="DRPC server of the topology's DRPC streams (default: one started with the "
                             "run on 127.0.0.1:3772, or on a free port if that is taken; its token: "
                             "$TRIDENT_SPARK_DRPC_TOKEN)")
    parser.add_argument("--drpc-path", choices=("auto", "spark", "driver"), default=DEFAULT_DRPC_PATH,
                        help="how DRPC requests are answered: in the driver without a Spark job "
                             "(milliseconds; streams of Python operations, aggregations and state reads), "
                             "as Spark batches, or auto (the driver when the stream allows it)")
    parser.add_argument("--explain", action="store_true",
                        help="print the queries and their Spark plans instead of running")
    parser.set_defaults(handler=main)


def add_conf_option(parser: argparse.ArgumentParser) -> None:
    """``--conf KEY=VALUE``, repeatable, as spark-submit's: a Spark setting of the command's session."""
    parser.add_argument("--conf", action="append", type=spark_conf, default=[], metavar="KEY=VALUE",
                        help="a Spark setting, as spark-submit's --conf (repeat it: --conf "
                             "spark.sql.shuffle.partitions=8 --conf spark.executor.memory=2g)")


def spark_conf(text: str) -> tuple[str, str]:
    """``KEY=VALUE`` as a pair.

    Examples
    --------
    >>> spark_conf("spark.sql.shuffle.partitions=8")
    ('spark.sql.shuffle.partitions', '8')
    """
    key, sep, value = text.partition("=")
    if not sep or not key.strip():
        raise argparse.ArgumentTypeError(
            f"--conf {text!r}: write KEY=VALUE, e.g. spark.sql.shuffle.partitions=8")
    return key.strip(), value


def _seconds(text: str) -> float:
    from trident_spark.durations import parse_seconds

    try:
        return parse_seconds(text, what="duration")
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count (0, 1, 2, ...)")
    return value


def run_with_restarts(run_once: Callable[[], None], restarts: int, delay: float,
                      say: Callable[[str], None], sleep: Callable[[float], None] = time.sleep) -> int:
    """Call ``run_once`` (returns when the topology stops, raises when it fails); after a failure
    in :data:`RESTARTABLE` call it again, ``delay`` seconds later, up to ``restarts`` times in all.

    Each run resumes from the checkpoint: a batch that was interrupted is replayed with the same
    offsets, and the states' txids make the replay exact. Returns how many restarts were made;
    the last failure, or one a restart cannot cure, is raised.

    Examples
    --------
    >>> failures = [FailedException("store briefly down"), None]
    >>> def run_once():
    ...     failure = failures.pop(0)
    ...     if failure:
    ...         raise failure
    >>> run_with_restarts(run_once, restarts=3, delay=0, say=print)
    restart 1 of 3 in 0 s, from the checkpoint, after: store briefly down
    1
    """
    done = 0
    while True:
        try:
            run_once()
            return done
        except RESTARTABLE as exc:
            if done >= restarts:
                if restarts:
                    say(f"no restart left ({restarts} made, --restart-on-failure {restarts})")
                raise
            done += 1
            say(f"restart {done} of {restarts} in {delay:g} s, from the checkpoint, after: {exc}")
            sleep(delay)


def load_topology(target: str) -> Any:
    """Import FILE and return ATTR (a topology, or the result of calling it)."""
    path_text, _, attr = target.partition(":")
    path = Path(path_text)
    if not path.is_file():
        raise TopologyFileError(f"no such file: {path}")
    # A name of its own, so a file called like an installed module (types.py) cannot clash.
    name = "trident_spark_app_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    # Executors cannot import the user's file: ship its functions and classes by value. Registered
    # before the file runs, since a module-level topology may already encode the file's objects
    # (a FixedBatchSpout's tuples of the file's classes) while it is built.
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)
    spec.loader.exec_module(module)
    names = [attr] if attr else [a for a in DEFAULT_ATTRS if hasattr(module, a)]
    if not names or not hasattr(module, names[0]):
        wanted = attr or " or ".join(DEFAULT_ATTRS)
        raise TopologyFileError(f"{path} has no {wanted}; name it with {path}:ATTR")
    value = getattr(module, names[0])
    return value() if callable(value) and not hasattr(value, "run") else value


def main(args: argparse.Namespace) -> int:
    """Run the topology until it ends, fails, or Ctrl-C/SIGTERM stops it (then 130/143)."""
    with StopSignals() as stops:  # from the start: a signal while Spark starts is a clean stop too
        return _run(args, stops)


def _run(args: argparse.Namespace, stops: StopSignals) -> int:
    from rich.console import Console
    from rich.markup import escape

    from trident_spark.cli.live import LiveProgress
    from trident_spark.cli.waits import WaitWatcher
    from trident_spark.durations import trigger_millis
    from trident_spark.runtime.run_conf import resolve
    from trident_spark.runtime.session import local_session

    console = Console(stderr=True, soft_wrap=not sys.stderr.isatty())  # piped: whole lines
    topology = load_topology(args.target)
    conf = {**(SPARK_METRICS_CONF if args.spark_metrics else {}), **dict(args.conf)}
    spark = local_session(master=args.master, conf=conf or None)
    stops.take_back()  # from the SparkContext's own SIGINT handler
    if args.explain:
        print(topology.explain(spark))
        return 0
    # Each option not given takes the session's spark.trident.* setting, if it has one (run_conf).
    settings = resolve(RunSettings(args.checkpoint, "available_now" if args.available_now else args.trigger,
                                   max_batch_retries=args.retries, outage_budget=args.outage_budget,
                                   drpc=args.drpc, drpc_path=args.drpc_path), spark.conf)
    checkpoint = settings.checkpoint or str(Path("checkpoints") / Path(args.target.partition(":")[0]).stem)
    trigger = settings.trigger
    console.print(f"[bold]running[/] {args.target} (checkpoint {checkpoint}, trigger {trigger})")
    # a live view on a terminal, one line per batch otherwise
    progress = LiveProgress(console, trigger_ms=trigger_millis(trigger))
    exporter = None
    if args.metrics_port is not None:
        from trident_spark.tuning.prometheus import PrometheusExporter

        exporter = PrometheusExporter(args.metrics_port, args.metrics_host, trigger_millis(trigger)).start()
        console.print(f"metrics for Prometheus on {exporter.url}")

    def both(batch: Any) -> None:
        progress(batch)
        if exporter is not None:
            exporter.record(batch)

    on_progress = progress if exporter is None else both

    handle = None

    def run_once() -> None:
        nonlocal handle
        if handle is not None:  # a restart: the failed run's queries and listener go first
            handle.stop()
        if stops.requested:
            return
        handle = topology.run(checkpoint_location=checkpoint, trigger=trigger, spark=spark,
                              on_progress=on_progress, max_batch_retries=settings.max_batch_retries,
                              outage_budget=settings.outage_budget, drpc=settings.drpc,
                              drpc_path=settings.drpc_path)
        address = getattr(handle, "drpc_address", None)
        if address:
            host, _, port = address.rpartition(":")
            console.print(f"DRPC server {address}: ask it with [bold]trident-spark drpc FUNCTION ARGS "
                          f"--host {host} --port {port}[/]")
        # Wait in short steps, so a signal is noticed between two py4j calls, never inside one.
        while not stops.requested and not handle.awaitTermination(STOP_CHECK_SECONDS):
            pass
        if not stops.requested:
            handle.stop()  # the run's progress listener goes with it

    def say(line: str) -> None:
        console.print(f"[yellow]{escape(line)}[/]")

    # A failure leaves the live view and the watcher first, then is the command's one `error:` line
    # (cli/failure.py), its traceback with -v. Ctrl-C or SIGTERM: one `stopping` line, a clean
    # stop, and 130 or 143.
    try:
        with progress, WaitWatcher(checkpoint_location(checkpoint), console):
            run_with_restarts(run_once, args.restart_on_failure, args.restart_delay, say)
            if stops.requested:
                name = signal.Signals(stops.exit_status - 128).name
                console.print(f"stopping after {name} (a running batch is replayed on restart)")
                if handle is not None:
                    handle.stop()
    finally:
        if exporter is not None:
            exporter.stop()
    return stops.exit_status

