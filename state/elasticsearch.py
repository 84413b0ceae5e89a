"""ElasticsearchState: map state in Elasticsearch or OpenSearch, one document per key.

Talks to the server through the low-level ``elastic_transport.Transport`` with
plain ``application/json`` (the high-level ``elasticsearch`` client forces a
``compatible-with=9`` media type that OpenSearch and osmem-server refuse), so the
same code works with Elasticsearch 8/9, OpenSearch 2/3 and osmem-server.

Documents: one per key, laid out by ``es_documents.py`` (the source of truth
is the serializer's exact bytes; group values, txid and value are searchable
copies for people).

Reads and writes:

* ``multiGetVersioned``: one ``_mget`` per batch (real-time: sees writes before
  a refresh); a key's version is its document's ``(_seq_no, _primary_term)``.
* ``scanVersioned`` (every key, for ``getTuples``): a refresh, then a scroll in
  pages of ``max_multi_get_batch_size`` (at most 10000): see ``es_scan.py``.
* ``multiPutIfVersion``: one ``_bulk`` per batch: ``index`` with
  ``if_seq_no``/``if_primary_term`` for keys that were read, ``create`` for keys
  that were missing. A 409 on an item is a lost race (that key answers None and
  the map rules re-read and recompute it); items refused with 429 (queue full)
  are resent up to 3 times; any other item error raises, naming the key.
* ``elastic_transport`` answers HTTP error statuses without raising: every
  response's ``meta.status`` is checked.
* On a cluster: ``shards`` and ``replicas`` apply when the state creates its index; an existing
  index with others is refused, saying what to do; ``wait_for_active_shards`` goes with every
  ``_bulk`` (``es_index.py``). Routing is the cluster's (by ``_id``). A bulk re-sent after a
  node died under it may find its own write applied: the item answers 409 and the map rules
  re-read the key (a transactional or opaque value carries its txid, so the batch ends where
  one attempt would).
* First use waits until the index has no initializing shard (a new index's primaries
  answer reads with ``no_shard_available_action_exception`` for a moment after its ``PUT``).
* A shard that is not active (a node restarting or recovering: HTTP 503, or per-document
  ``no_shard_available_action_exception`` / ``unavailable_shards_exception``) is a
  :class:`~.errors.StateUnavailableError`: the batch waits within its outage budget.

Security: ``https://`` hosts, ``ca_certs`` (the cluster's CA, e.g. Elasticsearch
8's ``http_ca.crt``), ``verify_certs``; ``username``/``password`` (basic auth,
also taken from ``https://user:pass@host:9200``) or ``api_key`` (the encoded key,
or ``"id:key"``). An unreachable host fails on first use within
``connect_timeout`` seconds with :class:`~.errors.StateUnavailableError` naming it.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .checks import is_int
from .errors import StateConfigError, StateError, StateUnavailableError, UnreadableValueError
from .es_documents import RESERVED_FIELDS, index_mapping, state_document, stored_bytes
from .es_index import (
    bulk_parameters,
    check_index_settings,
    check_refresh_interval,
    creation_body,
    found_settings,
    inactive_primaries,
    settings_mismatch,
)
from .es_scan import MAX_PAGE, IndexConnection, scan_index
from .extras import require_extra
from .factory import CREATED_BY, StoreStateFactory
from .keys import ReservedKey, encode_key, encode_keys
from .serializers import Serializer, deserialize_stored, serialize_stored
from .url import Scheme, redact, register_scheme

if TYPE_CHECKING:
    from typing import Self, Unpack

    from elastic_transport import Transport

    from .factory import StoreSettings

DEFAULT_HOST = "http://127.0.0.1:9200"
DEFAULT_INDEX = "trident_state"
DEFAULT_PORT = 9200

_JSON = {"content-type": "application/json", "accept": "application/json"}
_NDJSON = {"content-type": "application/x-ndjson", "accept": "application/json"}
_BAD_INDEX_CHARS = re.compile(r'[\\/*?"<>| ,#:A-Z]')
_THROTTLED_RESENDS = 3
#: Error types of a read or write that a shard not (yet) active answers: a node restarting, a
#: shard recovering after a restart, a cluster without its cluster manager. The store is
#: unavailable, not wrong: the batch waits and tries again (its outage budget).
_SHARD_UNAVAILABLE = ("no_shard_available_action_exception", "unavailable_shards_exception",
                      "primary_missing_action_exception", "node_not_connected_exception",
                      "node_disconnected_exception", "cluster_manager_not_discovered_exception",
                      "master_not_discovered_exception", "not_cluster_manager_exception",
                      "not_master_exception", "illegal_index_shard_state_exception")


def _shard_unavailable(error: Any) -> bool:
    """Whether an error answer (or an item's) says a shard is not active rather than a request wrong."""
    shown = json.dumps(error, default=str)
    return any(kind in shown for kind in _SHARD_UNAVAILABLE)


def _reason(body: Any) -> str:
    """The error type and reason of an Elasticsearch error answer."""
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict):
            cause = error.get("caused_by")
            text = f"{error.get('type', 'error')}: {error.get('reason', '')}".strip()
            if isinstance(cause, dict) and cause.get("reason"):
                text += f" (caused by {cause.get('type')}: {cause.get('reason')})"
            return text
        return str(error)[:300]
    return str(body)[:300]


