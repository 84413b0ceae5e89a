"""A Confluent Schema Registry client (the REST subset the Kafka spout needs) and its wire format.

Confluent's serializers frame every record as: the magic byte 0, the writer schema's id as a
4-byte big-endian integer, then the body (Avro binary; for Protobuf, message-index varints
come first). The client fetches a schema once per id and process (executors decode many
records per id), fails fast naming the registry's URL when it does not answer, and never
shows the password of a URL with ``user:password@``.
"""

from __future__ import annotations

import base64
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import SchemaRegistryError, TridentSparkError
from trident_spark.state.redaction import redact_text

#: The first byte of a record in Confluent's wire format.
MAGIC_BYTE = 0
#: Bytes before the body: the magic byte and the 4-byte schema id.
HEADER_BYTES = 5

_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"


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
    trident_spark.spout.schema_registry.NotWireFormatError: not in Schema Registry wire format: ...
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
_cache_lock = threading.Lock()


class SchemaRegistryClient:
    """GET ``/schemas/ids/{id}``, GET ``/subjects/{subject}/versions/latest``, POST
    ``/subjects/{subject}/versions`` and GET ``/config`` against one Schema Registry.

    Parameters
    ----------
    url : str
        The registry's base URL; ``http://user:password@host:8081`` sends basic auth (the
        password is never shown in messages).
    timeout_s : float
        Seconds each request may take before it fails naming the URL.

    Examples
    --------
    >>> client = SchemaRegistryClient("http://127.0.0.1:8081")
    >>> client.address
    'http://127.0.0.1:8081'
    >>> client.schema(1)                                          # doctest: +SKIP
    RegisteredSchema(id=1, schema='{"type": "record", ...}', schema_type='AVRO')
    """

    def __init__(self, url: str, timeout_s: float = 10.0) -> None:
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise SchemaRegistryError(
                f"schema_registry_url={redact_text(url)!r} is not an http(s) URL; write e.g. "
                "'http://127.0.0.1:8081'")
        netloc = parts.hostname + (f":{parts.port}" if parts.port else "")
        self._base = urllib.parse.urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))
        self._auth: str | None = None
        if parts.username is not None:
            pair = f"{urllib.parse.unquote(parts.username)}:{urllib.parse.unquote(parts.password or '')}"
            self._auth = "Basic " + base64.b64encode(pair.encode()).decode()
        self.address: str = redact_text(url.rstrip("/"))
        self.timeout_s = timeout_s

    def __repr__(self) -> str:
        return f"SchemaRegistryClient({self.address!r})"

    def check(self) -> None:
        """Fail fast, naming the URL, if the registry does not answer (GET ``/config``)."""
        self._request("GET", "/config", what="global configuration")

    def schema(self, schema_id: int) -> RegisteredSchema:
        """The schema registered with ``schema_id`` (fetched once per process and id)."""
        key = (self._base, schema_id)
        with _cache_lock:
            found = _cache.get(key)
        if found is not None:
            return found
        answer = self._request("GET", f"/schemas/ids/{schema_id}", what=f"schema id {schema_id}")
        found = RegisteredSchema(schema_id, str(answer["schema"]), str(answer.get("schemaType") or "AVRO"))
        with _cache_lock:
            _cache[key] = found
        return found

    def latest(self, subject: str) -> RegisteredSchema:
        """The latest version registered under ``subject`` (e.g. ``"clicks-value"``)."""
        quoted = urllib.parse.quote(subject, safe="")
        answer = self._request("GET", f"/subjects/{quoted}/versions/latest", what=f"subject {subject!r}")
        return RegisteredSchema(int(answer["id"]), str(answer["schema"]),
                                str(answer.get("schemaType") or "AVRO"))

    def register(self, subject: str, schema: str, schema_type: str = "AVRO") -> int:
        """Register ``schema`` under ``subject``; its id (the same id for a schema registered before)."""
        quoted = urllib.parse.quote(subject, safe="")
        body: dict[str, Any] = {"schema": schema}
        if schema_type != "AVRO":
            body["schemaType"] = schema_type
        answer = self._request("POST", f"/subjects/{quoted}/versions", body, what=f"subject {subject!r}")
        return int(answer["id"])

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None, *,
                 what: str) -> dict[str, Any]:
        headers = {"Accept": _CONTENT_TYPE}
        if self._auth is not None:
            headers["Authorization"] = self._auth
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = _CONTENT_TYPE
        request = urllib.request.Request(self._base + path, data=data, headers=headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=self.timeout_s) as response:
                answer = json.loads(response.read())
        except urllib.error.HTTPError as exc:
            reason = _registry_message(exc)
            if exc.code == 404:
                raise UnknownSchemaError(
                    f"Schema Registry at {self.address} has no {what} ({reason})") from None
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} refused {method} {path}: HTTP {exc.code} ({reason})"
            ) from None
        except (urllib.error.URLError, OSError) as exc:
            cause = getattr(exc, "reason", exc)
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} did not answer {method} {path} within "
                f"{self.timeout_s:g} s ({redact_text(str(cause))}). Check that it is running and that "
                "schema_registry_url= is its address.") from None
        except ValueError as exc:
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered {method} {path} with something that is "
                f"not JSON ({exc})") from None
        if not isinstance(answer, dict):
            raise SchemaRegistryError(
                f"Schema Registry at {self.address} answered {method} {path} with {answer!r}, not an object")
        return answer


def _registry_message(exc: urllib.error.HTTPError) -> str:
    """The registry's own error text (``{"error_code": 40403, "message": "Schema not found"}``)."""
    try:
        answer = json.loads(exc.read())
        return str(redact_text(str(answer.get("message") or answer)))
    except Exception:
        return f"HTTP {exc.code}"


def clear_cache() -> None:
    """Forget the schemas fetched by this process (for tests)."""
    with _cache_lock:
        _cache.clear()


__all__ = ["HEADER_BYTES", "MAGIC_BYTE", "NotWireFormatError", "RegisteredSchema", "SchemaRegistryClient",
           "SchemaRegistryError", "UnknownSchemaError", "clear_cache", "split_wire_format", "wire_format"]
