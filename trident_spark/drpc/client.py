"""Clients of a DRPC server over HTTP: :class:`DRPCClient` for callers (Storm's ``DRPCClient``),
:class:`TopologyClient` for a topology that takes requests and posts their results."""

from __future__ import annotations

import http.client
import json
import select
import socket
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode

from trident_spark.drpc.board import Request, is_seconds
from trident_spark.drpc.server import DEFAULT_PORT, HEALTH, DRPCServer, in_process
from trident_spark.drpc.token import auth_headers, check_token, token_from_env
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError

#: Seconds a topology-side call (result, fail, heartbeat) waits for the server.
TOPOLOGY_CALL_TIMEOUT = 10.0
#: A body larger than this is sent after the server's ``100 Continue`` (``Expect:
#: 100-continue``): a server that refuses it (too large, wrong token) says so before it is sent.
EXPECT_CONTINUE_ABOVE = 65_536
#: Seconds to wait for ``100 Continue`` before sending the body anyway (a server that ignores it).
CONTINUE_WAIT = 2.0


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
    token : str or None
        The server's shared token (``trident-spark drpc-server --token-file``), sent as
        ``Authorization: Bearer``; None: ``$TRIDENT_SPARK_DRPC_TOKEN`` if set, else no token.

    Examples
    --------
    >>> client = DRPCClient("127.0.0.1", 3772, timeout=30)
    >>> client.address
    '127.0.0.1:3772'
    >>> client.execute("words", "cat dog the")  # doctest: +SKIP
    '[[5]]'
    """

    def __init__(self, host: str = "127.0.0.1", port: int = DEFAULT_PORT, timeout: float = 600.0,
                 token: str | None = None) -> None:
        if not is_seconds(timeout):
            raise InvalidArgumentError(
                f"DRPCClient(timeout={timeout!r}): give a finite number of seconds > 0"
            )
        if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
            raise InvalidArgumentError(f"DRPCClient(port={port!r}): give a TCP port number")
        self.host = host
        self.port = port
        self.timeout = float(timeout)
        self._token = token_from_env() if token is None else check_token(token, "DRPCClient(token=...)")

    @property
    def address(self) -> str:
        """``host:port`` of the server."""
        return f"{self.host}:{self.port}"

    def execute(self, function: str, args: str) -> str:
        """Run ``function`` with ``args``: the result as Trident's JSON (``'[[5]]'``).

        Raises :class:`~trident_spark.errors.DRPCExecutionException` with the server's message
        if the request failed or timed out, was refused (args over the server's
        ``max_request_bytes``, its queue for ``function`` full, a missing or wrong token: the
        message names the limit), or naming ``host:port`` if the server cannot be reached;
        never waits longer than ``timeout`` (and a second).
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
            self.host, self.port, "POST", path, args, self.timeout + 1.0, f"DRPC request {function!r}",
            self._token,
        )
        if status == 200:
            return text
        raise DRPCExecutionException(
            text or f"DRPC request {function!r} failed: HTTP {status} from {self.address}"
        )

    def close(self) -> None:
        """Nothing to release (each request opens its own connection); Storm's name."""

    @property
    def token(self) -> str | None:
        """The token it sends (None: none). A secret: never log it."""
        return self._token

    def __repr__(self) -> str:
        return f"DRPCClient({self.address}{', token' if self._token else ''})"


@dataclass(frozen=True)
class Taken:
    """A request a topology took: its id and args."""

    id: str
    args: str


class TopologyClient:
    """A topology's side of a DRPC server over HTTP: fetch requests, post results or failures.

    ``consumer`` names the run (one lease for all it took); ``token`` is the server's shared
    token, if it asks for one. Picklable: it holds an address (and the token).

    Examples
    --------
    >>> TopologyClient("127.0.0.1:3772", "run-1").address
    '127.0.0.1:3772'
    """

    def __init__(self, address: str, consumer: str, token: str | None = None) -> None:
        self.host, self.port = parse_address(address)
        self.consumer = consumer
        self._token = None if token is None else check_token(token, "TopologyClient(token=...)")

    @property
    def token(self) -> str | None:
        """The token it sends (None: none). A secret: never log it."""
        return self._token

    def __repr__(self) -> str:
        return f"TopologyClient({self.address}, {self.consumer!r}{', token' if self._token else ''})"

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
            self._token,
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
        """Renew this consumer's lease on what it took; a refusal (HTTP 401: the token) raises
        :class:`~trident_spark.errors.DRPCExecutionException` with the server's message."""
        status, text = _call(
            self.host,
            self.port,
            "POST",
            f"/topology/heartbeat?{urlencode({'consumer': self.consumer})}",
            "",
            TOPOLOGY_CALL_TIMEOUT,
            "DRPC heartbeat",
            self._token,
        )
        if status != 200:
            raise DRPCExecutionException(f"DRPC heartbeat to {self.address}: HTTP {status}: {text}")

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
            self._token,
        )
        if status == 413 and kind == "result":  # the caller gets why, not a timeout
            return self._answer("fail", request_id, f"DRPC request failed: its result was refused: {text}")
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


