"""``trident-spark services start [SERVICE...]``: local Kafka, Redis, Elasticsearch, PostgreSQL, in the
foreground.

Each service comes from where the tests take it (:mod:`trident_spark.local.services`): an
address in the environment, a Docker container, or a local process on a free port of
127.0.0.1. Their addresses are printed on stdout as ``export`` lines a shell can paste or
``eval``; the command then waits, and Ctrl-C or SIGTERM stops what it started.

Examples
--------
>>> export_line("kafka", "127.0.0.1:40311")
'export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:40311'
>>> export_line("postgres", "postgresql://postgres@127.0.0.1:40211/postgres")
'export POSTGRES_URL=postgresql://postgres@127.0.0.1:40211/postgres'
"""

from __future__ import annotations

import argparse
import shlex
import signal
import sys
import threading
from collections.abc import Callable
from contextlib import ExitStack
from types import FrameType
from typing import Any

from trident_spark.cli.failure import INTERRUPTED
from trident_spark.errors import InvalidArgumentError

HELP = "start local Kafka, Redis, Elasticsearch and PostgreSQL and print their addresses"
EPILOG = """examples:
  trident-spark services start kafka
      a Kafka broker on a free port of 127.0.0.1; paste the printed export line in another shell
  trident-spark services start
      all four: kafka redis elasticsearch postgres
  eval "$(trident-spark services start kafka &)"  (or: ... > services.env &  then  . services.env)

The services run until Ctrl-C or SIGTERM, then stop and their data goes with them. An address
already set in the environment (KAFKA_BOOTSTRAP_SERVERS, REDIS_URL, ELASTICSEARCH_URL,
POSTGRES_URL) is checked and printed, never started or stopped.
"""
SERVICES = ("kafka", "redis", "elasticsearch", "postgres")
#: The exit status after SIGTERM (128 + 15), as shells report it.
TERMINATED = 143


class UnknownServiceError(InvalidArgumentError):
    """``services start`` named a service it does not know."""


def export_line(name: str, address: str) -> str:
    """The shell line that points the tests, the demo and the examples at ``address``."""
    return f"export {_variable(name)}={shlex.quote(address)}"


def _variable(name: str) -> str:
    from trident_spark.local.services import ENV_VARS, POSTGRES_ENV

    return POSTGRES_ENV if name == "postgres" else ENV_VARS[name]  # type: ignore[index]


def register(commands: Any) -> None:
    parser = commands.add_parser("services", help=HELP, description=HELP, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("action", choices=("start",),
                        help="start: start the services in the foreground until Ctrl-C or SIGTERM")
    parser.add_argument("names", nargs="*", metavar="SERVICE",
                       help=f"any of {', '.join(SERVICES)} (default: all)")
    parser.add_argument("--timeout", type=float, default=60.0, metavar="SECONDS",
                       help="how long to wait for each service to answer (default 60)")
    parser.set_defaults(handler=main)


def _starter(name: str) -> Callable[..., Any]:
    from trident_spark.local import start_elasticsearch, start_kafka, start_postgres, start_redis

    starters: dict[str, Callable[..., Any]] = {
        "kafka": start_kafka, "redis": start_redis, "elasticsearch": start_elasticsearch,
        "postgres": start_postgres}
    return starters[name]


def main(args: argparse.Namespace) -> int:
    from trident_spark.state.redaction import redact_url

    names = list(dict.fromkeys(args.names or SERVICES))
    unknown = [n for n in names if n not in SERVICES]
    if unknown:
        raise UnknownServiceError(f"services start: no service {', '.join(map(repr, unknown))}; "
                                  f"choose from {', '.join(SERVICES)}")
    stop = threading.Event()
    received: list[int] = []

    def on_signal(number: int, frame: FrameType | None) -> None:
        received.append(number)
        stop.set()

    previous = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        with ExitStack() as started:
            for name in names:
                if stop.is_set():
                    break
                service = started.enter_context(_starter(name)(timeout=args.timeout))
                if service.provider == "env":  # already in the environment: nothing to export
                    print(f"{name}: {redact_url(service.address)} (from ${_variable(name)})",
                          file=sys.stderr, flush=True)
                    continue
                print(export_line(name, service.address), flush=True)
                print(f"{name}: {redact_url(service.address)} ({service.provider})", file=sys.stderr,
                      flush=True)
            if not stop.is_set():
                print("running; Ctrl-C or SIGTERM stops them", file=sys.stderr, flush=True)
                while not stop.wait(0.5):
                    pass
            print("stopping", file=sys.stderr, flush=True)
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
    return TERMINATED if received and received[0] == signal.SIGTERM else INTERRUPTED
