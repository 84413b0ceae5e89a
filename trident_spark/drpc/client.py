"""Clients of a DRPC server over HTTP: :class:`DRPCClient` for callers (Storm's ``DRPCClient``),
:class:`TopologyClient` for a topology that takes requests and posts their results."""

from __future__ import annotations

import http.client
import json
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from trident_spark.drpc.board import Request
from trident_spark.drpc.server import DEFAULT_PORT, HEALTH, DRPCServer, in_process
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError

#: Seconds a topology-side call (result, fail, heartbeat) waits for the server.
TOPOLOGY_CALL_TIMEOUT = 10.0


def parse_address(address: str, where: str = "DRPC") -> tuple[str, int]:
    """``"host:port"`` (or ``"host"``: port 3772) as ``(host, port)``.

    Examples
    --------
    >>> parse_address("127.0.0.1:3772"), parse_address("drpc.internal")
    (('127.0.0.1', 3772), ('drpc.internal', 3772))
    """
    if not isinstance(address, str) or not address.strip():
        raise InvalidArgumentError(f"{where}: give the DRPC server as 'host:port', got {address!r}")
    host, sep, port = address.strip().rpartition(":")
    if not sep:
        return port, DEFAULT_PORT
    if not port.isdigit() or not host:
        raise InvalidArgumentError(f"{where}: give the DRPC server as 'host:port', got {address!r}")
    return host.strip("[]"), int(port)


class DRPCClient:
    """Storm's ``DRPCClient``: ask a DRPC server to run a function of a topology.

    Parameters
    ----------
    host : str, default "127.0.0.1"
    port : int, default 3772
    timeout : float, default 600
        Seconds :meth:`execute` waits at most for a result (the server stops waiting then too).

    Examples
    --------
    >>> client = DRPCClient("127.0.0.1", 3772, timeout=30)
    >>> client.address
    '127.0.0.1:3772'
    >>> client.execute("words", "cat dog the")  # doctest: +SKIP
    '[[5]]'
    """

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, timeout: float = 600.0) -> None:
        if isinstance(timeout, bool) or not isinstance(timeout, int | float) or timeout <= 0:
            raise InvalidArgumentError(f"DRPCClient(timeout={timeout!r}): give a number of seconds > 0")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise InvalidArgumentError(f"DRPCClient(port={port!r}): give a TCP port number")
        self.host = host
        self.port = port
        self.timeout = float(timeout)

    @property
    def address(self) -> str:
        """``host:port`` of the server."""
        return f"{self.host}:{self.port}"

    def execute(self, function: str, args: str) -> str:
        """Run ``function`` with ``args``: the result as Trident's JSON (``'[[5]]'``).

        Raises :class:`~trident_spark.errors.DRPCExecutionException` with the server's message
        if the request failed or timed out, or naming ``host:port`` if the server cannot be
        reached; never waits longer than ``timeout`` (and a second).
        """
        if not isinstance(function, str) or not function:
            raise InvalidArgumentError(
                f"DRPCClient.execute: the function name must be a non-empty string, got {function!r}"
            )
        if not isinstance(args, str):
            raise InvalidArgumentError(
                f"DRPCClient.execute({function!r}): args must be a string, got {type(args).__name__}"
            )
        path = f"/drpc/{quote(function, safe='')}?{urlencode({'timeout': f'{self.timeout:g}'})}"
        status, text = _call(
            self.host, self.port, "POST", path, args, self.timeout + 1.0, f"DRPC request {function!r}"
        )
        if status == 200:
            return text
        raise DRPCExecutionException(
            text or f"DRPC request {function!r} failed: HTTP {status} from {self.address}"
        )

    def close(self) -> None:
        """Nothing to release (each request opens its own connection); Storm's name."""

    def __repr__(self) -> str:
        return f"DRPCClient({self.address})"


@dataclass(frozen=True)
class Taken:
    """A request a topology took: its id and args."""

    id: str
    args: str


