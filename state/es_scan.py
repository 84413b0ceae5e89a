"""Listing every key of an ElasticsearchState (``scanVersioned``, for ``getTuples``).

A ``_refresh`` of the index first, so the scan sees recent writes (a search is
near-real-time: it sees what the last refresh made searchable; reads by key,
``_mget``, are real-time). Where the credentials may not refresh, the scan waits one
``index.refresh_interval`` instead (1 s by default: the index refreshes itself that
often, or, idle, before the next search). Then a scroll (``_search?scroll=`` sorted by
``_doc``, with ``seq_no_primary_term``), cleared at the end. Scroll works alike on
Elasticsearch, OpenSearch and osmem-server (point-in-time APIs differ between them).
Group values come from the ``_id`` (the encoded key), or, for a key too long to be kept
readable, from the document's ``key`` field (exact for strings, numbers, booleans and
None; bytes, dates and decimals come back as their JSON copies: hex, ISO text, decimal
text; lists, tuples, dicts and sets as their JSON text).

Examples
--------
>>> MAX_PAGE, SCROLL_KEEP_ALIVE
(10000, '2m')
"""

from __future__ import annotations

import contextlib
import json
import re
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from .base import Key, Versioned
from .errors import StateError, UnreadableValueError
from .es_documents import stored_bytes
from .keys import decode_scanned_key, is_hashed, is_reserved
from .serializers import deserialize_stored

#: Most documents per scroll page (Elasticsearch's default ``index.max_result_window``).
MAX_PAGE = 10_000
#: How long the server keeps the scroll between two pages.
SCROLL_KEEP_ALIVE = "2m"
#: Elasticsearch's and OpenSearch's default ``index.refresh_interval`` (s).
DEFAULT_REFRESH_INTERVAL = 1.0
#: The longest a scan waits for a refresh it may not ask for (s).
MAX_REFRESH_WAIT = 30.0

_TIME_VALUE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*(nanos|micros|ms|s|m|h|d)?\s*$")
_TIME_UNITS = {"nanos": 1e-9, "micros": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0, "d": 86400.0}


def parse_time_value(text: Any) -> float | None:
    """Seconds in an Elasticsearch time value ("1s", "500ms"); None for "-1" (disabled) or garbage.

    Examples
    --------
    >>> parse_time_value("1s"), parse_time_value("500ms"), parse_time_value("-1")
    (1.0, 0.5, None)
    """
    found = _TIME_VALUE.match(str(text))
    if found is None:
        return None
    return float(found.group(1)) * _TIME_UNITS[found.group(2) or "ms"]


@dataclass(frozen=True)
class IndexConnection:
    """What a scan needs of the store: its index, how it speaks to the server, how it decodes.

    ``open()`` makes the connection (creating the index if missing); ``request(method, target,
    body, denied_ok=...)`` answers ``(status, body)``; ``check(status, body, doing)`` raises the
    store's error for a failed answer.
    """

    index: str
    address: str
    serializer: Any
    open: Callable[[], Any]
    request: Callable[..., tuple[int, Any]]
    check: Callable[[int, Any, str], None]


