"""``trident-spark``: entry point; each subcommand lives in its own module."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from trident_spark.cli import demo, run

SUBCOMMANDS = (run, demo)

EPILOG = """examples:
  trident-spark demo                                  word count on a local broker, start to end
  trident-spark run examples/wordcount.py             run the module's `topology`
  trident-spark run app.py:build --available-now      call build() and read what is there, then stop
  trident-spark run --help                            options of one subcommand
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="trident-spark",
        description="Storm Trident topologies on Spark Structured Streaming.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
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
