"""``trident-spark``: entry point; each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from trident_spark.cli import demo, drpc, drpc_server, query, run, services, status, tune
from trident_spark.cli.failure import run_handler

SUBCOMMANDS = (run, demo, query, status, tune, drpc_server, drpc, services)

EPILOG = """examples:
  trident-spark demo                                  word count on a local broker, start to end
  trident-spark run examples/wordcount.py             run the module's `topology`
  trident-spark run app.py:build --available-now      call build() and read what is there, then stop
  trident-spark query "sqlite:///tmp/wc.db?table=counts" cat dog
                                                      current values of two keys of a state
  trident-spark status checkpoints/wordcount --follow each stream's rates, bottleneck and verdict, live
  trident-spark drpc-server                           a DRPC server on 127.0.0.1:3772
  trident-spark drpc words "cat the dog jumped"       ask a running topology's DRPC function
  trident-spark services start kafka                  a local broker until Ctrl-C; prints its export line
  trident-spark tune app.py --sweep 16k..1m:7         batch sizes on a fixed slice: the knee, a report
  trident-spark run --help                            options of one subcommand
  trident-spark -v run app.py                         the traceback of an error, Spark's whole log

Tables and results go to stdout; progress, warnings and errors to stderr. An error prints
one line `error: ...` and exits with status 1 (2 for bad arguments, 130 after Ctrl-C);
-v adds its traceback.
"""


class SubcommandParser(argparse.ArgumentParser):
    """A subcommand's parser: options may come between positionals (``query URL --format json k1 k2``).

    Plain argparse fills a ``nargs="*"`` positional once, before the first option,
    and rejects the positionals after it.
    """

    _parsing = False

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:
        if self._parsing:  # parse_known_intermixed_args calls back in: parse plainly
            return super().parse_known_args(args, namespace)
        self._parsing = True
        try:
            return self.parse_known_intermixed_args(args, namespace)
        finally:
            self._parsing = False


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trident-spark",
        description="Storm Trident topologies on Spark Structured Streaming.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=version_text())
    add_global_options(parser, argparse.SUPPRESS)  # the command's defaults are set below
    parser.set_defaults(verbose=False, log_level=None)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=SubcommandParser)
    for module in SUBCOMMANDS:
        module.register(commands)
    for subcommand in commands.choices.values():  # -v and --log-level after the subcommand too
        add_global_options(subcommand, argparse.SUPPRESS)
    return parser


def add_global_options(parser: argparse.ArgumentParser, default: Any) -> None:
    """``-v`` and ``--log-level``, accepted before and after the subcommand."""
    from trident_spark.cli.logs import LEVELS

    parser.add_argument("-v", "--verbose", action="store_true", default=default,
                        help="on an error, print its traceback; log trident-spark at INFO; "
                             "leave Spark's log4j output as Spark configures it")
    parser.add_argument("--log-level", metavar="LEVEL", type=str.upper, choices=LEVELS, default=default,
                        help=f"level of trident-spark's log records on stderr: {', '.join(LEVELS)} "
                             "(default WARNING, INFO with -v)")


def version_text() -> str:
    """``trident-spark X.Y.Z (PySpark A.B.C, Python D.E.F)``: the package's one version."""
    import platform
    from importlib.metadata import PackageNotFoundError, version

    import trident_spark

    try:
        pyspark = version("pyspark")
    except PackageNotFoundError:
        pyspark = "not installed"
    python = platform.python_version()
    return f"trident-spark {trident_spark.__version__} (PySpark {pyspark}, Python {python})"


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    from trident_spark.cli import logs

    with logs.configured(verbose=args.verbose, level_name=args.log_level):
        return run_handler(args.handler, args, verbose=args.verbose)


if __name__ == "__main__":
    sys.exit(main())