class TopologyClient:
    """A topology's side of a DRPC server over HTTP: fetch requests, post results or failures.

    ``consumer`` names the run (one lease for all it took). Picklable: it holds an address.

    Examples
    --------
    >>> TopologyClient("127.0.0.1:3772", "run-1").address
    '127.0.0.1:3772'
    """

    def __init__(self, address: str, consumer: str) -> None:
        self.host, self.port = parse_address(address)
        self.consumer = consumer

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def fetch(self, function: str, wait: float) -> Taken | None:
        """Take the next request of ``function`` (long-polling up to ``wait`` s), or None."""
        query = urlencode({"function": function, "consumer": self.consumer, "wait": f"{wait:g}"})
        status, text = _call(
            self.host,
            self.port,
            "POST",
            f"/topology/fetch?{query}",
            "",
            wait + TOPOLOGY_CALL_TIMEOUT,
            f"DRPC fetch of {function!r}",
        )
        if status == 204:
            return None
        if status != 200:
            raise DRPCExecutionException(
                f"DRPC fetch of {function!r} from {self.address}: HTTP {status}: {text}"
            )
        found = json.loads(text)
        return Taken(str(found["id"]), str(found["args"]))

    def heartbeat(self) -> None:
        """Renew this consumer's lease on what it took."""
        _call(
            self.host,
            self.port,
            "POST",
            f"/topology/heartbeat?{urlencode({'consumer': self.consumer})}",
            "",
            TOPOLOGY_CALL_TIMEOUT,
            "DRPC heartbeat",
        )

    def result(self, request_id: str, result: str) -> bool:
        """Post a request's result; False if the server no longer knows it."""
        return self._answer("result", request_id, result)

    def fail(self, request_id: str, message: str) -> bool:
        """Fail a request with ``message``; False if the server no longer knows it."""
        return self._answer("fail", request_id, message)

    def _answer(self, kind: str, request_id: str, body: str) -> bool:
        status, text = _call(
            self.host,
            self.port,
            "POST",
            f"/topology/{kind}?{urlencode({'id': request_id})}",
            body,
            TOPOLOGY_CALL_TIMEOUT,
            f"DRPC {kind}",
        )
        if status not in (200, 404):
            raise DRPCExecutionException(f"DRPC {kind} to {self.address}: HTTP {status}: {text}")
        return status == 200


class BoardClient:
    """The topology's side of a DRPC server in this process: its board, called directly (what
    :class:`~trident_spark.drpc.client.TopologyClient` does over HTTP, without the HTTP).

    Examples
    --------
    >>> from trident_spark.drpc.server import DRPCServer
    >>> with DRPCServer("127.0.0.1", 0) as server:
    ...     request = server.board.submit("words", "cat")
    ...     side = topology_side(server.address, "run-1/words")
    ...     taken = side.fetch("words", 0.1)
    ...     side.result(taken.id, "[[1]]"), server.board.wait(request), type(side).__name__
    (True, '[[1]]', 'BoardClient')
    """

    def __init__(self, server: DRPCServer, consumer: str) -> None:
        self.board = server.board
        self.address = server.address
        self.consumer = consumer

    def fetch(self, function: str, wait: float) -> Request | None:
        """Take a request of ``function`` (waiting up to ``wait`` s); renews the lease."""
        return self.board.fetch(function, self.consumer, wait)

    def heartbeat(self) -> None:
        self.board.heartbeat(self.consumer)

    def result(self, request_id: str, result: str) -> bool:
        return self.board.result(request_id, result)

    def fail(self, request_id: str, message: str) -> bool:
        return self.board.fail(request_id, message)


def topology_side(address: str, consumer: str) -> BoardClient | TopologyClient:
    """The topology's side of the DRPC server at ``address``: its board when the server runs in
    this process (no HTTP per request), else its HTTP API."""
    server = in_process(address)
    if server is not None:
        return BoardClient(server, consumer)
    return TopologyClient(address, consumer)


def is_drpc_server(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether a trident-spark DRPC server answers at ``host:port``."""
    try:
        status, text = _call(host, port, "GET", "/health", "", timeout, "DRPC health")
    except DRPCExecutionException:
        return False
    return status == 200 and text == HEALTH


def _call(
    host: str, port: int, method: str, path: str, body: str, timeout: float, what: str
) -> tuple[int, str]:
    """One HTTP exchange: ``(status, text)``; a connection error or a timeout raises
    :class:`DRPCExecutionException` naming ``host:port``."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    data = body.encode("utf-8")
    headers: dict[str, Any] = (
        {"Content-Type": "text/plain; charset=utf-8"} if data or method == "POST" else {}
    )
    try:
        connection.request(method, path, body=data if method == "POST" else None, headers=headers)
        response = connection.getresponse()
        return response.status, response.read().decode("utf-8", errors="replace")
    except TimeoutError as exc:
        raise DRPCExecutionException(
            f"{what}: the DRPC server {host}:{port} gave no answer within {timeout:g} s"
        ) from exc
    except ConnectionRefusedError as exc:
        raise DRPCExecutionException(
            f"{what}: no DRPC server at {host}:{port} (connection refused); start "
            "one with `trident-spark drpc-server` or check the address"
        ) from exc
    except (OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "strerror", None) or type(exc).__name__
        raise DRPCExecutionException(
            f"{what}: the DRPC server {host}:{port} cannot be reached or closed the connection ({reason})"
        ) from exc
    finally:
        connection.close()


__all__ = ["BoardClient", "DRPCClient", "Taken", "TopologyClient", "is_drpc_server", "parse_address",
           "topology_side"]
