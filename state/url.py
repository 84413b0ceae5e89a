"""``open_state(url)``: a state from a URL, for reads outside Spark and the ``query`` command.

Supported URLs (each takes ``type=opaque|transactional|non_transactional``,
default opaque, and the common settings as query parameters: ``cache_size``,
``max_multi_get_batch_size``, ``max_multi_put_batch_size``, ``txid_offset``,
``max_conflict_retries``)::

    memory://NAME
    sqlite:///absolute/path.db?table=T    (also busy_timeout=SECONDS, synchronous=FULL|NORMAL)
    sqlite://relative/path.db             (relative to the working directory)
    redis://[[USER]:PASSWORD@]HOST:PORT/DB?prefix=P
                                          (also rediss:// for TLS; expiry=SECONDS, ca_certs=PATH,
                                          verify_certs=, connect_timeout=, socket_timeout=)
    es://HOST:9200[,HOST2:9200]/INDEX     (also http://..., https://USER:PASS@HOST:9200/INDEX;
                                          fields=word,lang, api_key=, ca_certs=, verify_certs=,
                                          request_timeout=, connect_timeout=, shards=, replicas=,
                                          wait_for_active_shards=)
    postgresql://[USER[:PASSWORD]@]HOST:5432/DB?table=T
                                          (also postgres://; connect_timeout=SECONDS,
                                          statement_timeout=SECONDS, and libpq parameters:
                                          sslmode=, sslrootcert=, application_name=, ...)

Backends add their scheme with :func:`register_scheme` (``redis.py``, ``elasticsearch.py``
and ``postgres.py`` do when ``trident_spark.state`` is imported).
"""

from __future__ import annotations

import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from .errors import StateConfigError
from .factory import StoreStateFactory
from .map import MapState
from .memory import MemoryState
from .redaction import redact_state_url, redact_text, register_state_url_params
from .sqlite import SqliteState
from .state_api import StateFactory
from .values import StateType

_INT_SETTINGS = ("cache_size", "txid_offset", "max_conflict_retries")
_BATCH_SETTINGS = ("max_multi_get_batch_size", "max_multi_put_batch_size")
COMMON_PARAMS = ("type", *_INT_SETTINGS, *_BATCH_SETTINGS)

#: Builds a factory from the URL (as given, for messages), its split form, its backend
#: parameters and the parsed common settings.
Builder = Callable[[str, urllib.parse.SplitResult, dict[str, str], dict[str, Any]], StateFactory]


@dataclass(frozen=True)
class Scheme:
    """How one URL scheme becomes a state factory.

    Attributes
    ----------
    params : tuple of str
        The backend's own query parameters (besides the common ones).
    build : Builder
        ``build(url, parts, backend_params, common_settings) -> StateFactory``: a built-in
        store's factory, or a user's own (Trident's ``StateFactory``, whose ``makeState``
        returns a map state).
    example : str
        A URL shown in error messages.
    """

    params: tuple[str, ...]
    build: Builder
    example: str


#: ``url`` as messages show it: its password, its secret parameters and the value of every
#: parameter its scheme does not take as ``***`` (a misspelled ``passwrd=`` is a secret too):
#: :func:`.redaction.redact_state_url`, under the name the backends import.
redact = redact_state_url


def parse_error(exc: ValueError) -> str:
    """Why a URL could not be parsed, without the text of its query: ``parse_qsl`` quotes the bad
    field, which may be a secret pasted in.

    Examples
    --------
    >>> parse_error(ValueError("bad query field: 'hunter2'"))
    "a query field has no '=' (each parameter is NAME=VALUE, joined by '&')"
    """
    if "bad query field" in str(exc):
        return "a query field has no '=' (each parameter is NAME=VALUE, joined by '&')"
    return str(exc)


