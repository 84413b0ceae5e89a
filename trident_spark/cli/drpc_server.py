"""``trident-spark drpc-server``: a DRPC server; topologies serve its requests, callers ask it."""

from __future__ import annotations

import argparse
import contextlib
import signal
import sys
import threading
from typing import Any

from trident_spark.drpc.server import DEFAULT_PORT

HELP = "run a DRPC server (running topologies answer its requests)"

EPILOG = """examples:
  trident-spark drpc-server                           on 127.0.0.1:3772
  trident-spark drpc-server --host 0.0.0.0 --port 4000 --request-timeout 60
  curl -d "cat the dog" http://127.0.0.1:3772/drpc/words    ask it over HTTP

A topology reaches it with newDRPCStream(function, "host:port") or run(drpc="host:port")
(trident-spark run FILE --drpc host:port). Nothing is authenticated: keep it on 127.0.0.1
or a private network.
"""


def register(commands: Any) -> None:
    server = commands.add_parser("drpc-server", help=HELP, description="Run a DRPC server until Ctrl-C.",
                                 epilog=EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    server.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    server.add_argument("--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})")
    server.add_argument("--request-timeout", type=float, default=600.0, metavar="SECONDS",
                        help="seconds a request waits for its answer (Storm's drpc.request.timeout.secs; "
                             "600)")
    server.add_argument("--lease", type=float, default=20.0, metavar="SECONDS",
                        help="seconds a topology that took requests may stay silent before they fail (20)")
    server.set_defaults(handler=main)


def main(args: argparse.Namespace) -> int:
    from trident_spark.drpc.server import DRPCServer

    server = DRPCServer(args.host, args.port, request_timeout=args.request_timeout, lease=args.lease)
    print(f"DRPC server on {server.address} (request timeout {args.request_timeout:g} s, lease "
          f"{args.lease:g} s); Ctrl-C stops it", file=sys.stderr, flush=True)

    def stop(signum: int, frame: Any) -> None:
        threading.Thread(target=server.shutdown, daemon=True).start()

    signal.signal(signal.SIGTERM, stop)
    with contextlib.suppress(KeyboardInterrupt):
        server.serve_forever()
    return 0