def _shown(key: Key) -> str:
    """A key in a message: ``key ['cat']``, or the state's own document by its ``_id``."""
    if isinstance(key, ReservedKey):
        return f"the state's own document {key.encoded!r} (its commit record)"
    return f"key {list(key)!r}"


def _split_host(host: str) -> tuple[str, str, int, str, str | None, str | None]:
    """``(scheme, hostname, port, path_prefix, username, password)`` of one host URL."""
    text = host if "://" in host else f"http://{host}"
    try:
        parts = urllib.parse.urlsplit(text)
        port = parts.port
    except ValueError as exc:
        raise StateConfigError(f"Elasticsearch host {redact(host)!r} cannot be parsed: {exc}") from None
    scheme = parts.scheme.lower()
    if scheme not in ("http", "https") or not parts.hostname:
        raise StateConfigError(f"Elasticsearch host {redact(host)!r} must look like http://HOST:9200 or "
                               f"https://HOST:9200")
    username = None if parts.username is None else urllib.parse.unquote(parts.username)
    password = None if parts.password is None else urllib.parse.unquote(parts.password)
    return (scheme, parts.hostname, port or DEFAULT_PORT, parts.path.rstrip("/"), username, password)


def _host_url(scheme: str, hostname: str, port: int, prefix: str) -> str:
    shown = f"[{hostname}]" if ":" in hostname else hostname
    return f"{scheme}://{shown}:{port}{prefix}"


