"""A Confluent Schema Registry client (the REST subset the Kafka spout needs) and its wire format.

Confluent's serializers frame every record as: the magic byte 0, the writer schema's id as a
4-byte big-endian integer, then the body (Avro binary; for Protobuf, message-index varints
come first). The client fetches a schema once per id and process (executors decode many
records per id), and never shows the password of a URL with ``user:password@``.

What it trusts of the registry, and what not (the ids come from records, which anyone who
may produce to the topic writes):

* every request has a total deadline (``timeout_s``, connecting and the whole answer: a
  registry that trickles its answer fails by then) and an answer is read up to
  ``max_answer_bytes`` (8 MiB), never more;
* it follows no redirect to another host (scheme, host or port): its credentials would go
  there; the error names the target;
* an HTTP 5xx, 408 or 429, a refused connection and a missed deadline are an outage: tried
  again 0.5 s, 1 s, 2 s, ... (at most 10 s) apart until ``outage_budget_s`` has passed (the
  spout's ``run(outage_budget=)``, as brokers and stores wait), then
  :class:`~trident_spark.errors.SchemaRegistryError`;
* an id the registry does not hold (404) is remembered until :func:`forget_misses` (called
  for each range a task reads), so 100 records naming unknown ids cost at most one request
  per id per task, not one per record;
* every failure is a :class:`~trident_spark.errors.SchemaRegistryError` naming the URL
  (password redacted) and what was asked (the schema id or subject).

Confluent's own client (``confluent_kafka.schema_registry``, in the ``schemaregistry`` extra
of confluent-kafka) was weighed: it needs httpx, authlib, cachetools and attrs; its timeout is
httpx's per phase (a trickled answer is not bounded), it reads answers whole, retries a fixed
number of times (3) rather than within an outage budget, and does not remember misses. It does
not follow redirects. This one is kept.
"""

from __future__ import annotations

import base64
import contextlib
import http.client
import json
import logging
import socket
import threading
import time
import urllib.parse
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import SchemaRegistryError, TridentSparkError
from trident_spark.state.redaction import redact_text

#: The first byte of a record in Confluent's wire format.
MAGIC_BYTE = 0
#: Bytes before the body: the magic byte and the 4-byte schema id.
HEADER_BYTES = 5

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"

#: The largest answer read from a registry (bytes); a larger one is refused after reading at most
#: one byte more.
MAX_ANSWER_BYTES = 8 * 1024 * 1024
#: Answers that mean the registry is briefly unavailable: tried again within the outage budget.
RETRIED_STATUS = frozenset({408, 429, 500, 502, 503, 504})
#: Redirects followed within the registry's own origin (scheme, host and port).
MAX_REDIRECTS = 3
#: The first wait after a failed attempt (s); each next wait doubles, up to :data:`MAX_DELAY`
#: (as trident_spark.outage waits for brokers and stores).
FIRST_DELAY = 0.5
MAX_DELAY = 10.0

log = logging.getLogger(__name__)


class UnknownSchemaError(SchemaRegistryError):
    """The registry holds no schema with the id (or subject) asked for."""


class NotWireFormatError(TridentSparkError, ValueError):
    """A record is not in Confluent's wire format (too short, or no magic byte)."""


def split_wire_format(data: bytes) -> tuple[int, int]:
    """The schema id of a record in Confluent's wire format, and where its body starts.

    Examples
    --------
    >>> split_wire_format(b"\\x00\\x00\\x00\\x01\\x2a" + b"body")
    (298, 5)
    >>> split_wire_format(b'{"n": 1}')
    Traceback (most recent call last):
    ...
    trident_spark.spout.formats.schema_registry.NotWireFormatError: not in Schema Registry wire format: ...
    """
    if len(data) < HEADER_BYTES or data[0] != MAGIC_BYTE:
        first = f"byte 0x{data[0]:02x}" if data else "nothing"
        raise NotWireFormatError(
            f"not in Schema Registry wire format: it starts with {first}, not the magic byte 0 and a "
            f"4-byte schema id ({len(data)} bytes in all)")
    return int.from_bytes(data[1:HEADER_BYTES], "big"), HEADER_BYTES