def _parse_type(value: str, url: str) -> StateType:
    normalized = value.strip().lower().replace("-", "_")
    normalized = {"nontransactional": "non_transactional"}.get(normalized, normalized)
    try:
        return StateType(normalized)
    except ValueError:
        raise StateConfigError(f"state URL {redact(url)}: type={value!r} is not a state type; "
                               f"use type=opaque, type=transactional or type=non_transactional") from None


def _parse_int(name: str, value: str, url: str) -> int:
    try:
        return int(value)
    except ValueError:
        raise StateConfigError(f"state URL {redact(url)}: {name}={value!r} is not an integer") from None


def _common_settings(params: dict[str, str], url: str) -> dict[str, Any]:
    settings: dict[str, Any] = {"state_type": _parse_type(params.pop("type", "opaque"), url)}
    for name in _INT_SETTINGS:
        if name in params:
            settings[name] = _parse_int(name, params.pop(name), url)
    for name in _BATCH_SETTINGS:
        if name in params:
            value = params.pop(name)
            settings[name] = None if value.lower() == "none" else _parse_int(name, value, url)
    return settings


def _build_memory(url: str, parts: urllib.parse.SplitResult, params: dict[str, str],
                  settings: dict[str, Any]) -> StoreStateFactory:
    name = urllib.parse.unquote(parts.netloc)
    if not name or parts.path not in ("", "/"):
        raise StateConfigError(f"memory state URL {redact(url)!r} needs one name: memory://NAME")
    return MemoryState(name=name, **settings)


def _build_sqlite(url: str, parts: urllib.parse.SplitResult, params: dict[str, str],
                  settings: dict[str, Any]) -> StoreStateFactory:
    path = urllib.parse.unquote(parts.netloc + parts.path)
    if path.startswith("//"):
        path = path[1:]          # sqlite:////abs/path.db (SQLAlchemy's absolute form)
    if not path:
        raise StateConfigError(f"sqlite state URL {redact(url)!r} needs a file path: "
                               f"sqlite:///absolute/path.db or sqlite://relative/path.db")
    extra: dict[str, Any] = {}
    if "table" in params:
        extra["table"] = params.pop("table")
    if "busy_timeout" in params:
        value = params.pop("busy_timeout")
        try:
            extra["busy_timeout"] = float(value)
        except ValueError:
            raise StateConfigError(f"state URL {redact(url)}: busy_timeout={value!r} is not a "
                                   f"number of seconds") from None
    if "synchronous" in params:
        extra["synchronous"] = params.pop("synchronous")
    return SqliteState(path=path, **extra, **settings)


SCHEMES: dict[str, Scheme] = {
    "memory": Scheme((), _build_memory, "memory://wordcount"),
    "sqlite": Scheme(("table", "busy_timeout", "synchronous"), _build_sqlite,
                     "sqlite:///var/lib/app/state.db?table=counts"),
}
for _name, _scheme in SCHEMES.items():
    register_state_url_params(_name, (*_scheme.params, *COMMON_PARAMS))


def register_scheme(name: str, scheme: Scheme) -> None:
    """Make ``open_state`` accept ``name://...`` URLs (how the Redis and Elasticsearch backends plug in).

    Examples
    --------
    >>> register_scheme("mem2", SCHEMES["memory"]); parse_state_url("mem2://wc").name
    'wc'
    >>> del SCHEMES["mem2"]
    """
    SCHEMES[name.lower()] = scheme
    register_state_url_params(name, (*scheme.params, *COMMON_PARAMS))  # the others' values are hidden


