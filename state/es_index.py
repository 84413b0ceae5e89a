"""An Elasticsearch/OpenSearch state index's cluster settings: shards, replicas, write consistency.

Three settings of :class:`~.elasticsearch.ElasticsearchState` (and the windows store built on
it) say how the index spreads over a cluster:

* ``shards``: ``index.number_of_shards`` when the state creates its index (fixed for the
  index's life);
* ``replicas``: ``index.number_of_replicas`` when it creates it (changeable later with
  ``PUT /INDEX/_settings``);
* ``wait_for_active_shards``: how many copies of a key's shard must be active before a
  ``_bulk`` write starts (``"all"``, or a number from 1 to ``replicas + 1``), sent with every
  write.

``None`` leaves each to the cluster (1 shard, 1 replica and 1 active copy on OpenSearch 2 and
Elasticsearch 7+). Routing is the cluster's: a document's shard is the hash of its ``_id``
(the encoded key), with no custom routing. An index that already exists is used as it is,
unless the state names ``shards`` or ``replicas`` and the index has others:
:func:`settings_mismatch` says which, and what to do.

Examples
--------
>>> creation_body(None, shards=3, replicas=1)["settings"]
{'index': {'number_of_shards': 3, 'number_of_replicas': 1}}
>>> bulk_parameters("all", request_timeout=30.0)
'?wait_for_active_shards=all&timeout=22500ms'
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from .checks import is_int
from .errors import StateConfigError
from .es_documents import index_mapping

#: OpenSearch's and Elasticsearch's largest ``index.number_of_shards``.
MAX_SHARDS = 1024
#: The part of ``request_timeout`` a write may wait on the server for its shard copies, so that
#: the server answers (503, the batch waits within its outage budget) before the client gives up.
SERVER_WAIT_SHARE = 0.75

_SETTING = {"shards": "index.number_of_shards", "replicas": "index.number_of_replicas"}


def check_index_settings(shards: Any, replicas: Any, wait_for_active_shards: Any) -> int | str | None:
    """Refuse settings the cluster would refuse; return ``wait_for_active_shards`` normalised.

    Raises
    ------
    StateConfigError
        A setting out of its range, or more copies to wait for than the index has.

    Examples
    --------
    >>> check_index_settings(3, 1, "ALL"), check_index_settings(None, None, 2)
    ('all', 2)
    >>> try:
    ...     check_index_settings(3, 1, 3)
    ... except StateConfigError as refused:
    ...     print(str(refused).split(":")[0])
    wait_for_active_shards=3 is more than the 2 copies of each shard (replicas=1 + the primary)
    """
    if shards is not None and not (is_int(shards, 1) and shards <= MAX_SHARDS):
        raise StateConfigError(f"shards must be a number of primary shards from 1 to {MAX_SHARDS}, "
                               f"got {shards!r}")
    if replicas is not None and not is_int(replicas, 0):
        raise StateConfigError(f"replicas must be a number of replicas per shard >= 0, got {replicas!r}")
    wait = wait_for_active_shards
    if wait is None:
        return None
    if isinstance(wait, str) and wait.strip().lower() == "all":
        return "all"
    if not is_int(wait, 1):
        raise StateConfigError(f'wait_for_active_shards must be "all" or a number of shard copies >= 1, '
                               f"got {wait!r}")
    if replicas is not None and wait > replicas + 1:
        raise StateConfigError(
            f"wait_for_active_shards={wait} is more than the {replicas + 1} copies of each shard "
            f'(replicas={replicas} + the primary): no write could start; give at most {replicas + 1}, '
            f'or "all"')
    return int(wait)


def check_refresh_interval(value: Any) -> str | None:
    """``refresh_interval`` checked: None (the cluster's default), ``"-1"`` (no periodic refresh)
    or a time value such as ``"30s"``, as the cluster would take it.

    Examples
    --------
    >>> check_refresh_interval("30s"), check_refresh_interval(" -1 "), check_refresh_interval(None)
    ('30s', '-1', None)
    >>> check_refresh_interval("soon")
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.StateConfigError: refresh_interval must be a time value such as '1s', \
'30s' or '500ms', or '-1' (no periodic refresh), got 'soon'
    """
    if value is None:
        return None
    text = value.strip() if isinstance(value, str) else None
    if text is None or not _TIME_VALUE.fullmatch(text):
        raise StateConfigError(f"refresh_interval must be a time value such as '1s', '30s' or '500ms', "
                               f"or '-1' (no periodic refresh), got {value!r}")
    return text


_TIME_VALUE = re.compile(r"-1|\d+(nanos|micros|ms|s|m|h|d)")


def creation_body(fields: Sequence[str] | None, *, shards: int | None,
                  replicas: int | None, refresh_interval: str | None = None) -> dict[str, Any]:
    """The body of the ``PUT /INDEX`` that creates a state index: its mapping, and its shards,
    replicas and refresh interval where given.

    Examples
    --------
    >>> sorted(creation_body(["word"], shards=None, replicas=None))
    ['mappings']
    >>> creation_body(["word"], shards=None, replicas=None, refresh_interval="30s")["settings"]
    {'index': {'refresh_interval': '30s'}}
    """
    body = index_mapping(fields)
    settings: dict[str, int | str] = {}
    if shards is not None:
        settings["number_of_shards"] = shards
    if replicas is not None:
        settings["number_of_replicas"] = replicas
    if refresh_interval is not None:
        settings["refresh_interval"] = refresh_interval
    if settings:
        body["settings"] = {"index": settings}
    return body


def bulk_parameters(wait_for_active_shards: int | str | None, *, request_timeout: float) -> str:
    """The query string of a state's ``_bulk``: the copies to wait for and how long the server
    may wait for them (below ``request_timeout``); empty when the cluster's default applies.

    Examples
    --------
    >>> bulk_parameters(None, request_timeout=30.0), bulk_parameters(2, request_timeout=10.0)
    ('', '?wait_for_active_shards=2&timeout=7500ms')
    """
    if wait_for_active_shards is None:
        return ""
    wait_ms = max(1, int(request_timeout * SERVER_WAIT_SHARE * 1000))
    return f"?wait_for_active_shards={wait_for_active_shards}&timeout={wait_ms}ms"


def found_settings(answer: Any) -> dict[str, int]:
    """``{"shards": n, "replicas": n}`` from a ``GET /INDEX/_settings?flat_settings=true`` answer
    (the first index it names: an alias answers with the index behind it).

    Examples
    --------
    >>> found_settings({"wc": {"settings": {"index.number_of_shards": "1", "index.number_of_replicas": "1"}}})
    {'shards': 1, 'replicas': 1}
    """
    found: dict[str, int] = {}
    for entry in answer.values() if isinstance(answer, dict) else ():
        settings = entry.get("settings") if isinstance(entry, dict) else None
        if not isinstance(settings, dict):
            continue
        for name, setting in _SETTING.items():
            value = settings.get(setting)
            if isinstance(value, str | int) and str(value).isdigit():
                found[name] = int(value)
        break
    return found


def inactive_primaries(health: Any) -> int | None:
    """How many primary shards of the index are not active yet, from a
    ``GET _cluster/health/INDEX?level=indices`` answer (``number_of_shards`` less
    ``active_primary_shards``); None when it lists no index (a server without that level).

    Replicas do not count: a replica recovering (a node back after a loss) leaves the index
    readable and writable, so nothing waits for it.

    Examples
    --------
    >>> inactive_primaries({"indices": {"wc": {"number_of_shards": 3, "active_primary_shards": 2}}})
    1
    >>> inactive_primaries({"status": "green"}) is None
    True
    """
    indices = health.get("indices") if isinstance(health, dict) else None
    if not isinstance(indices, dict) or not indices:
        return None
    waiting = 0
    for entry in indices.values():
        total = entry.get("number_of_shards") if isinstance(entry, dict) else None
        active = entry.get("active_primary_shards") if isinstance(entry, dict) else None
        if not (is_int(total) and is_int(active)):
            return None
        waiting += max(total - active, 0)
    return waiting


def settings_mismatch(index: str, address: str, wanted: dict[str, int | None],
                      found: dict[str, int]) -> str | None:
    """Why an existing index does not fit the state's ``shards``/``replicas`` (None: it fits).

    Parameters
    ----------
    index : str
        The index, for the message.
    address : str
        The state, without secrets.
    wanted : dict
        ``{"shards": n or None, "replicas": n or None}`` as the state names them (None: any).
    found : dict
        What the index has (:func:`found_settings`).

    Examples
    --------
    >>> problem = settings_mismatch("wc", "http://es1:9200/wc", {"shards": 3, "replicas": 1},
    ...                             {"shards": 1, "replicas": 1})
    >>> import textwrap
    >>> print(textwrap.fill(problem, 96))
    http://es1:9200/wc: index 'wc' exists with 1 shard(s) and 1 replica(s), but the state asks for
    shards=3: the shard count is fixed when an index is created, so write to a new index
    (index=...), or reindex into one made with 3 shards (POST _reindex), or leave shards= out to use
    'wc' as it is
    """
    differ = {name: value for name, value in wanted.items()
              if value is not None and name in found and found[name] != value}
    if not differ:
        return None
    asked = ", ".join(f"{name}={value}" for name, value in differ.items())
    fixes = []
    if "shards" in differ:
        fixes.append(f"the shard count is fixed when an index is created, so write to a new index "
                     f"(index=...), or reindex into one made with {differ['shards']} shards (POST "
                     f"_reindex)")
    if "replicas" in differ:
        setting = json.dumps({"index": {"number_of_replicas": differ["replicas"]}})
        fixes.append(f"change the replicas in place: PUT /{index}/_settings {setting}")
    names = " and ".join(f"{name}=" for name in differ)
    return (f"{address}: index {index!r} exists with {found.get('shards', '?')} shard(s) and "
            f"{found.get('replicas', '?')} replica(s), but the state asks for {asked}: "
            f"{'; or '.join(fixes)}, or leave {names} out to use {index!r} as it is")


__all__ = ["MAX_SHARDS", "SERVER_WAIT_SHARE", "bulk_parameters", "check_index_settings",
           "check_refresh_interval", "creation_body", "found_settings", "inactive_primaries",
           "settings_mismatch"]