class ElasticsearchBackingMap(VersionedBackingMap):
    """The versioned backing map over one index. Connects, and creates the index, on first use.

    Parameters
    ----------
    spec : ElasticsearchState
        The settings (hosts, index, auth, TLS, fields, timeouts).
    serializer : Serializer
        Turns values into the stored bytes and back.

    Examples
    --------
    >>> backing = ElasticsearchState.opaque(hosts=["http://es1:9200"], index="wc").open_backing_map()
    >>> backing.address, backing.document_id(["us", 2024])
    ('http://es1:9200/wc', 'us|~i2024')
    """

    def __init__(self, spec: ElasticsearchState, serializer: Serializer) -> None:
        self.spec = spec
        self.serializer = serializer
        self._nodes = [_split_host(host) for host in spec.hosts]
        self._transport: Transport | None = None
        self._index_ready = False
        self._lock = threading.Lock()
        self._closed = False

    @property
    def address(self) -> str:
        hosts = ",".join(f"{_host_url(s, h, p, prefix)}" for s, h, p, prefix, _, _ in self._nodes)
        return f"{hosts}/{self.spec.index}"

    @staticmethod
    def document_id(key: Key) -> str:
        """The ``_id`` of a key's document: the encoded key."""
        return encode_key(key)

    # -- the connection ---------------------------------------------------------------------

    def _auth_header(self) -> dict[str, str]:
        spec = self.spec
        if spec.api_key is not None:
            key = spec.api_key
            if ":" in key:
                key = base64.b64encode(key.encode("utf-8")).decode("ascii")
            return {"authorization": f"ApiKey {key}"}
        username, password = spec.username, spec.password
        if username is None:
            username, password = next(((u, pw) for *_, u, pw in self._nodes if u is not None), (None, None))
        if username is not None:
            token = base64.b64encode(f"{username}:{password or ''}".encode()).decode("ascii")
            return {"authorization": f"Basic {token}"}
        return {}

    def _connected(self) -> Transport:
        """The transport, made on first use (it connects on its first request)."""
        if self._closed:
            raise StateError(f"{self.address}: the state was closed; open it again")
        with self._lock:
            if self._transport is None:
                self._transport = self._connect()
            return self._transport

    def _client(self) -> Transport:
        """The transport, after making sure the index exists."""
        transport = self._connected()
        if not self._index_ready:
            self._ensure_index(transport)
        return transport

    def _connect(self) -> Transport:
        transport_module = require_extra("elastic_transport", f"the Elasticsearch state at {self.address}")
        spec = self.spec
        headers = self._auth_header()
        configs = []
        for scheme, hostname, port, prefix, _, _ in self._nodes:
            options: dict[str, Any] = {}
            if scheme == "https":
                options["verify_certs"] = spec.verify_certs
                options["ssl_show_warn"] = spec.verify_certs
                if spec.ca_certs is not None:
                    options["ca_certs"] = spec.ca_certs
            configs.append(transport_module.NodeConfig(scheme, hostname, port, path_prefix=prefix,
                                                       headers=headers, request_timeout=spec.request_timeout,
                                                       **options))
        transport: Transport = transport_module.Transport(configs, max_retries=max(1, len(configs) - 1),
                                                          retry_on_timeout=False, meta_header=False)
        return transport

    def _request(self, method: str, target: str, body: Any = None, *, headers: dict[str, str] = _JSON,
                 timeout: float | None = None, transport: Transport | None = None,
                 denied_ok: bool = False) -> tuple[int, Any]:
        """One HTTP request: ``(status, body)``; transport failures become StateUnavailableError.

        401/403 raise too, unless ``denied_ok`` (an optional request: the caller checks the status).
        """
        transport_module = require_extra("elastic_transport", f"the Elasticsearch state at {self.address}")
        ConnectionError, ConnectionTimeout, TlsError, TransportError = (  # noqa: N806
            transport_module.ConnectionError, transport_module.ConnectionTimeout, transport_module.TlsError,
            transport_module.TransportError)
        client = transport if transport is not None else self._client()
        try:
            response = client.perform_request(
                method, target, body=body, headers=headers,
                request_timeout=self.spec.request_timeout if timeout is None else timeout)
        except TlsError as exc:
            raise StateUnavailableError(self.address, (
                f"TLS failed: {exc}; give the cluster's CA certificate with ca_certs= (Elasticsearch 8 "
                f"writes config/certs/http_ca.crt), or verify_certs=False to skip the check")) from exc
        except (ConnectionError, ConnectionTimeout) as exc:
            raise StateUnavailableError(self.address, (
                f"{type(exc).__name__}: {exc}; check that Elasticsearch/OpenSearch runs there and is "
                f"reachable from this machine (https:// hosts need https in the URL)")) from exc
        except TransportError as exc:
            raise StateUnavailableError(self.address, f"{type(exc).__name__}: {exc}") from exc
        status = int(response.meta.status)
        if status == 403 and "cluster_block_exception" in json.dumps(response.body, default=str):
            # Not the credentials: a block, e.g. the read-only block of a disk past its flood stage.
            raise StateUnavailableError(self.address, (
                f"HTTP 403 on {method} {target}: {_reason(response.body)}; the cluster blocks this "
                f"(an index made read-only when a disk filled up: free space, then remove the block)"))
        if status in (401, 403) and not denied_ok:
            who = ("api_key" if self.spec.api_key is not None else
                   "username/password" if self._auth_header() else "no credentials")
            raise StateUnavailableError(self.address, (
                f"HTTP {status} on {method} {target}: {_reason(response.body)}; the server refused "
                f"{who}: give username= and password= (or https://user:pass@host:9200) or api_key=, "
                f"with privileges to create, read and write index {self.spec.index!r}"))
        return status, response.body

    def _ensure_index(self, transport: Transport) -> None:
        """Create the index with the state mapping if it does not exist (first use; fails fast)."""
        index = self.spec.index
        status, body = self._request("HEAD", f"/{index}", timeout=self.spec.connect_timeout,
                                     transport=transport)
        spec = self.spec
        created = False
        if status == 404:
            body = creation_body(spec.fields, shards=spec.shards, replicas=spec.replicas,
                                 refresh_interval=spec.refresh_interval)
            status, body = self._request("PUT", f"/{index}", body,
                                         timeout=max(spec.connect_timeout, spec.request_timeout),
                                         transport=transport)
            already = "resource_already_exists_exception" in json.dumps(body, default=str)
            if status >= 300 and not already:   # another task may have created it meanwhile
                raise StateUnavailableError(self.address, (
                    f"cannot create index {index!r}: HTTP {status} {_reason(body)}"))
            created = not already
        elif status >= 300:
            raise StateUnavailableError(self.address, f"HTTP {status} checking index {index!r}: "
                                                      f"{_reason(body)}")
        if not created:
            self._check_index_settings(transport)
        self._wait_for_primaries(transport)
        self._index_ready = True

    def _check_index_settings(self, transport: Transport) -> None:
        """Refuse an existing index whose shards or replicas differ from those the state names
        (credentials that may not read settings skip the check)."""
        spec = self.spec
        if spec.shards is None and spec.replicas is None:
            return
        target = (f"/{urllib.parse.quote(spec.index, safe='')}/_settings/"
                  f"index.number_of_shards,index.number_of_replicas?flat_settings=true")
        status, body = self._request("GET", target, timeout=spec.connect_timeout, transport=transport,
                                     denied_ok=True)
        if status != 200:
            return
        wanted = {"shards": spec.shards, "replicas": spec.replicas}
        problem = settings_mismatch(spec.index, self.address, wanted, found_settings(body))
        if problem is not None:
            raise StateConfigError(problem)

    def _wait_for_primaries(self, transport: Transport) -> None:
        """Wait until the index's primary shards are active (an index just created, by this task
        or a racing one, or a cluster just restarted, answers reads with no_shard_available
        until then). A user without the cluster-monitor privilege, or a server without the
        index health API, skips the wait.

        ``yellow`` alone is not enough: a new index's primaries count as yellow while they
        initialize, so the wait also asks for no initializing shards. When that times out with
        every primary active (``active_primary_shards`` equals ``number_of_shards``), only
        replicas are recovering (on a cluster, a node back after a loss): the index is usable,
        and the state goes on."""
        seconds = max(self.spec.connect_timeout, self.spec.request_timeout)
        target = (f"/_cluster/health/{urllib.parse.quote(self.spec.index, safe='')}"
                  f"?level=indices&wait_for_status=yellow&wait_for_no_initializing_shards=true"
                  f"&timeout={seconds:g}s")
        status, body = self._request("GET", target, timeout=seconds + 5.0, transport=transport,
                                     denied_ok=True)
        timed_out = status == 408 or (status == 200 and isinstance(body, dict) and body.get("timed_out"))
        if timed_out and inactive_primaries(body) != 0:
            raise StateUnavailableError(self.address, (
                f"the primary shards of index {self.spec.index!r} were not active within {seconds:g} s "
                f"(cluster health {body.get('status') if isinstance(body, dict) else '?'}): a node is "
                f"down or still recovering"))

    def _check(self, status: int, body: Any, doing: str) -> None:
        if status < 300:
            return
        reason = _reason(body)
        if status == 413:
            raise StateError(f"{self.address}: HTTP 413 on {doing}: the request is too large; lower "
                             f"max_multi_put_batch_size / max_multi_get_batch_size")
        if status == 429 or status >= 500:
            raise StateUnavailableError(self.address, f"HTTP {status} on {doing}: {reason}; the cluster is "
                                                      f"overloaded or failing")
        raise StateError(f"{self.address}: HTTP {status} on {doing}: {reason}")

    # -- reads and writes -------------------------------------------------------------------

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self.multiGetEncoded(keys, encode_keys(keys))

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        if not keys:
            return []
        ids = list(encoded)  # the document ids (document_id)
        body = json.dumps({"ids": ids}, ensure_ascii=False).encode("utf-8")
        target = f"/{self.spec.index}/_mget?realtime=true&_source_includes=state,state_base64"
        for attempt in range(2):
            status, answer = self._request("POST", target, body)
            if status == 404 and attempt == 0 and "index_not_found" in json.dumps(answer, default=str):
                self._index_ready = False     # deleted meanwhile: create it again
                continue
            self._check(status, answer, f"_mget of {len(ids)} keys")
            docs = answer.get("docs") if isinstance(answer, dict) else None
            if not isinstance(docs, list) or len(docs) != len(ids):
                raise StateError(f"{self.address}: _mget answered {str(answer)[:200]!r}, not {len(ids)} docs")
            if attempt == 0 and any("index_not_found" in str(doc.get("error", "")) for doc in docs):
                self._index_ready = False
                continue
            return [self._versioned(key, doc) for key, doc in zip(keys, docs, strict=True)]
        raise StateError(f"{self.address}: index {self.spec.index!r} keeps disappearing")

    def _versioned(self, key: Key, doc: dict[str, Any]) -> Versioned | None:
        if "error" in doc:
            if _shard_unavailable(doc["error"]):
                raise StateUnavailableError(self.address, (
                    f"reading {_shown(key)}: {_reason(doc)}; a shard of index {self.spec.index!r} "
                    f"is not active (a node restarting or recovering)"))
            raise StateError(f"{self.address}: reading {_shown(key)}: {_reason(doc)}")
        if not doc.get("found"):
            return None
        data = stored_bytes(doc.get("_source"))
        if data is None:
            raise UnreadableValueError(self.address, key, (
                f"document {doc.get('_id')!r} has no 'state' field (written by another program?)"))
        version = (int(doc["_seq_no"]), int(doc["_primary_term"]))
        return Versioned(deserialize_stored(self.serializer, data, key=key, address=self.address), version)

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """Every document of the index: ``_refresh``, then a scroll in pages of ``batch_size``.

        See the module doc.

        The scroll reads a snapshot taken at its start; its context is cleared
        when the iterator is exhausted or closed.
        """
        connection = IndexConnection(self.spec.index, self.address, self.serializer, self._client,
                                     self._request, self._check)
        return scan_index(connection, min(check_scan_batch_size(batch_size), MAX_PAGE))

    def _action(self, doc_id: str, expected: Version | None) -> dict[str, Any]:
        if expected is None:
            return {"create": {"_id": doc_id}}
        if (not isinstance(expected, tuple) or len(expected) != 2
                or not all(is_int(n) for n in expected)):
            raise StateError(f"{self.address}: {expected!r} is not a version this store gave out")
        seq_no, primary_term = expected
        return {"index": {"_id": doc_id, "if_seq_no": seq_no, "if_primary_term": primary_term}}

    def _bulk_target(self) -> str:
        spec = self.spec
        return f"/{spec.index}/_bulk" + bulk_parameters(spec.wait_for_active_shards,
                                                        request_timeout=spec.request_timeout)

    def _bulk(self, lines: list[bytes], doing: str) -> list[dict[str, Any]]:
        status, answer = self._request("POST", self._bulk_target(), b"".join(lines), headers=_NDJSON)
        self._check(status, answer, doing)
        items = answer.get("items") if isinstance(answer, dict) else None
        if not isinstance(items, list) or len(items) != len(lines) // 2:
            raise StateError(f"{self.address}: _bulk answered {str(answer)[:200]!r} for {len(lines) // 2} "
                             f"actions")
        return [next(iter(item.values())) for item in items]

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self.multiPutEncoded(keys, encode_keys(keys), values, expected_versions)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        if not len(keys) == len(encoded) == len(values) == len(expected_versions):
            raise StateError(f"{self.address}: multiPutIfVersion needs as many values and versions as keys")
        if not keys:
            return []
        fields = self.spec.fields
        serializer, address = self.serializer, self.address
        lines: list[tuple[bytes, bytes]] = []
        for key, doc_id, value, expected in zip(keys, encoded, values, expected_versions, strict=True):
            data = serialize_stored(serializer, value, key=key, address=address)
            try:
                doc = state_document(key, value, data, fields)
            except StateError as exc:
                raise StateError(f"{address}: {exc}") from None
            action = self._action(doc_id, expected)
            try:
                source = json.dumps(doc, ensure_ascii=False, allow_nan=False)
            except ValueError:          # NaN or infinity in the readable copy: JSON has no such numbers
                doc.pop("value", None)
                source = json.dumps(doc, ensure_ascii=False)
            lines.append((json.dumps(action, ensure_ascii=False).encode("utf-8") + b"\n",
                          source.encode("utf-8") + b"\n"))
        outcomes: list[Version | None] = [None] * len(keys)
        pending = list(range(len(keys)))
        for resend in range(_THROTTLED_RESENDS + 1):
            body = [part for i in pending for part in lines[i]]
            results = self._bulk(body, f"_bulk of {len(pending)} keys")
            throttled = []
            for i, result in zip(pending, results, strict=True):
                status = int(result.get("status", 0))
                if status in (200, 201):
                    outcomes[i] = (int(result["_seq_no"]), int(result["_primary_term"]))
                elif status == 409:
                    outcomes[i] = None            # lost the race: the map rules re-read this key
                elif status == 429 and resend < _THROTTLED_RESENDS:
                    throttled.append(i)
                elif status == 429 or status >= 500 or _shard_unavailable(result.get("error")):
                    raise StateUnavailableError(self.address, (
                        f"writing {_shown(keys[i])} failed with HTTP {status}: {_reason(result)}; "
                        f"the cluster is overloaded, or a shard of index {self.spec.index!r} is not "
                        f"active (a node restarting or recovering)"))
                else:
                    hint = ""
                    shown = json.dumps(result, default=str)
                    if "mapper_parsing" in shown or "illegal_argument" in shown:
                        hint = ("; a group value's type may not fit the index mapping (a field mapped as "
                                "another type): write to a new index or fix the mapping")
                    raise StateError(f"{self.address}: writing {_shown(keys[i])} failed with HTTP "
                                     f"{status}: {_reason(result)}{hint}")
            if not throttled:
                break
            pending = throttled
            time.sleep(0.2 * 2 ** resend)
        return outcomes

    def multiRemove(self, keys: Sequence[Key]) -> None:
        if not keys:
            return
        lines = [json.dumps({"delete": {"_id": self.document_id(key)}}, ensure_ascii=False).encode() + b"\n"
                 for key in keys]
        status, answer = self._request("POST", self._bulk_target(), b"".join(lines), headers=_NDJSON)
        self._check(status, answer, f"_bulk delete of {len(keys)} keys")
        for key, item in zip(keys, answer.get("items", []), strict=False):
            result = next(iter(item.values()))
            if int(result.get("status", 0)) not in (200, 404):
                raise StateError(f"{self.address}: deleting {_shown(key)}: {_reason(result)}")

    def request(self, method: str, target: str, body: Any = None) -> tuple[int, Any]:
        """Send one request to the cluster (for tests and tools): ``(status, body)``.

        ``target`` is a path such as ``/wc/_search``; ``body`` JSON-able or bytes. Does not
        create the state's index.
        """
        return self._request(method, target, body, transport=self._connected())

    def close(self) -> None:
        with self._lock:
            self._closed = True
            transport, self._transport = self._transport, None
        if transport is not None:
            transport.close()


