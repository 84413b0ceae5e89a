"""``trident-spark``: entry point; each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Any

from trident_spark.cli import demo, drpc, drpc_server, query, run, status, tune

SUBCOMMANDS = (run, demo, query, status, tune, drpc_server, drpc)

EPILOG = """examples:
  trident-spark demo                                  word count on a local broker, start to end
  trident-spark run examples/wordcount.py             run the module's `topology`
  trident-spark run app.py:build --available-now      call build() and read what is there, then stop
  trident-spark query "sqlite:///tmp/wc.db?table=counts" cat dog
                                                      current values of two keys of a state
  trident-spark status checkpoints/wordcount --follow each stream's rates, bottleneck and verdict, live
  trident-spark drpc-server                           a DRPC server on 127.0.0.1:3772
  trident-spark drpc words "cat the dog jumped"       ask a running topology's DRPC function
  trident-spark tune app.py --sweep 16k..1m:7         batch sizes on a fixed slice: the knee, a report
  trident-spark run --help                            options of one subcommand
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
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=SubcommandParser)
    for module in SUBCOMMANDS:
        module.register(commands)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "handler", None):
        parser.print_help()
        return 2
    try:
        return int(args.handler(args) or 0)
    except KeyboardInterrupt:
        return 130


if __name__ == "__main__":
    sys.exit(main())
