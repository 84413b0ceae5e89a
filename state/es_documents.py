"""Elasticsearch state documents: the index mapping and one document per key.

Document layout (index ``trident_state`` unless configured), ``_id`` = the
encoded key (``keys.py``; hashed to fit Elasticsearch's 512-byte ``_id`` limit)::

    {
      "key":   ["cat", 3],       # the group values (keyword): search key:cat
      "word":  "cat",            # with fields=["word", "n"]: one field per group field,
      "n":     3,                #   mapped as keyword like key (any group value fits)
      "txid":  7,                # transactional and opaque states (long)
      "value": 12,               # the current value, curr / val (stored, not indexed)
      "state": "[7,12,10]"       # what the state reads back: the serializer's bytes
    }

``state`` is the source of truth: the exact bytes the serializer wrote (Storm's
JSON ``[txid, curr, prev]`` / ``[txid, val]`` / ``val`` by default), kept as a
string that is neither indexed nor in doc values; bytes that are not UTF-8 go
to ``state_base64`` instead. ``key``, the named group fields, ``txid`` and
``value`` are copies for people: Kibana/OpenSearch Dashboards show them and
``key``, the group fields and ``txid`` can be searched (``word:cat``,
``txid < 100``). ``value`` is an object mapping with ``enabled: false`` (kept in
``_source``, never parsed), so values of any shape fit one index; a value JSON
lacks shows in its tagged form (``{"~tuple": [1, 2]}``, ``{"~py": "..."}``,
``serializers.py``). A group value that is a list, tuple, dict or set is
copied into ``key`` and its field as its JSON text (``"[1, 2]"``), since a
keyword field holds no objects: group values of any type share one index. The index is
created on first use with that explicit mapping if it does not exist (other
string fields map to ``keyword`` through a dynamic template); an existing index
is used as it is.
"""

from __future__ import annotations

import base64
import datetime
import decimal
import json
import math
from collections.abc import Sequence
from typing import Any

from .base import Key
from .errors import StateError
from .pyvalues import to_json
from .values import OpaqueValue, TransactionalValue

#: Document fields the state itself uses; group fields may not take these names.
RESERVED_FIELDS = ("key", "txid", "value", "state", "state_base64")


def index_mapping(fields: Sequence[str] | None = None) -> dict[str, Any]:
    """The explicit mapping a state index is created with.

    Examples
    --------
    >>> mapping = index_mapping(["word"])["mappings"]
    >>> mapping["properties"]["key"], mapping["properties"]["word"]
    ({'type': 'keyword'}, {'type': 'keyword'})
    >>> mapping["properties"]["value"]
    {'type': 'object', 'enabled': False}
    """
    properties: dict[str, Any] = {
        "key": {"type": "keyword"},
        "txid": {"type": "long"},
        "value": {"type": "object", "enabled": False},
        "state": {"type": "keyword", "index": False, "doc_values": False},
        "state_base64": {"type": "binary"},
    }
    return {"mappings": {
        # Group fields not declared here (and string group fields) map to keyword, not text.
        "dynamic_templates": [{"strings_as_keywords": {
            "match_mapping_type": "string", "mapping": {"type": "keyword"}}}],
        "properties": {**properties, **{name: {"type": "keyword"} for name in fields or ()}},
    }}


def _jsonable(value: Any) -> Any:
    """A group value as a scalar JSON value for the document's searchable (keyword) fields.

    A keyword field holds strings, numbers and booleans, never objects, so a
    list, tuple, dict or set group value is copied as its JSON text (tagged
    where JSON lacks the type): documents whose group values differ in type
    share the field.
    """
    if value is None or isinstance(value, str | bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, bytes | bytearray):
        return bytes(value).hex()
    if isinstance(value, datetime.date):
        return value.isoformat()
    if isinstance(value, decimal.Decimal):
        return str(value)
    if isinstance(value, list | tuple | dict | set | frozenset):
        try:
            return json.dumps(to_json(value), ensure_ascii=False)
        except StateError:
            return repr(value)
    return str(value)


def _readable_value(value: Any, data: bytes) -> tuple[bool, Any]:
    """The current value (curr / val) as JSON, read back from the serialized bytes if they are JSON."""
    try:
        decoded = json.loads(data)
    except (ValueError, UnicodeDecodeError):
        return False, None
    if isinstance(value, OpaqueValue | TransactionalValue):
        if isinstance(decoded, list) and len(decoded) in (2, 3):
            return True, decoded[1]
        return False, None
    return True, decoded


def state_document(key: Key, value: Any, data: bytes, fields: Sequence[str] | None = None) -> dict[str, Any]:
    """The document stored for one key: searchable copies of the key and txid, and the stored bytes.

    Parameters
    ----------
    key : Key
        The group values.
    value : Any
        The value object (``OpaqueValue``, ``TransactionalValue`` or a plain value).
    data : bytes
        What the serializer made of ``value``: stored in ``state``.
    fields : sequence of str, optional
        The group field names: each group value is also stored under its name.

    Examples
    --------
    >>> state_document(["cat"], OpaqueValue(7, 12, 10), b"[7,12,10]", ["word"])
    {'key': ['cat'], 'word': 'cat', 'txid': 7, 'value': 12, 'state': '[7,12,10]'}
    >>> state_document((), 42, b"42")
    {'key': [], 'value': 42, 'state': '42'}
    """
    doc: dict[str, Any] = {"key": [_jsonable(v) for v in key]}
    if fields and len(key) > 0:
        if len(fields) != len(key):
            raise StateError(f"key {list(key)!r} has {len(key)} group values but the state was given "
                             f"{len(fields)} field names {list(fields)!r}: fields= must name the group "
                             f"fields in order")
        doc.update(zip(fields, doc["key"], strict=True))
    if isinstance(value, OpaqueValue | TransactionalValue):
        doc["txid"] = value.txid
    readable, current = _readable_value(value, data)
    if readable:
        doc["value"] = current
    try:
        doc["state"] = data.decode("utf-8")
    except UnicodeDecodeError:
        doc["state_base64"] = base64.b64encode(data).decode("ascii")
    return doc


def stored_bytes(source: Any) -> bytes | None:
    if not isinstance(source, dict):
        return None
    if isinstance(source.get("state"), str):
        return str(source["state"]).encode("utf-8")
    if isinstance(source.get("state_base64"), str):
        return base64.b64decode(source["state_base64"])
    return None