def topology_side(address: str, consumer: str, token: str | None = None) -> BoardClient | TopologyClient:
    """The topology's side of the DRPC server at ``address``: its board when the server runs in
    this process (no HTTP per request, no token needed), else its HTTP API with ``token``."""
    server = in_process(address)
    if server is not None:
        return BoardClient(server, consumer)
    return TopologyClient(address, consumer, token)


def is_drpc_server(host: str, port: int, timeout: float = 2.0) -> bool:
    """Whether a trident-spark DRPC server answers at ``host:port``."""
    try:
        status, text = _call(host, port, "GET", "/health", "", timeout, "DRPC health")
    except DRPCExecutionException:
        return False
    return status == 200 and text == HEALTH


def check_server(address: str, token: str | None, where: str) -> None:
    """Raise :class:`DRPCExecutionException` (saying why, naming ``where``) unless a trident-spark
    DRPC server answers at ``address`` and takes ``token`` (a topology-side call: a heartbeat of
    a consumer named for the check)."""
    host, port = parse_address(address, where)
    if not is_drpc_server(host, port):
        raise DRPCExecutionException(
            f"{where}: no trident-spark DRPC server answers at {host}:{port}; start one with "
            f"`trident-spark drpc-server --port {port}` or give another address"
        )
    try:
        TopologyClient(f"{host}:{port}", "token-check", token).heartbeat()
    except DRPCExecutionException as exc:
        raise DRPCExecutionException(f"{where}: {exc}") from None


def _call(
    host: str, port: int, method: str, path: str, body: str, timeout: float, what: str,
    token: str | None = None,
) -> tuple[int, str]:
    """One HTTP exchange: ``(status, text)``; a connection error or a timeout raises
    :class:`DRPCExecutionException` naming ``host:port``. A body over
    ``EXPECT_CONTINUE_ABOVE`` bytes waits for the server's ``100 Continue``, so that a refusal
    comes before it is sent."""
    connection = http.client.HTTPConnection(host, port, timeout=timeout)
    data = body.encode("utf-8")
    headers: dict[str, Any] = (
        {"Content-Type": "text/plain; charset=utf-8"} if data or method == "POST" else {}
    )
    headers.update(auth_headers(token))
    try:
        if method == "POST" and len(data) > EXPECT_CONTINUE_ABOVE:
            response = _post_after_continue(connection, path, data, headers)
        else:
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


def _post_after_continue(connection: http.client.HTTPConnection, path: str, data: bytes,
                         headers: dict[str, Any]) -> http.client.HTTPResponse:
    """POST with ``Expect: 100-continue``: the body goes only after ``100 Continue`` (or
    ``CONTINUE_WAIT`` seconds of silence); a final answer before it (413, 401) is the response."""
    connection.putrequest("POST", path)
    for name, value in {**headers, "Content-Length": str(len(data)), "Expect": "100-continue"}.items():
        connection.putheader(name, value)
    connection.endheaders()
    sock = connection.sock
    readable, _, _ = select.select([sock], [], [], CONTINUE_WAIT)
    if readable:
        head = sock.recv(12, socket.MSG_PEEK)
        if head.split(b" ")[1:2] != [b"100"]:
            return connection.getresponse()  # refused before the body: not sent
        interim = b""
        while not interim.endswith(b"\r\n\r\n"):  # the interim answer's own lines, no more
            byte = sock.recv(1)
            if not byte:
                break
            interim += byte
    connection.send(data)
    return connection.getresponse()


__all__ = ["BoardClient", "DRPCClient", "Taken", "TopologyClient", "check_server", "is_drpc_server",
           "parse_address", "topology_side"]