def scan_index(store: IndexConnection, size: int) -> Iterator[tuple[Key, Versioned]]:
    """Every document of the store's index, as (group values, versioned value): ``_refresh``, then
    a scroll in pages of ``size``, cleared when the iterator is exhausted or closed."""
    index = store.index
    store.open()                                       # creates the index if missing
    status, answer = store.request("POST", f"/{index}/_refresh", denied_ok=True)
    if status in (401, 403):
        time.sleep(_refresh_interval(store))            # the index's own refresh, instead
    elif status != 404:
        store.check(status, answer, f"_refresh of {index!r} before listing its keys")
    query = {"size": size, "sort": ["_doc"], "seq_no_primary_term": True,
             "_source": ["key", "state", "state_base64"]}
    status, answer = store.request("POST", f"/{index}/_search?scroll={SCROLL_KEEP_ALIVE}", query)
    if status == 404 and "index_not_found" in json.dumps(answer, default=str):
        return                                        # deleted meanwhile: nothing stored
    store.check(status, answer, f"scroll search of {index!r}")
    scroll_id = answer.get("_scroll_id") if isinstance(answer, dict) else None
    try:
        while True:
            hits = answer.get("hits", {}).get("hits") if isinstance(answer, dict) else None
            if not isinstance(hits, list):
                raise StateError(f"{store.address}: a scroll search answered {str(answer)[:200]!r}")
            if not hits:
                return
            for hit in hits:
                if not is_reserved(str(hit.get("_id"))):
                    yield _scanned(store, hit)
            if not isinstance(scroll_id, str):
                raise StateError(f"{store.address}: a scroll search answered no _scroll_id")
            status, answer = store.request("POST", "/_search/scroll",
                                           {"scroll": SCROLL_KEEP_ALIVE, "scroll_id": scroll_id})
            store.check(status, answer, f"scroll of {index!r} (listing its keys took longer than "
                                        f"{SCROLL_KEEP_ALIVE} between two pages?)")
            scroll_id = answer.get("_scroll_id", scroll_id) if isinstance(answer, dict) else scroll_id
    finally:
        if isinstance(scroll_id, str):
            _clear_scroll(store, scroll_id)

def _refresh_interval(store: IndexConnection) -> float:
    """The index's ``refresh_interval`` in seconds (capped), or the default where it cannot be read."""
    status, answer = store.request(
        "GET", f"/{store.index}/_settings/index.refresh_interval?include_defaults=true&flat_settings=true",
        denied_ok=True)
    seconds = None
    entries = answer.values() if status == 200 and isinstance(answer, dict) else ()
    for entry in entries:
        for part in ("settings", "defaults"):
            found = entry.get(part) if isinstance(entry, dict) else None
            if isinstance(found, dict) and "index.refresh_interval" in found:
                seconds = parse_time_value(found["index.refresh_interval"])
                break
    # A disabled refresh (-1) makes nothing searchable by waiting: the scan cannot do better.
    return min(DEFAULT_REFRESH_INTERVAL if seconds is None else seconds, MAX_REFRESH_WAIT)


def _clear_scroll(store: IndexConnection, scroll_id: str) -> None:
    """Free the scroll context now instead of when it times out (best effort)."""
    with contextlib.suppress(StateError):             # it expires after the keep-alive anyway
        store.request("DELETE", "/_search/scroll", {"scroll_id": [scroll_id]}, denied_ok=True)

def _scanned(store: IndexConnection, hit: dict[str, Any]) -> tuple[Key, Versioned]:
    doc_id = hit.get("_id")
    if not isinstance(doc_id, str):
        raise StateError(f"{store.address}: a scroll search answered a hit without _id: "
                         f"{str(hit)[:200]!r}")
    source = hit.get("_source")
    if is_hashed(doc_id):
        stored_key = source.get("key") if isinstance(source, dict) else None
        if not isinstance(stored_key, list):
            raise StateError(f"{store.address}: document {doc_id[:80]!r}... has a hashed _id and no 'key' "
                             f"field to read its group values from (written by another program?)")
        key: list[Any] = stored_key
    else:
        key = decode_scanned_key(doc_id, store.address)
    data = stored_bytes(source)
    if data is None:
        raise UnreadableValueError(store.address, key, (
            f"document {doc_id!r} has no 'state' field (written by another program?)"))
    try:
        version = (int(hit["_seq_no"]), int(hit["_primary_term"]))
    except (KeyError, TypeError, ValueError):
        raise StateError(f"{store.address}: a scroll search answered document {doc_id!r} without "
                         f"_seq_no/_primary_term") from None
    value = deserialize_stored(store.serializer, data, key=key, address=store.address)
    return key, Versioned(value, version)


__all__ = ["DEFAULT_REFRESH_INTERVAL", "MAX_PAGE", "MAX_REFRESH_WAIT", "SCROLL_KEEP_ALIVE", "IndexConnection",
           "parse_time_value", "scan_index"]