def parse_state_url(url: str) -> StateFactory:
    """The state factory a URL describes (settings only; nothing is opened).

    Parameters
    ----------
    url : str
        ``memory://NAME`` or ``sqlite:///path.db?table=T``, with ``type=`` and settings.

    Raises
    ------
    StateConfigError
        Unknown scheme, missing name or path, unknown or repeated parameter, bad value.

    Examples
    --------
    >>> spec = parse_state_url("memory://wc?type=transactional&cache_size=0")
    >>> spec.name, spec.state_type.value, spec.cache_size
    ('wc', 'transactional', 0)
    """
    if not isinstance(url, str) or "://" not in url:
        raise StateConfigError(f"{redact_text(repr(url))} is not a state URL; examples: "
                               + ", ".join(s.example for s in SCHEMES.values()))
    try:
        parts = urllib.parse.urlsplit(url)
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise StateConfigError(f"state URL {redact(url)} cannot be parsed: {parse_error(exc)}") from None
    scheme = SCHEMES.get(parts.scheme.lower())
    if scheme is None:
        raise StateConfigError(f"unknown state URL scheme {parts.scheme!r} in {redact(url)}; supported: "
                               + ", ".join(sorted(SCHEMES)))
    params: dict[str, str] = {}
    for name, value in pairs:
        if name in params:
            raise StateConfigError(f"state URL {redact(url)}: parameter {name!r} given twice")
        params[name] = value
    unknown = sorted(set(params) - set(COMMON_PARAMS) - set(scheme.params))
    if unknown:
        raise StateConfigError(
            f"state URL {redact(url)}: unknown parameter{'s' if len(unknown) > 1 else ''} "
            f"{', '.join(unknown)}; {parts.scheme} URLs take " + ", ".join((*scheme.params, *COMMON_PARAMS)))
    settings = _common_settings(params, url)
    return scheme.build(url, parts, params, settings)


def open_state(url: str | StateFactory, *, create: bool = False) -> MapState:
    """Open a state from a URL (or a factory) outside Spark: to read it, or to write it.

    ``multiGet(keys)`` on the result answers current values: ``curr`` for
    opaque, ``val`` for transactional, None for a missing key; keys are lists
    of group values.

    Opening creates nothing: a SQLite file or table, or an Elasticsearch index,
    that is not there raises :class:`~.errors.StateUnavailableError` naming it
    (:func:`check_exists`), so a mistyped path is an error, not an empty state.
    The topology that writes a state creates it. ``create=True`` opens it as a
    topology does, creating what is missing (to write a state from a program).
    A user's own state factory (a scheme registered with :func:`register_scheme`) opens
    as its ``makeState({}, 0, 1)``, which must return a map state.

    Examples
    --------
    >>> MemoryState.opaque(name="doc-url").open().multiUpdate(0, [["cat"]], [lambda old: 7])
    [7]
    >>> with open_state("memory://doc-url?type=opaque") as state:
    ...     state.multiGet([["cat"], ["dog"]])
    [7, None]
    >>> open_state("sqlite:///no/such/dir/wc.db")
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.StateUnavailableError: cannot use the state store at /no/such/dir/wc.db: ...
    """
    factory = url if isinstance(url, StateFactory) else parse_state_url(url)
    if not isinstance(factory, StoreStateFactory):
        # A user's own factory (a scheme it registered): its map state, as partition 0 of 1.
        state = factory.makeState({}, 0, 1)
        if not isinstance(state, MapState):
            raise StateConfigError(
                f"{type(factory).__name__}.makeState returned {type(state).__name__}, not a map state; "
                "open_state reads map states (return OpaqueMap.build(backing) or another kind's build())")
        return state
    if not create:
        check_exists(factory)
    return factory.open()


def check_exists(factory: StoreStateFactory) -> None:
    """Refuse, creating nothing, a state that is not there: a SQLite file or table, an Elasticsearch index.

    Other stores create nothing when read (a Redis key, a memory state), so they pass.

    Raises
    ------
    StateUnavailableError
        Naming the path or address, what is missing, and what to do.

    Examples
    --------
    >>> check_exists(MemoryState.opaque(name="anything"))
    >>> check_exists(SqliteState.opaque(path="/no/such/dir/wc.db"))
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.StateUnavailableError: cannot use the state store at /no/such/dir/wc.db: ...
    """
    factory.check_exists()



__all__ = ["COMMON_PARAMS", "SCHEMES", "Scheme", "check_exists", "open_state", "parse_error",
           "parse_state_url", "redact", "register_scheme"]
