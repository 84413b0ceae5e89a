"""``trident-spark run FILE[:ATTR]``: run a topology defined in a Python file."""

from __future__ import annotations

import argparse
import importlib.util
import re
import sys
from pathlib import Path
from typing import Any

from trident_spark.errors import StateError, TridentSparkError

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
"""
DEFAULT_ATTRS = ("topology", "build_topology")


def register(commands: Any) -> None:
    parser = commands.add_parser("run", help=HELP, description=HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("target", metavar="FILE[:ATTR]",
                        help="Python file, and the TridentTopology (or function returning one) in it")
    parser.add_argument("--checkpoint", help="checkpoint directory (default: ./checkpoints/<file name>)")
    parser.add_argument("--trigger", default="1 second", help="batch interval (default: '1 second')")
    parser.add_argument("--available-now", action="store_true",
                        help="process what is available now, in limited batches, then stop")
    parser.add_argument("--master", help="Spark master URL (default: local on all cores)")
    parser.add_argument("--retries", type=int, default=3, metavar="N",
                        help="replays of a batch that raises FailedException before the stream fails "
                             "(default 3)")
    parser.add_argument("--explain", action="store_true",
                        help="print the queries and their Spark plans instead of running")
    parser.set_defaults(handler=main)


def load_topology(target: str) -> Any:
    """Import FILE and return ATTR (a topology, or the result of calling it)."""
    path_text, _, attr = target.partition(":")
    path = Path(path_text)
    if not path.is_file():
        raise SystemExit(f"trident-spark run: no such file: {path}")
    # A name of its own, so a file called like an installed module (types.py) cannot clash.
    name = "trident_spark_app_" + re.sub(r"\W", "_", path.stem)
    spec = importlib.util.spec_from_file_location(name, path)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(path.parent.resolve()))
    spec.loader.exec_module(module)
    # Executors cannot import the user's file: ship its functions and classes by value.
    from pyspark import cloudpickle

    cloudpickle.register_pickle_by_value(module)
    names = [attr] if attr else [a for a in DEFAULT_ATTRS if hasattr(module, a)]
    if not names or not hasattr(module, names[0]):
        wanted = attr or " or ".join(DEFAULT_ATTRS)
        raise SystemExit(f"trident-spark run: {path} has no {wanted}; name it with {path}:ATTR")
    value = getattr(module, names[0])
    return value() if callable(value) and not hasattr(value, "run") else value


def main(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.markup import escape

    from trident_spark.cli.live import LiveProgress
    from trident_spark.durations import trigger_millis
    from trident_spark.runtime.session import local_session

    console = Console(stderr=True)
    topology = load_topology(args.target)
    checkpoint = args.checkpoint or str(Path("checkpoints") / Path(args.target.partition(":")[0]).stem)
    spark = local_session(master=args.master)
    if args.explain:
        print(topology.explain(spark))
        return 0
    trigger = "available_now" if args.available_now else args.trigger
    console.print(f"[bold]running[/] {args.target} (checkpoint {checkpoint}, trigger {trigger})")
    # a live view on a terminal, one line per batch otherwise
    progress = LiveProgress(console, trigger_ms=trigger_millis(trigger))
    handle = None
    try:
        with progress:
            handle = topology.run(checkpoint_location=checkpoint, trigger=trigger, spark=spark,
                                  on_progress=progress, max_batch_retries=args.retries)
            handle.awaitTermination()
    except (TridentSparkError, StateError) as exc:
        console.print(f"[red]error:[/] {escape(str(exc))}")  # messages show lists: [txid, val]
        return 1
    except KeyboardInterrupt:
        console.print("stopping (the running batch will be replayed on restart)")
        if handle is not None:
            handle.stop()
    return 0