def _check_index(index: Any) -> None:
    if not isinstance(index, str) or not index or index in (".", "..") or index[0] in "-_+" \
            or _BAD_INDEX_CHARS.search(index) or len(index.encode("utf-8")) > 255:
        raise StateConfigError(
            f"Elasticsearch index name {index!r} is not allowed: lowercase, no spaces or any of "
            f'\\ / * ? " < > | , # :, not starting with - _ +, at most 255 bytes')


def _check_fields(fields: Any) -> tuple[str, ...] | None:
    if fields is None:
        return None
    if isinstance(fields, str) or not isinstance(fields, Sequence) or not fields:
        raise StateConfigError(f"fields must be a non-empty list of group field names, e.g. ['word'], "
                               f"got {fields!r}")
    names = tuple(fields)
    for name in names:
        if not isinstance(name, str) or not name or name.startswith("_") or name in RESERVED_FIELDS:
            raise StateConfigError(
                f"fields: {name!r} cannot be a document field name: names must be non-empty strings, "
                f"not start with _, and not be one of {', '.join(RESERVED_FIELDS)} (the state uses those)")
    if len(set(names)) != len(names):
        raise StateConfigError(f"fields: {list(names)!r} names a field twice")
    return names


@dataclass(frozen=True, kw_only=True)
class ElasticsearchState(StoreStateFactory):
    """Settings of a state in Elasticsearch/OpenSearch: one document per key, conditional writes.

    Parameters
    ----------
    hosts : list of str, default ["http://127.0.0.1:9200"]
        The cluster's nodes: ``http://HOST:9200``, ``https://HOST:9200``, or
        ``https://USER:PASSWORD@HOST:9200`` (basic auth from the URL).
    index : str, default "trident_state"
        The index (created with the state mapping on first use if missing); one per state.
    username, password : str, optional
        Basic authentication.
    api_key : str, optional
        An API key: the ``encoded`` value Elasticsearch returns, or ``"id:key"``.
    ca_certs : str, optional
        CA bundle that signed the nodes' certificates (``https`` hosts).
    verify_certs : bool, default True
        Check the nodes' certificates (``https`` hosts).
    fields : list of str, optional
        The group field names, in order: each document then carries one field per
        name (``word: "cat"``) besides ``key``, for searching in Kibana.
    request_timeout : float, default 30.0
        Seconds to wait for an answer.
    connect_timeout : float, default 5.0
        Seconds the first request (checking the index) may take: an unreachable
        cluster fails that fast.
    shards : int, optional
        Primary shards of the index when the state creates it (the cluster's default, 1,
        if None). Keys spread over them by the hash of their ``_id``.
    replicas : int, optional
        Replicas of each shard when the state creates the index (the cluster's default, 1,
        if None). An existing index with other shards or replicas than those given is
        refused with a :class:`~.errors.StateConfigError` saying what to do.
    wait_for_active_shards : int or "all", optional
        Copies of a key's shard that must be active before a write starts (1 to
        ``replicas + 1``, or ``"all"``); the cluster's default (1, the primary) if None.
        See docs/state.md, "OpenSearch and Elasticsearch clusters".
    refresh_interval : str, optional
        ``index.refresh_interval`` of the index when the state creates it (the cluster's
        default, ``"1s"``, if None): ``"30s"`` or ``"-1"`` cut the node's indexing work per
        batch by about 40% (docs/state.md), the state's reads being real-time reads by id;
        your own searches (Kibana) then see writes that much later.
    **settings
        ``cache_size``, ``max_multi_get_batch_size``, ``max_multi_put_batch_size``,
        ``txid_offset``, ``max_conflict_retries``, ``serializer``: see
        :class:`~.factory.StoreStateFactory`.

    Notes
    -----
    ``.url`` carries the password or API key, if any, so that it opens the same
    state; the address in messages, ``repr`` and errors never show them.

    Examples
    --------
    >>> spec = ElasticsearchState.opaque(hosts=["http://es1:9200"], index="wc", fields=["word"])
    >>> spec.url
    'es://es1:9200/wc?fields=word&type=opaque'
    >>> ElasticsearchState.opaque(hosts=["http://es1:9200", "http://es2:9200"], index="wc", shards=3,
    ...                           replicas=1, wait_for_active_shards="all").url
    'es://es1:9200,es2:9200/wc?shards=3&replicas=1&wait_for_active_shards=all&type=opaque'
    >>> ElasticsearchState.transactional(hosts=["https://elastic:s3cret@es1:9200"], index="wc")
    ElasticsearchState(state_type='transactional', hosts=('https://elastic:***@es1:9200',), index='wc', ...)
    """

    if TYPE_CHECKING:  # the kinds' keywords for type checkers; at run time, StoreStateFactory's
        @classmethod
        def opaque(cls, *, hosts: Sequence[str] = ..., index: str = ...,  # type: ignore[override]
                   username: str | None = ..., password: str | None = ...,
                   api_key: str | None = ..., ca_certs: str | None = ...,
                   verify_certs: bool = ..., fields: Sequence[str] | None = ...,
                   request_timeout: float = ..., connect_timeout: float = ...,
                   shards: int | None = ..., replicas: int | None = ...,
                   wait_for_active_shards: int | str | None = ...,
                   **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def transactional(cls, *, hosts: Sequence[str] = ..., index: str = ...,  # type: ignore[override]
                          username: str | None = ..., password: str | None = ...,
                          api_key: str | None = ..., ca_certs: str | None = ...,
                          verify_certs: bool = ..., fields: Sequence[str] | None = ...,
                          request_timeout: float = ..., connect_timeout: float = ...,
                          shards: int | None = ..., replicas: int | None = ...,
                          wait_for_active_shards: int | str | None = ...,
                          **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def nonTransactional(cls, *, hosts: Sequence[str] = ..., index: str = ...,  # type: ignore[override]
                             username: str | None = ..., password: str | None = ...,
                             api_key: str | None = ..., ca_certs: str | None = ...,
                             verify_certs: bool = ..., fields: Sequence[str] | None = ...,
                             request_timeout: float = ..., connect_timeout: float = ...,
                             shards: int | None = ..., replicas: int | None = ...,
                             wait_for_active_shards: int | str | None = ...,
                             **settings: Unpack[StoreSettings]) -> Self: ...

    hosts: Sequence[str] = (DEFAULT_HOST,)
    index: str = DEFAULT_INDEX
    username: str | None = None
    password: str | None = None
    api_key: str | None = None
    ca_certs: str | None = None
    verify_certs: bool = True
    fields: Sequence[str] | None = None
    request_timeout: float = 30.0
    connect_timeout: float = 5.0
    shards: int | None = None
    replicas: int | None = None
    wait_for_active_shards: int | str | None = None
    refresh_interval: str | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        hosts = (self.hosts,) if isinstance(self.hosts, str) else self.hosts
        if not isinstance(hosts, Sequence) or not hosts or not all(isinstance(h, str) for h in hosts):
            raise StateConfigError(f"hosts must be a list of URLs such as [{DEFAULT_HOST!r}], "
                                   f"got {self.hosts!r}")
        object.__setattr__(self, "hosts", tuple(hosts))
        schemes = {_split_host(host)[0] for host in self.hosts}
        if len(schemes) > 1:
            raise StateConfigError(f"hosts mix http and https: {[redact(h) for h in self.hosts]}")
        _check_index(self.index)
        object.__setattr__(self, "fields", _check_fields(self.fields))
        for name in ("username", "password", "api_key", "ca_certs"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                raise StateConfigError(f"{name} must be a string, got {type(value).__name__}")
        if self.api_key is not None and (self.username is not None or self.password is not None):
            raise StateConfigError("give either api_key or username/password, not both")
        if not isinstance(self.verify_certs, bool):
            raise StateConfigError(f"verify_certs must be True or False, got {self.verify_certs!r}")
        for name in ("request_timeout", "connect_timeout"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
                raise StateConfigError(f"{name} must be a number of seconds > 0, got {value!r}")
        object.__setattr__(self, "wait_for_active_shards",
                           check_index_settings(self.shards, self.replicas, self.wait_for_active_shards))
        object.__setattr__(self, "refresh_interval", check_refresh_interval(self.refresh_interval))

    def __repr__(self) -> str:
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "hosts":
                value = tuple(redact(host) for host in value)
            elif field.name in ("password", "api_key") and value is not None:
                value = "***"
            elif field.name == "state_type":
                value = value.value
            if field.name in ("hosts", "index", "state_type") or value != field.default:
                shown.append(f"{field.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)}, ...)"

    def url_location(self) -> tuple[str, dict[str, str]]:
        nodes = [_split_host(host) for host in self.hosts]
        scheme = nodes[0][0]
        prefixes = {node[3] for node in nodes}
        username = self.username if self.username is not None else nodes[0][4]
        password = self.password if self.username is not None else nodes[0][5]
        userinfo = ""
        if username is not None:
            userinfo = urllib.parse.quote(username, safe="")
            if password is not None:
                userinfo += ":" + urllib.parse.quote(password, safe="")
            userinfo += "@"
        hostports = ",".join(_host_url("x", h, p, "").removeprefix("x://") for _, h, p, _, _, _ in nodes)
        prefix = next(iter(prefixes)) if len(prefixes) == 1 else ""
        location = f"{'es' if scheme == 'http' else 'https'}://{userinfo}{hostports}{prefix}/{self.index}"
        params: dict[str, str] = {}
        if self.fields:
            params["fields"] = ",".join(self.fields)
        if self.api_key is not None:
            params["api_key"] = self.api_key
        if self.ca_certs is not None:
            params["ca_certs"] = self.ca_certs
        if not self.verify_certs:
            params["verify_certs"] = "false"
        if self.request_timeout != 30.0:
            params["request_timeout"] = f"{self.request_timeout:g}"
        if self.connect_timeout != 5.0:
            params["connect_timeout"] = f"{self.connect_timeout:g}"
        for name in ("shards", "replicas", "wait_for_active_shards"):
            if getattr(self, name) is not None:
                params[name] = str(getattr(self, name))
        return location, params

    def open_backing_map(self) -> ElasticsearchBackingMap:
        return ElasticsearchBackingMap(self, self.effective_serializer)

    def check_exists(self) -> None:
        """The index must be there (a ``HEAD`` that gives up after ``connect_timeout``; nothing created)."""
        probe = self.with_settings(request_timeout=self.connect_timeout).open_backing_map()
        try:
            status, _ = probe.request("HEAD", f"/{urllib.parse.quote(self.index, safe='')}")
        finally:
            probe.close()
        if status == 404:
            raise StateUnavailableError(probe.address, f"no index {self.index!r}; nothing was created. Check "
                                                       f"the index name: {CREATED_BY}")


# -- open_state URLs: es://host:9200/index?type=opaque, https://user:pass@host:9200/index ------------

_URL_PARAMS = ("fields", "api_key", "ca_certs", "verify_certs", "request_timeout", "connect_timeout",
               "shards", "replicas", "wait_for_active_shards", "refresh_interval")


def _build_elasticsearch(url: str, parts: urllib.parse.SplitResult, params: dict[str, str],
                         settings: dict[str, Any]) -> StoreStateFactory:
    scheme = "https" if parts.scheme.lower() == "https" else "http"
    userinfo, _, hostlist = parts.netloc.rpartition("@")
    if not hostlist:
        raise StateConfigError(f"state URL {redact(url)} needs a host: es://HOST:9200/INDEX")
    path = parts.path.strip("/")
    prefix, _, index = path.rpartition("/")
    hosts = [f"{scheme}://{host}{'/' + prefix if prefix else ''}" for host in hostlist.split(",") if host]
    extra: dict[str, Any] = {"hosts": hosts, "index": urllib.parse.unquote(index) or DEFAULT_INDEX}
    if userinfo:
        username, has_password, password = userinfo.partition(":")
        extra["username"] = urllib.parse.unquote(username)
        extra["password"] = urllib.parse.unquote(password) if has_password else None
    if "fields" in params:
        extra["fields"] = [name.strip() for name in params.pop("fields").split(",") if name.strip()]
    for name in ("api_key", "ca_certs"):
        if name in params:
            extra[name] = params.pop(name)
    if "verify_certs" in params:
        value = params.pop("verify_certs").strip().lower()
        if value not in ("true", "false", "1", "0", "yes", "no"):
            raise StateConfigError(f"state URL {redact(url)}: verify_certs={value!r} is not true or false")
        extra["verify_certs"] = value in ("true", "1", "yes")
    for name in ("request_timeout", "connect_timeout"):
        if name in params:
            value = params.pop(name)
            try:
                extra[name] = float(value)
            except ValueError:
                raise StateConfigError(f"state URL {redact(url)}: {name}={value!r} is not a number "
                                       f"of seconds") from None
    for name in ("shards", "replicas"):
        if name in params:
            value = params.pop(name)
            if not value.strip().isdigit():
                raise StateConfigError(f"state URL {redact(url)}: {name}={value!r} is not a whole number")
            extra[name] = int(value)
    if "wait_for_active_shards" in params:
        value = params.pop("wait_for_active_shards").strip()
        if value.lower() != "all" and not value.isdigit():
            raise StateConfigError(f"state URL {redact(url)}: wait_for_active_shards={value!r} is not "
                                   f'"all" or a number of shard copies')
        extra["wait_for_active_shards"] = value.lower() if value.lower() == "all" else int(value)
    if "refresh_interval" in params:
        extra["refresh_interval"] = params.pop("refresh_interval")
    return ElasticsearchState(**extra, **settings)


_EXAMPLE = "es://127.0.0.1:9200/counts"
for _scheme in ("es", "http", "https"):
    register_scheme(_scheme, Scheme(_URL_PARAMS, _build_elasticsearch, _EXAMPLE))

__all__ = ["ElasticsearchBackingMap", "ElasticsearchState", "index_mapping", "state_document"]
