"""``trident-spark drpc FUNCTION ARGS``: ask a DRPC function of a running topology, print the answer."""

from __future__ import annotations

import argparse
from typing import Any

from trident_spark.drpc.server import DEFAULT_PORT

HELP = "ask a DRPC function of a running topology"

EPILOG = """examples:
  trident-spark drpc words "cat the dog jumped"
  trident-spark drpc reach "foo.com/blog/1" --port 4000 --timeout 30

prints the result (Trident's JSON, e.g. [[5]]); exit status 0 answered, 1 the request failed,
timed out or the server cannot be reached (one line on stderr says which)
"""


def register(commands: Any) -> None:
    call = commands.add_parser("drpc", help=HELP,
                               description="Ask a DRPC server to run FUNCTION with ARGS; print the result.",
                               epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    call.add_argument("function", metavar="FUNCTION")
    call.add_argument("args", metavar="ARGS", help="the request's string (quote it)")
    call.add_argument("--host", default="127.0.0.1", help="the DRPC server's host (default 127.0.0.1)")
    call.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"its port (default {DEFAULT_PORT})")
    call.add_argument("--timeout", type=float, default=600.0, metavar="SECONDS",
                      help="seconds to wait for the answer (default 600)")
    call.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from trident_spark.drpc.client import DRPCClient

    # A failed or timed-out request raises DRPCExecutionException: one `error: ...` line, exit status 1.
    print(DRPCClient(args.host, args.port, timeout=args.timeout).execute(args.function, args.args))
    return 0
