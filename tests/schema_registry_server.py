"""A tiny in-process Schema Registry for the tests: a real HTTP server speaking the subset of
Confluent's REST API that trident-spark uses (no Schema Registry server can run here).

* ``POST /subjects/{subject}/versions`` with ``{"schema": "...", "schemaType": "AVRO"}``
  registers a schema (the same text gets the same id) and answers ``{"id": n}``;
* ``GET /schemas/ids/{id}`` answers ``{"schema": "..."}`` (and ``schemaType`` when not Avro);
* ``GET /subjects/{subject}/versions/latest`` answers ``{"subject", "version", "id", "schema"}``;
* ``GET /config`` answers ``{"compatibilityLevel": "BACKWARD"}``.

Unknown ids and subjects answer 404 with Confluent's error body. With ``password=`` every
request needs basic auth (401 otherwise). ``requests`` counts the requests by path, and
``authorizations`` lists the ``Authorization`` header of each request (None when absent).

Hostile behaviours, for the client's tests (set on a running server):

* ``fail_next``: statuses answered, one per request, before answering normally (``[500]``);
* ``redirect_to``: a base URL every GET is redirected to (HTTP 302, ``Location`` on it);
* ``trickle_s``: answers sent one byte at a time, this many seconds apart;
* ``huge_bytes`` (with ``huge_length``: whether ``Content-Length`` says so): answers of that
  many bytes, streamed; ``sent_bytes`` counts what the client took before it hung up.
"""

from __future__ import annotations

import base64
import json
import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote


class RegistryServer:
    """The registry's state and its HTTP server; ``url`` is its base URL."""

    def __init__(self, user: str | None = None, password: str | None = None) -> None:
        self.schemas: dict[int, tuple[str, str]] = {}  # id -> (schema, type)
        self.subjects: dict[str, list[int]] = {}
        self.requests: Counter[str] = Counter()
        self.authorizations: list[str | None] = []
        self.fail_next: list[int] = []
        self.redirect_to: str | None = None
        self.trickle_s: float | None = None
        self.huge_bytes: int | None = None
        self.huge_length = True
        self.sent_bytes = 0
        self._auth = None if password is None else "Basic " + base64.b64encode(
            f"{user}:{password}".encode()).decode()
        self._lock = threading.Lock()
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        with self._lock:
            found = next((i for i, s in self.schemas.items() if s == (schema, schema_type)), None)
            schema_id = found if found is not None else len(self.schemas) + 1
            self.schemas[schema_id] = (schema, schema_type)
            versions = self.subjects.setdefault(subject, [])
            if schema_id not in versions:
                versions.append(schema_id)
            return schema_id

    def start(self) -> RegistryServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        registry = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:  # quiet
                return

            def _answer(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                if registry.trickle_s is None:
                    self.wfile.write(data)
                    return
                try:
                    for i in range(len(data)):
                        self.wfile.write(data[i:i + 1])
                        self.wfile.flush()
                        time.sleep(registry.trickle_s)
                except OSError:  # the client hung up
                    self.close_connection = True

            def _hostile(self) -> bool:
                """Answer as a hostile or failing registry would; True when it did."""
                registry.authorizations.append(self.headers.get("Authorization"))
                if registry.fail_next:
                    status = registry.fail_next.pop(0)
                    self._answer(status, {"error_code": status * 100, "message": f"HTTP {status} as asked"})
                    return True
                if registry.redirect_to is not None:
                    self.send_response(302)
                    self.send_header("Location", registry.redirect_to + self.path)
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return True
                if registry.huge_bytes is not None:
                    self.send_response(200)
                    self.send_header("Content-Type", "application/vnd.schemaregistry.v1+json")
                    if registry.huge_length:
                        self.send_header("Content-Length", str(registry.huge_bytes))
                    self.end_headers()
                    chunk = b" " * (1024 * 1024)
                    try:
                        while registry.sent_bytes < registry.huge_bytes:
                            self.wfile.write(chunk)
                            registry.sent_bytes += len(chunk)
                    except OSError:  # the client hung up
                        pass
                    self.close_connection = True
                    return True
                return False

            def _authorized(self) -> bool:
                if registry._auth is None or self.headers.get("Authorization") == registry._auth:
                    return True
                self._answer(401, {"error_code": 401, "message": "Unauthorized"})
                return False

            def do_GET(self) -> None:
                registry.requests[self.path] += 1
                if self._hostile() or not self._authorized():
                    return
                parts = [unquote(p) for p in self.path.strip("/").split("/")]
                if parts == ["config"]:
                    self._answer(200, {"compatibilityLevel": "BACKWARD"})
                elif len(parts) == 3 and parts[:2] == ["schemas", "ids"] and parts[2].isdigit():
                    found = registry.schemas.get(int(parts[2]))
                    if found is None:
                        self._answer(404, {"error_code": 40403, "message": "Schema not found"})
                        return
                    body = {"schema": found[0]}
                    if found[1] != "AVRO":
                        body["schemaType"] = found[1]
                    self._answer(200, body)
                elif len(parts) == 4 and parts[0] == "subjects" and parts[2:] == ["versions", "latest"]:
                    versions = registry.subjects.get(parts[1])
                    if not versions:
                        missing = {"error_code": 40401, "message": f"Subject '{parts[1]}' not found."}
                        self._answer(404, missing)
                        return
                    schema, schema_type = registry.schemas[versions[-1]]
                    body = {"subject": parts[1], "version": len(versions), "id": versions[-1],
                            "schema": schema}
                    if schema_type != "AVRO":
                        body["schemaType"] = schema_type
                    self._answer(200, body)
                else:
                    self._answer(404, {"error_code": 404, "message": "HTTP 404 Not Found"})

            def do_POST(self) -> None:
                registry.requests[self.path] += 1
                if not self._authorized():
                    return
                parts = [unquote(p) for p in self.path.strip("/").split("/")]
                if len(parts) != 3 or parts[0] != "subjects" or parts[2] != "versions":
                    self._answer(404, {"error_code": 404, "message": "HTTP 404 Not Found"})
                    return
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                schema_id = registry.register(parts[1], body["schema"], body.get("schemaType", "AVRO"))
                self._answer(200, {"id": schema_id})

        return Handler


@contextmanager
def schema_registry(user: str | None = None, password: str | None = None) -> Iterator[RegistryServer]:
    """A running in-process registry, stopped on exit."""
    server = RegistryServer(user, password).start()
    try:
        yield server
    finally:
        server.stop()
