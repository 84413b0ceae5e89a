"""The DRPC server: callers ask over HTTP, topologies take the requests and post the results.

Storm's DRPC server, as an HTTP server (``trident-spark drpc-server``; :class:`LocalDRPC`
runs one in the process). Every request waits in a :class:`~trident_spark.drpc.board.RequestBoard`.

The caller's side (any HTTP client; :class:`~trident_spark.drpc.client.DRPCClient`):

* ``POST /drpc/<function>`` with the args as the body (UTF-8; a ``Content-Length`` or a chunked
  body), or ``GET /drpc/<function>/<args>`` (URL-encoded UTF-8), Storm's two forms. Optional
  query parameter ``timeout`` (a finite number of seconds > 0, at most the server's
  ``request_timeout``). Answers ``200`` with the result (Trident's JSON, e.g. ``[[5]]``),
  ``500`` with the error message if the request failed (its batch failed, or the topology
  serving it stopped answering), ``504`` if it timed out.

The topology's side (:class:`~trident_spark.drpc.client.TopologyClient` over HTTP; an
in-driver consumer calls the same methods of :attr:`DRPCServer.board` directly):

* fetch -- ``POST /topology/fetch?function=F&consumer=C&wait=S``: takes the oldest pending
  request of ``F`` for consumer ``C`` (long-polling up to ``S`` seconds); ``200`` with
  ``{"id": ..., "args": ...}``, or ``204`` when there is none. Board: ``fetch(F, C, wait)``.
* heartbeat -- ``POST /topology/heartbeat?consumer=C``: ``C`` still works on what it took.
  Board: ``heartbeat(C)``. Every fetch is a heartbeat too. A consumer silent for longer than
  ``lease`` seconds loses its requests: their callers get an error naming the function.
* result -- ``POST /topology/result?id=ID`` with the result JSON as the body: ``200``, or
  ``404`` if the server no longer knows the request (timed out, caller gone, server
  restarted): the topology ignores that. Board: ``result(ID, json)``.
* fail -- ``POST /topology/fail?id=ID`` with the message as the body: ``200`` or ``404``.
  Board: ``fail(ID, message)``.
* ``GET /health`` answers ``200`` ``trident-spark drpc`` (no token needed).

Limits and refusals (each answered with a message that names the limit, never a dropped
connection):

* a body over ``max_request_bytes`` (1 MB, Storm's ``drpc.max_buffer_size``): ``413``, before
  the body is read (a client that sends ``Expect: 100-continue`` never sends it); the
  connection is then closed;
* ``max_queue`` requests of a function already waiting to be taken (128, Storm's
  ``drpc.queue.size``): ``503``;
* a bad ``Content-Length``, a malformed chunked body, a body or path that is not UTF-8, a
  ``timeout`` or ``wait`` that is not a finite number of seconds: ``400``;
* a connection that sends nothing for ``idle_timeout`` seconds (30) is closed; at most
  ``max_connections`` connections (1024) are served at once, one more gets ``503``;
* with a ``token``, every request but ``/health`` that does not carry it: ``401``
  (:mod:`trident_spark.drpc.token`).

A caller that disconnects while it waits drops its request. Bind it to 127.0.0.1 (the default):
see docs/drpc.md for what it trusts.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from trident_spark.drpc.board import (
    DEFAULT_MAX_QUEUE,
    TICK,
    QueueFull,
    RequestBoard,
    RequestTimedOut,
    is_seconds,
)
from trident_spark.drpc.http_body import BodyRefused, declared_length, decode_utf8, read_body
from trident_spark.drpc.token import TOKEN_ENV, check_token, presented_token, token_matches
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError, TridentSparkError

log = logging.getLogger(__name__)

#: Storm's ``drpc.http.port`` is 3774 and its Thrift port 3772; ours speaks HTTP on 3772,
#: the port Storm's clients are given.
DEFAULT_PORT = 3772
HEALTH = "trident-spark drpc"
#: Longest long-poll a fetch may ask for, in seconds.
MAX_FETCH_WAIT = 30.0
#: Largest body the server reads (Storm's ``drpc.max_buffer_size``: 1 MB).
DEFAULT_MAX_REQUEST_BYTES = 1_048_576
#: Seconds a connection may send nothing before the server closes it.
DEFAULT_IDLE_TIMEOUT = 30.0
#: Connections served at once (each holds a thread while it is open).
DEFAULT_MAX_CONNECTIONS = 1024
#: Seconds a refused connection is still read from (and the bytes dropped) so that its client
#: reads the answer before the close, as web servers' lingering close does.
LINGER_SECONDS = 1.0
#: Seconds between two warnings of the same kind (refused tokens, connections turned away).
WARN_EVERY = 10.0


class DRPCServer:
    """An HTTP DRPC server (see the module's docstring for its API).

    Parameters
    ----------
    host : str, default "127.0.0.1"
    port : int, default 3772
        0 picks a free port (:attr:`port` tells which).
    request_timeout : float, default 600
        Seconds a caller waits at most (Storm's ``drpc.request.timeout.secs``).
    lease : float, default 20
        Seconds a topology that took requests may stay silent before they fail.
    max_request_bytes : int, default 1048576
        Largest body read (the args, a result); more is ``413`` (Storm's ``drpc.max_buffer_size``).
    max_queue : int, default 128
        Requests of one function that may wait to be taken; more is ``503`` (Storm's
        ``drpc.queue.size``).
    idle_timeout : float, default 30
        Seconds a connection may send nothing (while the server waits for its request) before
        it is closed. A caller waiting for its answer is not idle.
    max_connections : int, default 1024
        Connections served at once; one more is answered ``503`` and closed.
    token : str or None
        A shared token every request but ``/health`` must carry (``Authorization: Bearer``);
        None: no token asked. Never logged nor shown.

    Examples
    --------
    >>> with DRPCServer(port=0) as server:
    ...     request = server.board.submit("words", "cat")
    ...     taken = server.board.fetch("words", consumer="me")
    ...     _ = server.board.result(taken.id, "[[1]]")
    ...     server.board.wait(request)
    '[[1]]'
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = DEFAULT_PORT,
        request_timeout: float = 600.0,
        lease: float = 20.0,
        *,
        max_request_bytes: int = DEFAULT_MAX_REQUEST_BYTES,
        max_queue: int = DEFAULT_MAX_QUEUE,
        idle_timeout: float = DEFAULT_IDLE_TIMEOUT,
        max_connections: int = DEFAULT_MAX_CONNECTIONS,
        token: str | None = None,
    ) -> None:
        for name, count in (("max_request_bytes", max_request_bytes), ("max_connections", max_connections)):
            if isinstance(count, bool) or not isinstance(count, int) or count < 1:
                raise InvalidArgumentError(f"DRPCServer({name}={count!r}): give a whole number >= 1")
        if not is_seconds(idle_timeout):
            raise InvalidArgumentError(
                f"DRPCServer(idle_timeout={idle_timeout!r}): give a finite number of seconds > 0"
            )
        self._token = None if token is None else check_token(token, "DRPCServer(token=...)")
        self.board = RequestBoard(request_timeout, lease, max_queue)
        try:
            self._http = _HTTPServer((host, port), _Handler)
        except OSError as exc:
            raise InvalidArgumentError(
                f"DRPC server: cannot listen on {host}:{port}: {exc.strerror or exc}; "
                "give another --port (or stop what listens there)"
            ) from exc
        self.host = host
        self.port = int(self._http.server_address[1])
        self._http.configure(self.board, self.address, max_request_bytes, float(idle_timeout),
                             max_connections, self._token)
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._serving = False

    @property
    def address(self) -> str:
        """``host:port`` where it listens."""
        return f"{self.host}:{self.port}"

    @property
    def token(self) -> str | None:
        """The shared token requests must carry (None: none asked). A secret: never log it."""
        return self._token

    @property
    def max_request_bytes(self) -> int:
        """Largest body the server reads."""
        return self._http.max_request_bytes

    @property
    def connections(self) -> int:
        """Connections open now (each served by a thread)."""
        return self._http.open_connections()

    def start(self) -> DRPCServer:
        """Serve in background threads; returns self."""
        _IN_PROCESS[self.address] = self
        if not self._threads:
            self._threads = [
                threading.Thread(
                    target=self._http.serve_forever,
                    kwargs={"poll_interval": 0.2},
                    name=f"drpc-server-{self.port}",
                    daemon=True,
                ),
                threading.Thread(target=self._reap, name=f"drpc-leases-{self.port}", daemon=True),
            ]
            for thread in self._threads:
                thread.start()
        return self

    def serve_forever(self) -> None:
        """Serve in this thread until :meth:`shutdown` (or Ctrl-C)."""
        reaper = threading.Thread(target=self._reap, name=f"drpc-leases-{self.port}", daemon=True)
        reaper.start()
        self._serving = True
        try:
            self._http.serve_forever(poll_interval=0.2)
        finally:
            self._serving = False
            self._stop.set()
            self._http.server_close()
            self.board.close("the DRPC server was shut down")

    def _reap(self) -> None:
        while not self._stop.wait(TICK * 5):
            failed = self.board.expire()
            if failed:
                log.warning(
                    "DRPC server %s: %d requests failed, their topology stopped answering",
                    self.address,
                    failed,
                )

    def shutdown(self) -> None:
        """Stop serving; callers still waiting get an error."""
        if _IN_PROCESS.get(self.address) is self:
            del _IN_PROCESS[self.address]
        if self._serving:  # serve_forever() in another thread: it closes what it served
            self._http.shutdown()
            return
        if self._stop.is_set() and not self._threads:
            return
        self._stop.set()
        if self._threads:
            self._http.shutdown()
        self._http.server_close()
        for thread in self._threads:
            thread.join(timeout=5)
        self._threads = []
        self.board.close("the DRPC server was shut down")

    def __enter__(self) -> DRPCServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"DRPCServer({self.address}{', token' if self._token else ''})"


class _Refused(TridentSparkError):  # noqa: N818 (an answer)
    """Answer ``status`` with ``message``; ``close``: the connection cannot serve another request."""

    def __init__(self, status: HTTPStatus, message: str, close: bool = False,
                 headers: dict[str, str] | None = None) -> None:
        super().__init__(message)
        self.status, self.message, self.close, self.headers = status, message, close, headers or {}


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    board: RequestBoard
    address: str
    max_request_bytes: int
    idle_timeout: float
    token: str | None

    def configure(self, board: RequestBoard, address: str, max_request_bytes: int, idle_timeout: float,
                  max_connections: int, token: str | None) -> None:
        self.board, self.address, self.token = board, address, token
        self.max_request_bytes, self.idle_timeout = max_request_bytes, idle_timeout
        self.max_connections = max_connections
        self._open = 0
        self._open_lock = threading.Lock()
        self._warned: dict[str, float] = {}

    def open_connections(self) -> int:
        with self._open_lock:
            return self._open

    def warn(self, kind: str, message: str, *args: Any) -> None:
        """Log a warning, at most one of each ``kind`` every ``WARN_EVERY`` seconds."""
        now = time.monotonic()
        with self._open_lock:
            if now - self._warned.get(kind, -WARN_EVERY) < WARN_EVERY:
                return
            self._warned[kind] = now
        log.warning(message, *args)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self._open_lock:
            full = self._open >= self.max_connections
            if not full:
                self._open += 1
        if full:
            self._turn_away(request)
            return
        try:
            super().process_request(request, client_address)
        except BaseException:
            self._closed()
            raise

    def process_request_thread(self, request: Any, client_address: Any) -> None:
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._closed()

    def _closed(self) -> None:
        with self._open_lock:
            self._open -= 1

    def _turn_away(self, request: socket.socket) -> None:
        """One connection too many: a short 503 (never blocking the accepting thread), then close."""
        self.warn("full", "DRPC server %s: %d connections open, its limit: one more turned away",
                  self.address, self.max_connections)
        text = (f"the DRPC server {self.address} serves {self.max_connections} connections at once, "
                "its limit; try again later").encode()
        answer = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain; charset=utf-8\r\n"
                  b"Connection: close\r\nRetry-After: 1\r\nContent-Length: %d\r\n\r\n%s" % (len(text), text))
        try:
            request.setblocking(False)
            request.send(answer)
        except OSError:
            pass
        self.shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        log.debug("DRPC server %s: a connection from %s ended in an error", self.address, client_address,
                  exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        self.connection.settimeout(self.server.idle_timeout)  # no byte for this long: closed

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("DRPC %s: " + format, self.address_string(), *args)

    # --- requests ----------------------------------------------------------------------------
    def do_GET(self) -> None:
        self._answer(self._get)

    def do_POST(self) -> None:
        self._answer(self._post)

    def handle_expect_100(self) -> bool:
        """``Expect: 100-continue``: refuse before the body is sent when the request cannot be
        taken (wrong token, a body over the limit), else let the client send it."""
        try:
            if urlsplit(self.path).path != "/health":
                self._check_token()
            declared_length(self.headers, self.server.max_request_bytes, self._what())
        except (_Refused, BodyRefused) as refused:
            self._refuse(refused)
            return False
        return super().handle_expect_100()

    def _answer(self, route: Any) -> None:
        try:
            route()
        except (_Refused, BodyRefused) as refused:
            self._refuse(refused)
        except OSError:
            raise  # the connection: an idle timeout (the handler closes it) or the caller left
        except Exception as exc:  # never a dropped connection: say it, log it
            log.warning("DRPC server %s: %s %s failed: %s: %s", self.server.address, self.command,
                        urlsplit(self.path).path[:80], type(exc).__name__, exc)
            self._send(HTTPStatus.INTERNAL_SERVER_ERROR,
                       f"the DRPC server {self.server.address} failed on this request "
                       f"({type(exc).__name__}); see its log", close=True)

    def _get(self) -> None:
        path, params = self._target()
        if path == "/health":
            self._body()
            self._send(HTTPStatus.OK, HEALTH)
            return
        self._check_token()
        self._body()  # a GET with a body: read within the limit, so the next request parses
        parts = path.split("/", 3)
        if len(parts) == 4 and parts[1] == "drpc" and parts[2]:
            self._execute(_unquote(parts[2], "the function name"), _unquote(parts[3], "the args"), params)
            return
        self._send(
            HTTPStatus.NOT_FOUND,
            f"unknown path {path[:80]!r}; ask GET /drpc/<function>/<args> or "
            "POST /drpc/<function> with the args as the body",
        )

    def _post(self) -> None:
        path, params = self._target()
        self._check_token()
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "drpc" and parts[2]:
            function = _unquote(parts[2], "the function name")
            self._execute(function, self._body(f"DRPC request {function!r}: the args"), params)
        elif path == "/topology/fetch":
            self._body()
            self._fetch(params)
        elif path == "/topology/heartbeat":
            self._body()
            self.server.board.heartbeat(params.get("consumer", ""))
            self._send(HTTPStatus.OK, "")
        elif path in ("/topology/result", "/topology/fail"):
            request_id = params.get("id", "")
            kind = path.rsplit("/", 1)[1]
            body = self._body(f"the {kind} of DRPC request {request_id[:40]!r}")
            board = self.server.board
            known = board.result(request_id, body) if kind == "result" else board.fail(request_id, body)
            self._send(
                HTTPStatus.OK if known else HTTPStatus.NOT_FOUND,
                "" if known else f"unknown request {request_id[:40]!r} (timed out, or its caller left)",
            )
        else:
            self._body()
            self._send(HTTPStatus.NOT_FOUND, f"unknown path {path[:80]!r}")

    def _what(self) -> str:
        """What a request's body is, for messages."""
        path = urlsplit(self.path).path
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "drpc" and parts[2]:
            return f"DRPC request {unquote(parts[2])[:80]!r}: the args"
        return f"the body of {path[:80]}"

    def _target(self) -> tuple[str, dict[str, str]]:
        split = urlsplit(self.path)
        return split.path, {k: v[-1] for k, v in parse_qs(split.query).items()}

    def _body(self, what: str | None = None) -> str:
        data = read_body(self.rfile, self.headers, self.server.max_request_bytes, what or self._what())
        return decode_utf8(data, what or self._what())

    def _check_token(self) -> None:
        expected = self.server.token
        if expected is None:
            return
        presented = presented_token(self.headers)
        if token_matches(expected, presented):
            return
        why = "carries none" if presented is None else "carries a wrong one"
        route = urlsplit(self.path).path.split("/")[:3]
        self.server.warn("token", "DRPC server %s: refused %s %s from %s: the request %s (token not logged)",
                         self.server.address, self.command, "/".join(route)[:80], self.client_address[0], why)
        raise _Refused(
            HTTPStatus.UNAUTHORIZED,
            f"the DRPC server {self.server.address} asks for its token and this request {why}; send it as "
            f"'Authorization: Bearer <token>' (DRPCClient(token=...), trident-spark drpc --token-file, "
            f"run(drpc_token=...) or ${TOKEN_ENV})",
            close=True,
            headers={"WWW-Authenticate": 'Bearer realm="trident-spark drpc"'},
        )

    def _execute(self, function: str, args: str, params: dict[str, str]) -> None:
        board = self.server.board
        timeout = _seconds(params, "timeout", f"DRPC request {function!r}")
        try:
            request = board.submit(function, args)
        except QueueFull as exc:
            raise _Refused(HTTPStatus.SERVICE_UNAVAILABLE, str(exc), headers={"Retry-After": "1"}) from None
        except InvalidArgumentError as exc:
            raise _Refused(HTTPStatus.BAD_REQUEST, str(exc)) from None
        try:
            result = board.wait(request, timeout, gone=self._gone)
        except DRPCExecutionException as exc:
            if self._gone():
                return
            timed_out = isinstance(exc, RequestTimedOut)
            self._send(
                HTTPStatus.GATEWAY_TIMEOUT if timed_out else HTTPStatus.INTERNAL_SERVER_ERROR, str(exc)
            )
            return
        self._send(HTTPStatus.OK, result, "application/json")

    def _fetch(self, params: dict[str, str]) -> None:
        function, consumer = params.get("function", ""), params.get("consumer", "")
        if not function or not consumer:
            raise _Refused(HTTPStatus.BAD_REQUEST, "fetch needs ?function=F&consumer=C")
        wait = min(MAX_FETCH_WAIT, _seconds(params, "wait", f"fetch of {function!r}", zero=True) or 0.0)
        request = self.server.board.fetch(function, consumer, wait)
        if request is None:
            self._send(HTTPStatus.NO_CONTENT, "")
        else:
            self._send(
                HTTPStatus.OK, json.dumps({"id": request.id, "args": request.args}), "application/json"
            )

    # --- answers -----------------------------------------------------------------------------
    def _gone(self) -> bool:
        """Whether the caller closed its connection (readable with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _refuse(self, refused: _Refused | BodyRefused) -> None:
        if isinstance(refused, BodyRefused):
            self._send(refused.status, refused.message, close=refused.unread)
        else:
            self._send(refused.status, refused.message, close=refused.close, headers=refused.headers)

    def _send(self, status: HTTPStatus, text: str, content_type: str = "text/plain; charset=utf-8", *,
              close: bool = False, headers: dict[str, str] | None = None) -> None:
        """Answer; ``close``: bytes of the request may be unread, so the connection closes after
        the answer (read from for a moment first, so that the client gets the answer)."""
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            if status != HTTPStatus.NO_CONTENT:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            if close:
                self.send_header("Connection", "close")
            self.end_headers()
            if data:
                self.wfile.write(data)
        except OSError:  # the caller left
            self.close_connection = True
            return
        if close:
            self.close_connection = True
            self._linger()

    def _linger(self) -> None:
        """Drop what the client still sends for a moment (at most ``max_request_bytes``) before the
        close: closing with unread bytes resets the connection, and the client could lose the
        answer. The dropped bytes are never kept."""
        try:
            self.wfile.flush()
            self.connection.shutdown(socket.SHUT_WR)
            deadline = time.monotonic() + LINGER_SECONDS
            left = self.server.max_request_bytes
            while left > 0:
                wait = deadline - time.monotonic()
                if wait <= 0:
                    break
                self.connection.settimeout(wait)
                chunk = self.connection.recv(min(65536, left))
                if not chunk:
                    break
                left -= len(chunk)
        except OSError:
            pass


def _unquote(text: str, what: str) -> str:
    try:
        return unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise _Refused(HTTPStatus.BAD_REQUEST, f"{what} in the path: not URL-encoded UTF-8") from None


def _seconds(params: dict[str, str], name: str, where: str, zero: bool = False) -> float | None:
    """Query parameter ``name`` as seconds (None when absent); 400 naming it when it is not a
    finite number > 0 (>= 0 with ``zero``)."""
    if name not in params:
        return None
    text = params[name]
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not is_seconds(value, zero=zero):
        raise _Refused(
            HTTPStatus.BAD_REQUEST,
            f"{where}: query parameter {name}={text[:40]!r} is not a finite number of seconds "
            f"{'>= 0' if zero else '> 0'}; give e.g. {name}=30",
        )
    return value


#: The servers started in this process, by address (a LocalDRPC's, the one ``run()`` starts).
_IN_PROCESS: dict[str, DRPCServer] = {}


def in_process(address: str) -> DRPCServer | None:
    """The DRPC server listening at ``address`` if it runs in this process (else None)."""
    return _IN_PROCESS.get(address)


__all__ = [
    "DEFAULT_IDLE_TIMEOUT",
    "DEFAULT_MAX_CONNECTIONS",
    "DEFAULT_MAX_REQUEST_BYTES",
    "DEFAULT_PORT",
    "DRPCServer",
    "in_process",
]
