"""``trident-spark drpc FUNCTION ARGS``: ask a DRPC function of a running topology, print the answer."""

from __future__ import annotations

import argparse
from typing import Any

from trident_spark.drpc.server import DEFAULT_PORT
from trident_spark.drpc.token import TOKEN_ENV

HELP = "ask a DRPC function of a running topology"

EPILOG = f"""examples:
  trident-spark drpc words "cat the dog jumped"
  trident-spark drpc reach "foo.com/blog/1" --port 4000 --timeout 30 --token-file ~/.drpc-token

prints the result (Trident's JSON, e.g. [[5]]); exit status 0 answered, 1 the request failed,
timed out, was refused (too large, queue full, missing or wrong token) or the server cannot be
reached (one line on stderr says which). A server that asks for a token gets the one in
--token-file PATH, else ${TOKEN_ENV}.
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
    token = call.add_mutually_exclusive_group()
    token.add_argument("--token-file", metavar="PATH",
                       help=f"send the token in PATH (mode 600); default: ${TOKEN_ENV} if set")
    token.add_argument("--token", metavar="TOKEN",
                       help="the token itself (visible to every local user in `ps`: prefer --token-file)")
    call.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from trident_spark.drpc.client import DRPCClient
    from trident_spark.drpc.token import read_token_file

    token = read_token_file(args.token_file) if args.token_file else args.token
    # A failed or timed-out request raises DRPCExecutionException: one `error: ...` line, exit status 1.
    client = DRPCClient(args.host, args.port, timeout=args.timeout, token=token)
    print(client.execute(args.function, args.args))
    return 0
