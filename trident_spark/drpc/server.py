"""The DRPC server: callers ask over HTTP, topologies take the requests and post the results.

Storm's DRPC server, as an HTTP server (``trident-spark drpc-server``; :class:`LocalDRPC`
runs one in the process). Every request waits in a :class:`~trident_spark.drpc.board.RequestBoard`.

The caller's side (any HTTP client; :class:`~trident_spark.drpc.client.DRPCClient`):

* ``POST /drpc/<function>`` with the args as the body (UTF-8), or ``GET /drpc/<function>/<args>``
  (URL-encoded), Storm's two forms. Optional query parameter ``timeout`` (seconds, at most the
  server's ``request_timeout``). Answers ``200`` with the result (Trident's JSON, e.g.
  ``[[5]]``), ``500`` with the error message if the request failed (its batch failed, or the
  topology serving it stopped answering), ``504`` if it timed out.

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
* ``GET /health`` answers ``200`` ``trident-spark drpc``: how ``run()`` tells a DRPC server.

A caller that disconnects while it waits drops its request. Nothing here is authenticated:
bind it to 127.0.0.1 (the default) or a private network.
"""

from __future__ import annotations

import json
import logging
import select
import socket
import threading
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from trident_spark.drpc.board import TICK, RequestBoard, RequestTimedOut
from trident_spark.errors import DRPCExecutionException, InvalidArgumentError

log = logging.getLogger(__name__)

#: Storm's ``drpc.http.port`` is 3774 and its Thrift port 3772; ours speaks HTTP on 3772,
#: the port Storm's clients are given.
DEFAULT_PORT = 3772
HEALTH = "trident-spark drpc"
#: Longest long-poll a fetch may ask for, in seconds.
MAX_FETCH_WAIT = 30.0


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
    ) -> None:
        self.board = RequestBoard(request_timeout, lease)
        try:
            self._http = _HTTPServer((host, port), _Handler)
        except OSError as exc:
            raise InvalidArgumentError(
                f"DRPC server: cannot listen on {host}:{port}: {exc.strerror or exc}; "
                "give another --port (or stop what listens there)"
            ) from exc
        self._http.board = self.board
        self.host = host
        self.port = int(self._http.server_address[1])
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._serving = False

    @property
    def address(self) -> str:
        """``host:port`` where it listens."""
        return f"{self.host}:{self.port}"

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
        return f"DRPCServer({self.address})"


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 256
    board: RequestBoard


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        log.debug("DRPC %s: " + format, self.address_string(), *args)

    def do_GET(self) -> None:
        path, params = self._target()
        if path == "/health":
            self._send(HTTPStatus.OK, HEALTH)
            return
        parts = path.split("/", 3)
        if len(parts) == 4 and parts[1] == "drpc" and parts[2]:
            self._execute(unquote(parts[2]), unquote(parts[3]), params)
            return
        self._send(
            HTTPStatus.NOT_FOUND,
            f"unknown path {path!r}; ask GET /drpc/<function>/<args> or "
            "POST /drpc/<function> with the args as the body",
        )

    def do_POST(self) -> None:
        path, params = self._target()
        body = self._body()
        parts = path.split("/")
        if len(parts) == 3 and parts[1] == "drpc" and parts[2]:
            self._execute(unquote(parts[2]), body, params)
        elif path == "/topology/fetch":
            self._fetch(params)
        elif path == "/topology/heartbeat":
            self.server.board.heartbeat(params.get("consumer", ""))
            self._send(HTTPStatus.OK, "")
        elif path in ("/topology/result", "/topology/fail"):
            request_id = params.get("id", "")
            board = self.server.board
            known = (
                board.result(request_id, body) if path.endswith("result") else board.fail(request_id, body)
            )
            self._send(
                HTTPStatus.OK if known else HTTPStatus.NOT_FOUND,
                "" if known else f"unknown request {request_id!r} (timed out, or its caller left)",
            )
        else:
            self._send(HTTPStatus.NOT_FOUND, f"unknown path {path!r}")

    def _target(self) -> tuple[str, dict[str, str]]:
        split = urlsplit(self.path)
        return split.path, {k: v[-1] for k, v in parse_qs(split.query).items()}

    def _body(self) -> str:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length).decode("utf-8") if length else ""

    def _execute(self, function: str, args: str, params: dict[str, str]) -> None:
        board = self.server.board
        try:
            timeout = float(params["timeout"]) if "timeout" in params else None
            request = board.submit(function, args)
        except (ValueError, InvalidArgumentError) as exc:
            self._send(HTTPStatus.BAD_REQUEST, str(exc))
            return
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
            self._send(HTTPStatus.BAD_REQUEST, "fetch needs ?function=F&consumer=C")
            return
        try:
            wait = min(MAX_FETCH_WAIT, max(0.0, float(params.get("wait", "0"))))
        except ValueError:
            wait = 0.0
        request = self.server.board.fetch(function, consumer, wait)
        if request is None:
            self._send(HTTPStatus.NO_CONTENT, "")
        else:
            self._send(
                HTTPStatus.OK, json.dumps({"id": request.id, "args": request.args}), "application/json"
            )

    def _gone(self) -> bool:
        """Whether the caller closed its connection (readable with nothing to read)."""
        try:
            readable, _, _ = select.select([self.connection], [], [], 0)
            return bool(readable) and self.connection.recv(1, socket.MSG_PEEK) == b""
        except OSError:
            return True

    def _send(self, status: HTTPStatus, text: str, content_type: str = "text/plain; charset=utf-8") -> None:
        data = text.encode("utf-8")
        try:
            self.send_response(status)
            if status != HTTPStatus.NO_CONTENT:
                self.send_header("Content-Type", content_type)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if data:
                self.wfile.write(data)
        except OSError:  # the caller left
            self.close_connection = True


#: The servers started in this process, by address (a LocalDRPC's, the one ``run()`` starts).
_IN_PROCESS: dict[str, DRPCServer] = {}


def in_process(address: str) -> DRPCServer | None:
    """The DRPC server listening at ``address`` if it runs in this process (else None)."""
    return _IN_PROCESS.get(address)


__all__ = ["DEFAULT_PORT", "DRPCServer", "in_process"]