def wire_format(schema_id: int, body: bytes) -> bytes:
    """``body`` framed as Confluent's serializers do: magic byte, schema id, body.

    Examples
    --------
    >>> wire_format(298, b"body")
    b'\\x00\\x00\\x00\\x01*body'
    """
    return bytes([MAGIC_BYTE]) + schema_id.to_bytes(4, "big") + body


@dataclass(frozen=True)
class RegisteredSchema:
    """A schema as the registry holds it: its id, its text, and its type (``AVRO``, ``PROTOBUF``)."""

    id: int
    schema: str
    schema_type: str = "AVRO"


# Schemas by (registry URL, id), shared by the decoders of one process: an id never changes.
_cache: dict[tuple[str, int], RegisteredSchema] = {}
# Ids the registry did not hold, by (registry URL, id): the error, until forget_misses().
_misses: dict[tuple[str, int], UnknownSchemaError] = {}
_cache_lock = threading.Lock()


class _OutageError(TridentSparkError):
    """One attempt met an unavailable registry: tried again within the outage budget."""


class _Answer:
    """One HTTP answer: status, the redirect target if any, the body (at most the cap)."""

    def __init__(self, status: int, location: str | None, body: bytes) -> None:
        self.status, self.location, self.body = status, location, body


class SchemaRegistryClient:
    """GET ``/schemas/ids/{id}``, GET ``/subjects/{subject}/versions/latest``, POST
    ``/subjects/{subject}/versions`` and GET ``/config`` against one Schema Registry.

    Parameters
    ----------
    url : str
        The registry's base URL; ``http://user:password@host:8081`` sends basic auth (the
        password is never shown in messages).
    timeout_s : float
        Seconds each request may take in all (connecting, sending, the whole answer).
    outage_budget_s : float
        Seconds a registry that does not answer (5xx, 408, 429, refused, past the deadline) is
        tried again before the request fails (0: at once).
    max_answer_bytes : int
        The largest answer read; a larger one is refused.

    Examples
    --------
    >>> client = SchemaRegistryClient("http://127.0.0.1:8081")
    >>> client.address
    'http://127.0.0.1:8081'
    >>> client.schema(1)                                          # doctest: +SKIP
    RegisteredSchema(id=1, schema='{"type": "record", ...}', schema_type='AVRO')
    """

    def __init__(self, url: str, timeout_s: float = 10.0, *, outage_budget_s: float = 0.0,
                 max_answer_bytes: int = MAX_ANSWER_BYTES) -> None:
        parts = urllib.parse.urlsplit(url)
        try:
            port = parts.port
        except ValueError:
            port = -1
        if parts.scheme not in ("http", "https") or not parts.hostname or port == -1:
            raise SchemaRegistryError(
                f"schema_registry_url={redact_text(url)!r} is not an http(s) URL; write e.g. "
                "'http://127.0.0.1:8081'")
        self._scheme = parts.scheme
        self._host = parts.hostname
        self._port = port or (443 if parts.scheme == "https" else 80)
        self._prefix = parts.path.rstrip("/")
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self._base = urllib.parse.urlunsplit((parts.scheme, netloc, self._prefix, "", ""))
        self._auth: str | None = None
        if parts.username is not None:
            pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._auth = "Basic " + base64.b64encode(pair.encode()).decode()
        self.address: str = redact_text(url.rstrip("/"))
        self.timeout_s = timeout_s
        self.outage_budget_s = outage_budget_s
        self.max_answer_bytes = max_answer_bytes

    def __repr__(self) -> str:
        return f"SchemaRegistryClient({self.address!r})"

    def check(self) -> None:
        """Fail fast, naming the URL, if the registry does not answer (GET ``/config``)."""
        self._request("GET", "/config", what="global configuration")

    def schema(self, schema_id: int) -> RegisteredSchema:
        """The schema registered with ``schema_id`` (fetched once per process and id; an id the
        registry lacks is asked for once until :func:`forget_misses`)."""
        key = (self._base, schema_id)
        with _cache_lock:
            found = _cache.get(key)
            missed = _misses.get(key)
        if found is not None:
            return found
        if missed is not None:
            raise UnknownSchemaError(str(missed))
        what = f"schema id {schema_id}"
        try:
            answer = self._request("GET", f"/schemas/ids/{schema_id}", what=what)
        except UnknownSchemaError as exc:
            with _cache_lock:
                _misses[key] = exc
            raise
        found = RegisteredSchema(schema_id, self._field(answer, "schema", what),
                                 str(answer.get("schemaType") or "AVRO"))
        with _cache_lock:
            _cache[key] = found
        return found

    def latest(self, subject: str) -> RegisteredSchema:
        """The latest version registered under ``subject`` (e.g. ``"clicks-value"``)."""
        quoted = urllib.parse.quote(subject, safe="")
        what = f"subject {subject!r}"
        answer = self._request("GET", f"/subjects/{quoted}/versions/latest", what=what)
        return RegisteredSchema(self._id(answer, what), self._field(answer, "schema", what),
                                str(answer.get("schemaType") or "AVRO"))

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject``; its id (the same id for a schema registered before)."""
        quoted = urllib.parse.quote(subject, safe="")
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        what = f"subject {subject!r}"
        return self._id(self._request("POST", f"/subjects/{quoted}/versions", body, what=what), what)

    def _field(self, answer: dict[str, Any], name: str, what: str) -> str:
        value = answer.get(name)
        if not isinstance(value, str):
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered for {what} without a {name!r} text "
                f"(keys: {sorted(answer)[:10]})")
        return value

    def _id(self, answer: dict[str, Any], what: str) -> int:
        value = answer.get("id")
        if isinstance(value, bool) or not isinstance(value, int):
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered for {what} without an integer 'id' "
                f"(got {value!r:.50})")
        return value

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None, *,
                 what: str) -> dict[str, Any]:
        """One request, tried again through an outage within ``outage_budget_s``."""
        started = time.monotonic()
        delays = 0
        while True:
            try:
                return self._attempt(method, path, body, what)
            except _OutageError as exc:
                used = time.monotonic() - started
                reason = str(exc)
                if used >= self.outage_budget_s:
                    budget = (f"; tried for {used:.0f} s, past outage_budget={self.outage_budget_s:g} s"
                              if self.outage_budget_s > 0 else "")
                    raise SchemaRegistryError(
                        f"Schema Registry at {self.address} did not answer {method} {path} within "
                        f"{self.timeout_s:g} s ({what}: {reason}{budget}). Check that it is running and "
                        "that schema_registry_url= is its address.") from None
                delay = min(FIRST_DELAY * 2 ** delays, MAX_DELAY, self.outage_budget_s - used)
                delays += 1
                log.warning("Schema Registry at %s did not answer %s %s (%s): %s; trying again in %.1f s "
                            "(%.0f s of the %g s outage budget used)", self.address, method, path, what,
                            reason, delay, used, self.outage_budget_s)
                time.sleep(delay)

    def _attempt(self, method: str, path: str, body: dict[str, Any] | None, what: str) -> dict[str, Any]:
        headers = {"Accept": _CONTENT_TYPE}
        if self._auth is not None:
            headers["Authorization"] = self._auth
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = _CONTENT_TYPE
        target = self._prefix + path
        for _ in range(MAX_REDIRECTS + 1):
            answer = self._exchange(method, target, data, headers, what)
            if answer.status in (301, 302, 303, 307, 308):
                target = self._same_origin(answer.location, method, path, what, answer.status)
                continue
            return self._decoded(answer, method, path, what)
        raise SchemaRegistryError(
            f"Schema Registry at {self.address} redirected {method} {path} ({what}) more than "
            f"{MAX_REDIRECTS} times; set schema_registry_url= to the address that serves the registry")

    def _same_origin(self, location: str | None, method: str, path: str, what: str, status: int) -> str:
        """The path a redirect points to, if it stays on the registry's scheme, host and port."""
        here = f"{self._scheme}://{self._host}:{self._port}"
        to = urllib.parse.urlsplit(urllib.parse.urljoin(here + self._prefix + path, location or ""))
        try:
            port = to.port or (443 if to.scheme == "https" else 80)
        except ValueError:
            port = -1
        if (to.scheme, to.hostname, port) != (self._scheme, self._host, self._port):
            shown = redact_text(urllib.parse.urlunsplit((to.scheme, to.netloc, to.path, "", "")))
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered {method} {path} ({what}) with a redirect "
                f"(HTTP {status}) to {shown}, another host: not followed, so the registry's credentials "
                "are never sent there. Set schema_registry_url= to the address that serves the registry.")
        return urllib.parse.urlunsplit(("", "", to.path, to.query, ""))

    def _exchange(self, method: str, target: str, data: bytes | None, headers: dict[str, str],
                  what: str) -> _Answer:
        """One HTTP exchange within ``timeout_s`` in all: a timer closes the socket at the deadline,
        which ends a read that the socket's own timeout (per read) would let trickle on."""
        deadline = time.monotonic() + self.timeout_s
        cls = http.client.HTTPSConnection if self._scheme == "https" else http.client.HTTPConnection
        conn = cls(self._host, self._port, timeout=self.timeout_s)
        expired = threading.Event()

        def expire() -> None:
            expired.set()
            sock = conn.sock
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)

        timer = threading.Timer(self.timeout_s, expire)
        timer.daemon = True
        timer.start()
        try:
            conn.request(method, target, body=data, headers=headers)
            response = conn.getresponse()
            length = response.getheader("Content-Length") or ""
            if length.strip().isdigit() and int(length) > self.max_answer_bytes:
                raise self._too_large(method, target, what, f"Content-Length: {int(length)}")
            body = bytearray()
            while True:
                chunk = response.read1(min(64 * 1024, self.max_answer_bytes + 1 - len(body)) or 1)
                if not chunk:
                    break
                body += chunk
                if len(body) > self.max_answer_bytes:
                    raise self._too_large(method, target, what, "more than that")
                if time.monotonic() > deadline:
                    raise TimeoutError
            if expired.is_set():
                raise TimeoutError
            return _Answer(response.status, response.getheader("Location"), bytes(body))
        except SchemaRegistryError:
            raise
        except (OSError, http.client.HTTPException) as exc:
            if expired.is_set() or isinstance(exc, TimeoutError):
                raise _OutageError(f"no whole answer within timeout={self.timeout_s:g} s") from None
            cause = redact_text(str(exc)) or "connection closed"
            raise _OutageError(f"{type(exc).__name__}: {cause}") from None
        finally:
            timer.cancel()
            conn.close()

    def _too_large(self, method: str, target: str, what: str, seen: str) -> SchemaRegistryError:
        return SchemaRegistryError(
            f"Schema Registry at {self.address} answered {method} {target} ({what}) with more than "
            f"{self.max_answer_bytes} bytes ({seen}): refused unread. A schema is far smaller; check "
            "that schema_registry_url= is the registry's address.")

    def _decoded(self, answer: _Answer, method: str, path: str, what: str) -> dict[str, Any]:
        if answer.status in RETRIED_STATUS:
            raise _OutageError(f"HTTP {answer.status} ({_registry_message(answer.body, answer.status)})")
        if answer.status == 404:
            raise UnknownSchemaError(f"Schema Registry at {self.address} has no {what} "
                                     f"({_registry_message(answer.body, 404)})")
        if not 200 <= answer.status < 300:
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} refused {method} {path}: HTTP {answer.status} "
                f"({_registry_message(answer.body, answer.status)})")
        try:
            decoded = json.loads(answer.body)
        except (ValueError, RecursionError) as exc:
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered {method} {path} ({what}) with something "
                f"that is not JSON ({type(exc).__name__}: {str(exc)[:200]})") from None
        if not isinstance(decoded, dict):
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered {method} {path} ({what}) with "
                f"{redact_text(repr(decoded)[:200])}, not an object")
        return decoded


def _registry_message(body: bytes, status: int) -> str:
    """The registry's own error text (``{"error_code": 40403, "message": "Schema not found"}``)."""
    try:
        answer = json.loads(body[:64 * 1024])
        return str(redact_text(str(answer.get("message") or answer)[:300]))
    except Exception:
        return f"HTTP {status}"


def forget_misses() -> None:
    """Forget the ids the registry did not hold (each task's range read starts afresh: an id
    registered since is found)."""
    with _cache_lock:
        _misses.clear()


def clear_cache() -> None:
    """Forget the schemas fetched by this process, and the misses (for tests)."""
    with _cache_lock:
        _cache.clear()
        _misses.clear()


__all__ = ["HEADER_BYTES", "MAGIC_BYTE", "NotWireFormatError", "RegisteredSchema", "SchemaRegistryClient",
           "SchemaRegistryError", "UnknownSchemaError", "clear_cache", "forget_misses", "split_wire_format",
           "wire_format"]
