"""``trident-spark drpc-server`` (a DRPC server) and ``trident-spark drpc FUNCTION ARGS`` (ask one)."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from trident_spark.drpc.server import DEFAULT_PORT
from trident_spark.errors import TridentSparkError

SERVER_EPILOG = """examples:
  trident-spark drpc-server                           on 127.0.0.1:3772
  trident-spark drpc-server --host 0.0.0.0 --port 4000 --request-timeout 60
  curl -d "cat the dog" http://127.0.0.1:3772/drpc/words    ask it over HTTP

A topology reaches it with newDRPCStream(function, "host:port") or run(drpc="host:port")
(trident-spark run FILE --drpc host:port). Nothing is authenticated: keep it on 127.0.0.1
or a private network.
"""

CALL_EPILOG = """examples:
  trident-spark drpc words "cat the dog jumped"
  trident-spark drpc reach "foo.com/blog/1" --port 4000 --timeout 30

prints the result (Trident's JSON, e.g. [[5]]); exit status 0 answered, 1 the request failed,
timed out or the server cannot be reached (one line on stderr says which)
"""


def register(commands: Any) -> None:
    server = commands.add_parser(
        "drpc-server",
        help="run a DRPC server (topologies serve its requests)",
        description="Run a DRPC server until Ctrl-C.",
        epilog=SERVER_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    server.add_argument(
        "--request-timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="seconds a request waits for its answer (Storm's drpc.request.timeout.secs; 600)",
    )
    server.add_argument(
        "--lease",
        type=float,
        default=20.0,
        metavar="SECONDS",
        help="seconds a topology that took requests may stay silent before they fail (20)",
    )
    server.set_defaults(handler=serve)

    call = commands.add_parser(
        "drpc",
        help="ask a DRPC function of a running topology",
        description="Ask a DRPC server to run FUNCTION with ARGS; print the result.",
        epilog=CALL_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    call.add_argument("function", metavar="FUNCTION")
    call.add_argument("args", metavar="ARGS", help="the request's string (quote it)")
    call.add_argument("--host", default="127.0.0.1", help="the DRPC server's host (default 127.0.0.1)")
    call.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"its port (default {DEFAULT_PORT})")
    call.add_argument(
        "--timeout",
        type=float,
        default=600.0,
        metavar="SECONDS",
        help="seconds to wait for the answer (default 600)",
    )
    call.set_defaults(handler=execute)


def serve(args: argparse.Namespace) -> int:
    from trident_spark.drpc.server import DRPCServer

    try:
        server = DRPCServer(args.host, args.port, request_timeout=args.request_timeout, lease=args.lease)
    except TridentSparkError as exc:
        print(f"trident-spark drpc-server: {exc}", file=sys.stderr)
        return 1
    print(
        f"DRPC server on {server.address} (request timeout {args.request_timeout:g} s, lease "
        f"{args.lease:g} s); Ctrl-C stops it",
        file=sys.stderr,
        flush=True,
    )

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0


def execute(args: argparse.Namespace) -> int:
    from trident_spark.drpc.client import DRPCClient

    try:
        print(DRPCClient(args.host, args.port, timeout=args.timeout).execute(args.function, args.args))
    except TridentSparkError as exc:
        print(f"trident-spark drpc: {exc}", file=sys.stderr)
        return 1
    return 0
