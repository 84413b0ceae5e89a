"""PostgresState: map state in a PostgreSQL table, one row per key, conditional writes on a version column.

Layout: one table (``trident_state`` unless configured) in the DSN's database::

    k        text COLLATE "C" PRIMARY KEY  -- the encoded key (keys.py), readable for short keys
    v        bytea NOT NULL                -- the serialized value: [txid, curr, prev] / [txid, val] / val
    version  bigint NOT NULL               -- changed by every write; writes are conditional on it

The table is created (``CREATE TABLE IF NOT EXISTS``, under an advisory lock so
that two tasks creating it at once do not collide) when a state first connects;
``open_state`` without ``create=True`` first checks that it is there
(:meth:`PostgresState.check_exists`) and creates nothing.

Reads and writes, each one statement, so one round trip and one transaction:

* ``multiGetVersioned``: ``SELECT k, v, version ... WHERE k = ANY(%s)``;
* ``scanVersioned`` (every key, for ``getTuples``): ``WHERE k > %s ORDER BY k LIMIT %s`` pages;
* ``multiPutIfVersion``: the batch's keys go as arrays into one statement with two
  data-modifying parts, ``UPDATE ... FROM unnest(...) WHERE t.k = u.k AND t.version =
  u.expected`` for the keys that were read and ``INSERT ... SELECT FROM unnest(...)
  ON CONFLICT (k) DO NOTHING`` for the keys that were missing, each ``RETURNING k``:
  a key that comes back won, any other lost its race. Under PostgreSQL's READ
  COMMITTED an ``UPDATE`` that waited for another writer's row re-checks its
  ``WHERE`` on the row that writer committed, so a version that moved meanwhile
  makes the key lose, never overwrite. The statement runs in autocommit mode: it
  is its own transaction, so the whole batch commits, or (an error, a lost
  connection) nothing of it does. Keys are sent in key order so that two writers
  lock shared rows in the same order; a deadlock PostgreSQL still reports
  (SQLSTATE 40P01: it rolled the statement back) is retried.

A written key's new version is its old version + 1; a created key starts at a
random 62-bit version, so a removed and re-created key never gets back a version
a stale reader holds.

Connections are opened lazily, on the first read or write, in the process that
uses the state (the factory holds only settings and pickles to Spark executors).
A server that does not answer fails within ``connect_timeout`` seconds with
:class:`~.errors.StateUnavailableError` naming the address (its password shown as
``***``). psycopg 3 is an optional dependency: ``pip install 'trident-spark[postgres]'``.
"""

from __future__ import annotations

import dataclasses
import re
import secrets
import threading
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .checks import is_int
from .errors import StateConfigError, StateError, StateUnavailableError
from .extras import require_extra
from .factory import CREATED_BY, StoreStateFactory
from .keys import decode_scanned_key, encode_key, encode_keys, is_reserved
from .serializers import Serializer, deserialize_stored, serialize_stored
from .url import Scheme, parse_error, redact, register_scheme

if TYPE_CHECKING:
    from typing import Self, Unpack

    import psycopg

    from .factory import StoreSettings

DEFAULT_TABLE = "trident_state"
DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_STATEMENT_TIMEOUT = 60.0

#: The schemes of a PostgreSQL URL (libpq accepts both).
SCHEMES = ("postgresql", "postgres")

#: libpq connection parameters a DSN (and so a state URL) may carry in its query string
#: (``password`` and ``sslpassword`` show as ``***`` in messages).
LIBPQ_PARAMS = (
    "sslmode", "sslrootcert", "sslcert", "sslkey", "sslpassword", "sslcrl", "sslcompression",
    "application_name", "target_session_attrs", "options", "keepalives", "keepalives_idle",
    "keepalives_interval", "keepalives_count", "tcp_user_timeout", "gssencmode", "channel_binding",
    "user", "password", "host", "hostaddr", "port", "dbname", "passfile", "service", "client_encoding",
)

_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
_DEADLOCK_RETRIES = 5


def _import_psycopg(address: str) -> Any:
    return require_extra("psycopg", f"the PostgreSQL state at {address}")


def _check_dsn(dsn: Any) -> urllib.parse.SplitResult:
    example = "postgresql://USER:PASSWORD@HOST:5432/DATABASE"
    if not isinstance(dsn, str) or "://" not in dsn:
        raise StateConfigError(f"PostgresState needs a PostgreSQL URL such as {example}, got "
                               f"{redact(dsn) if isinstance(dsn, str) else repr(dsn)}")
    try:
        parts = urllib.parse.urlsplit(dsn)
        parts.port  # noqa: B018 (validates the port)
        pairs = urllib.parse.parse_qsl(parts.query, keep_blank_values=True, strict_parsing=bool(parts.query))
    except ValueError as exc:
        raise StateConfigError(f"PostgreSQL URL {redact(dsn)} cannot be parsed: {parse_error(exc)}") from None
    if parts.scheme.lower() not in SCHEMES:
        raise StateConfigError(f"PostgreSQL URL {redact(dsn)} must start with postgresql:// or postgres://")
    unknown = sorted({name for name, _ in pairs} - set(LIBPQ_PARAMS))
    if unknown:
        raise StateConfigError(f"PostgreSQL URL {redact(dsn)}: unknown connection parameter"
                               f"{'s' if len(unknown) > 1 else ''} {', '.join(unknown)}; "
                               f"libpq parameters allowed here: {', '.join(LIBPQ_PARAMS)}")
    return parts


def _seconds_setting(name: str, value: Any, *, allow_none: bool) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not value > 0:
        raise StateConfigError(f"{name} must be a number of seconds > 0{' or None' if allow_none else ''}, "
                               f"got {value!r}")


def postgres_address(dsn: str, table: str) -> str:
    """Where a state lives, for messages: the DSN with its password as ``***``, and the table.

    Examples
    --------
    >>> postgres_address("postgresql://app:s3cret@db:5432/wc", "counts")
    'postgresql://app:***@db:5432/wc?table=counts'
    >>> postgres_address("postgresql://db/wc?sslmode=require", "counts")
    'postgresql://db/wc?sslmode=require&table=counts'
    """
    shown = redact(dsn)
    return f"{shown}{'&' if '?' in shown else '?'}table={table}"


class PostgresBackingMap(VersionedBackingMap):
    """The versioned backing map over one PostgreSQL table. Connects on first use.

    Parameters
    ----------
    spec : PostgresState
        The settings (DSN, table, timeouts).
    serializer : Serializer
        Turns values into the stored bytes and back.

    Examples
    --------
    >>> spec = PostgresState.opaque(dsn="postgresql://app:pw@db:5432/wc", table="counts")
    >>> spec.open_backing_map().address
    'postgresql://app:***@db:5432/wc?table=counts'
    """

    def __init__(self, spec: PostgresState, serializer: Serializer) -> None:
        self.spec = spec
        self.table = spec.table
        self.serializer = serializer
        self._connection: psycopg.Connection[Any] | None = None
        self._lock = threading.Lock()
        self._closed = False

    @property
    def address(self) -> str:
        return postgres_address(self.spec.dsn, self.table)

    # -- the connection ---------------------------------------------------------------------

    def _failed(self, exc: Exception, doing: str) -> StateError:
        """The state error for a psycopg exception raised while ``doing`` something."""
        pg = _import_psycopg(self.address)
        message = f"{type(exc).__name__}: {' '.join(str(exc).split())}"
        sqlstate = getattr(exc, "sqlstate", None) or ""
        text = str(exc)
        if sqlstate.startswith("28") or "authentication failed" in text or "no password supplied" in text:
            return StateUnavailableError(
                self.address, f"{message} ({doing}); give the user and password in the DSN: "
                              f"postgresql://USER:PASSWORD@HOST:5432/DATABASE")
        if sqlstate == "42501":
            return StateError(
                f"{self.address}: {message} ({doing}); the user needs SELECT, INSERT, UPDATE and DELETE on "
                f"table {self.table!r} (and CREATE on the schema for the first run, which creates it)")
        if sqlstate == "57014":
            return StateError(
                f"{self.address}: {message} ({doing}); the statement ran longer than statement_timeout="
                f"{self.spec.statement_timeout}s: another program may hold locks on the table's rows")
        if sqlstate == "3D000" or re.search(r'database "[^"]*" does not exist', text):
            return StateUnavailableError(self.address, f"{message} ({doing}); create the database or name "
                                                       f"another one in the DSN")
        if isinstance(exc, pg.OperationalError | OSError):
            return StateUnavailableError(
                self.address, f"{message} ({doing}); check that PostgreSQL runs there and is reachable from "
                              f"this machine (connect_timeout={self.spec.connect_timeout:g}s)")
        return StateError(f"{self.address}: {message} ({doing})")

    def _connect(self) -> psycopg.Connection[Any]:
        pg = _import_psycopg(self.address)
        spec = self.spec
        options: dict[str, Any] = {"autocommit": True,
                                   "connect_timeout": max(1, round(spec.connect_timeout))}
        try:
            connection: psycopg.Connection[Any] = pg.connect(spec.dsn, **options)
        except pg.Error as exc:
            raise self._failed(exc, "connecting") from exc
        try:
            if spec.statement_timeout is not None:
                connection.execute(f"SET statement_timeout = {max(1, round(spec.statement_timeout * 1000))}")
            self._set_up(pg, connection)
        except BaseException:
            connection.close()
            raise
        return connection

    def _set_up(self, pg: Any, connection: psycopg.Connection[Any]) -> None:
        """Create the table if it is missing, then check it has the state layout."""
        table = self.table
        try:
            [exists] = connection.execute("SELECT to_regclass(%s) IS NOT NULL", (f'"{table}"',)).fetchone() \
                or [False]
            if not exists:
                with connection.transaction():
                    # Two tasks creating the table at once would collide in the catalog
                    # (CREATE TABLE IF NOT EXISTS is not safe against itself): one at a time.
                    connection.execute("SELECT pg_advisory_xact_lock(hashtext(%s))",
                                       (f"trident-spark state table {table}",))
                    connection.execute(
                        f'CREATE TABLE IF NOT EXISTS "{table}" (k text COLLATE "C" PRIMARY KEY, '
                        f"v bytea NOT NULL, version bigint NOT NULL)")
            columns = [row[0] for row in connection.execute(
                "SELECT attname FROM pg_attribute WHERE attrelid = to_regclass(%s) AND attnum > 0 "
                "AND NOT attisdropped ORDER BY attnum", (f'"{table}"',))]
        except pg.Error as exc:
            raise self._failed(exc, f"creating table {table!r}") from exc
        if columns[:3] != ["k", "v", "version"]:
            raise StateUnavailableError(
                self.address, f"table {table!r} exists with columns {columns}, not a state table "
                              f"(k, v, version); choose another table=")

    def _run(self, doing: str, sql: str, params: Sequence[Any]) -> list[tuple[Any, ...]]:
        """One statement (its own transaction); its rows. Reconnects after a broken connection."""
        pg = _import_psycopg(self.address)
        with self._lock:
            if self._closed:
                raise StateError(f"{self.address}: the state was closed; open it again")
            if self._connection is None or self._connection.closed:
                self._connection = self._connect()
            connection = self._connection
            for attempt in range(_DEADLOCK_RETRIES + 1):
                try:
                    cursor = connection.execute(sql, params)
                    return cursor.fetchall() if cursor.description is not None else []
                except pg.errors.DeadlockDetected:
                    # PostgreSQL rolled the statement back: nothing of it was written.
                    if attempt == _DEADLOCK_RETRIES:
                        raise StateError(f"{self.address}: deadlocked {attempt + 1} times ({doing}); "
                                         f"another program locks this table's rows") from None
                except pg.Error as exc:
                    if connection.broken:
                        self._connection = None
                        connection.close()
                    raise self._failed(exc, doing) from exc
        raise AssertionError("unreachable")

    # -- reads and writes -------------------------------------------------------------------

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self.multiGetEncoded(keys, encode_keys(keys))

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        if not keys:
            return []
        encoded = list(encoded)
        rows = self._run(f"SELECT of {len(keys)} keys",
                         f'SELECT k, v, version FROM "{self.table}" WHERE k = ANY(%s::text[])', (encoded,))
        found = {k: (v, version) for k, v, version in rows}
        result: list[Versioned | None] = []
        serializer, address = self.serializer, self.address
        for key, enc in zip(keys, encoded, strict=True):
            row = found.get(enc)
            result.append(None if row is None else Versioned(
                deserialize_stored(serializer, bytes(row[0]), key=key, address=address), row[1]))
        return result

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """Every row in key order, one ``SELECT ... WHERE k > %s ORDER BY k LIMIT %s`` per page.

        Each page is its own statement (no transaction stays open between pages, so
        writers are never held up); a key is found once even if it is written while
        the scan runs.
        """
        return self._scan(check_scan_batch_size(batch_size))

    def _scan(self, size: int) -> Iterator[tuple[Key, Versioned]]:
        table = self.table
        after: str | None = None
        while True:
            if after is None:
                rows = self._run("scanning the table",
                                 f'SELECT k, v, version FROM "{table}" ORDER BY k LIMIT %s', (size,))
            else:
                rows = self._run("scanning the table",
                                 f'SELECT k, v, version FROM "{table}" WHERE k > %s ORDER BY k LIMIT %s',
                                 (after, size))
            for k, v, version in rows:
                if is_reserved(k):
                    continue
                key = decode_scanned_key(k, self.address)
                yield key, Versioned(deserialize_stored(self.serializer, bytes(v), key=key,
                                                        address=self.address), version)
            if len(rows) < size:
                return
            after = rows[-1][0]

    def _next_version(self, expected: Version | None) -> int:
        if expected is None:
            return secrets.randbits(62)
        if not is_int(expected):
            raise StateError(f"{self.address}: {expected!r} is not a version this store gave out")
        return expected + 1

    def multiPutIfVersion(self, keys: Sequence[Key], values: Sequence[Any],
                          expected_versions: Sequence[Version | None]) -> list[Version | None]:
        return self.multiPutEncoded(keys, encode_keys(keys), values, expected_versions)

    def multiPutEncoded(self, keys: Sequence[Key], encoded: Sequence[str], values: Sequence[Any],
                        expected_versions: Sequence[Version | None]) -> list[Version | None]:
        if not len(keys) == len(encoded) == len(values) == len(expected_versions):
            raise StateError(f"{self.address}: multiPutIfVersion needs as many values and versions as keys")
        if not keys:
            return []
        new_versions = [self._next_version(expected) for expected in expected_versions]
        serializer, address = self.serializer, self.address
        blobs = [serialize_stored(serializer, value, key=key, address=address)
                 for key, value in zip(keys, values, strict=True)]
        up_keys: list[str] = []
        up_blobs: list[bytes] = []
        up_expected: list[int] = []
        up_versions: list[int] = []
        in_keys: list[str] = []
        in_blobs: list[bytes] = []
        in_versions: list[int] = []
        # In key order: two writers of overlapping batches then lock shared rows in one order.
        for i in sorted(range(len(keys)), key=encoded.__getitem__):
            expected = expected_versions[i]
            if expected is None:
                in_keys.append(encoded[i])
                in_blobs.append(blobs[i])
                in_versions.append(new_versions[i])
            else:
                up_keys.append(encoded[i])
                up_blobs.append(blobs[i])
                up_expected.append(int(expected))  # type: ignore[call-overload]
                up_versions.append(new_versions[i])
        table = self.table
        sql = (
            f'WITH updated AS (UPDATE "{table}" AS t SET v = u.v, version = u.new_version '
            f"FROM unnest(%s::text[], %s::bytea[], %s::bigint[], %s::bigint[]) "
            f"AS u(k, v, expected, new_version) "
            f"WHERE t.k = u.k AND t.version = u.expected RETURNING t.k), "
            f'inserted AS (INSERT INTO "{table}" (k, v, version) '
            f"SELECT * FROM unnest(%s::text[], %s::bytea[], %s::bigint[]) "
            f"ON CONFLICT (k) DO NOTHING RETURNING k) "
            f"SELECT k FROM updated UNION ALL SELECT k FROM inserted")
        rows = self._run(f"conditional write of {len(keys)} keys", sql,
                         (up_keys, up_blobs, up_expected, up_versions, in_keys, in_blobs, in_versions))
        won = {row[0] for row in rows}
        return [version if enc in won else None for enc, version in zip(encoded, new_versions, strict=True)]

    def multiRemove(self, keys: Sequence[Key]) -> None:
        if keys:
            self._run(f"DELETE of {len(keys)} keys", f'DELETE FROM "{self.table}" WHERE k = ANY(%s::text[])',
                      ([encode_key(key) for key in keys],))

    def raw_put(self, key: Key, data: bytes) -> None:
        """Store ``data`` under ``key`` as is, bypassing serializers (for tests: corrupt values)."""
        self._run("raw write", f'INSERT INTO "{self.table}" (k, v, version) VALUES (%s, %s, %s) '
                               f"ON CONFLICT (k) DO UPDATE SET v = excluded.v, version = excluded.version",
                  (encode_key(key), bytes(data), secrets.randbits(62)))

    def close(self) -> None:
        with self._lock:
            self._closed = True
            connection, self._connection = self._connection, None
        if connection is not None:
            connection.close()


@dataclass(frozen=True, kw_only=True)
class PostgresState(StoreStateFactory):
    """Settings of a state in a PostgreSQL table: one row per key, conditional writes on a version column.

    Parameters
    ----------
    dsn : str
        The database: ``postgresql://[USER[:PASSWORD]@]HOST[:PORT]/DATABASE`` (also
        ``postgres://``), with libpq parameters in its query (``?sslmode=require``).
    table : str, default "trident_state"
        The table (created on first use if missing); several states can share a
        database with different tables.
    connect_timeout : float, default 5.0
        Seconds to wait for a connection (libpq counts whole seconds, at least 2):
        a server that does not answer fails after about this long.
    statement_timeout : float or None, default 60.0
        Seconds one statement may run (PostgreSQL's ``statement_timeout``), e.g. while it
        waits for rows another program holds locked; None: no limit.
    **settings
        ``cache_size``, ``max_multi_get_batch_size``, ``max_multi_put_batch_size``,
        ``txid_offset``, ``max_conflict_retries``, ``serializer``: see
        :class:`~.factory.StoreStateFactory`.

    Notes
    -----
    ``.url`` carries the password, if any, so that it opens the same state; the
    address in messages, ``repr`` and errors never shows it.

    Examples
    --------
    >>> spec = PostgresState.opaque(dsn="postgresql://app@127.0.0.1:5432/wc", table="counts")
    >>> spec.url
    'postgresql://app@127.0.0.1:5432/wc?table=counts&type=opaque'
    >>> PostgresState.transactional(dsn="postgresql://app:s3cret@db/wc", table="counts")
    PostgresState(state_type='transactional', dsn='postgresql://app:***@db/wc', table='counts', ...)
    """

    if TYPE_CHECKING:  # the kinds' keywords for type checkers; at run time, StoreStateFactory's
        @classmethod
        def opaque(cls, *, dsn: str, table: str = ..., connect_timeout: float = ...,  # type: ignore[override]
                   statement_timeout: float | None = ...,
                   **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def transactional(cls, *, dsn: str, table: str = ..., connect_timeout: float = ...,  # type: ignore[override]
                          statement_timeout: float | None = ...,
                          **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def nonTransactional(cls, *, dsn: str, table: str = ..., connect_timeout: float = ...,  # type: ignore[override]
                             statement_timeout: float | None = ...,
                             **settings: Unpack[StoreSettings]) -> Self: ...

    dsn: str
    table: str = DEFAULT_TABLE
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    statement_timeout: float | None = DEFAULT_STATEMENT_TIMEOUT

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_dsn(self.dsn)
        if not isinstance(self.table, str) or not _TABLE_NAME.fullmatch(self.table):
            raise StateConfigError(
                f"PostgreSQL table name {self.table!r} is not allowed: use letters, digits and _ "
                f"(not starting with a digit, at most 63 characters)")
        _seconds_setting("connect_timeout", self.connect_timeout, allow_none=False)
        _seconds_setting("statement_timeout", self.statement_timeout, allow_none=True)

    def __repr__(self) -> str:
        shown = []
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if field.name == "dsn":
                value = redact(value)
            elif field.name == "state_type":
                value = value.value
            elif field.name == "serializer" and value is None:
                continue
            if field.name in ("dsn", "table", "state_type") or value != field.default:
                shown.append(f"{field.name}={value!r}")
        return f"{type(self).__name__}({', '.join(shown)}, ...)"

    def url_location(self) -> tuple[str, dict[str, str]]:
        parts = urllib.parse.urlsplit(self.dsn)
        location = urllib.parse.urlunsplit(parts._replace(query="", fragment=""))
        params = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        params["table"] = self.table
        if self.connect_timeout != DEFAULT_CONNECT_TIMEOUT:
            params["connect_timeout"] = f"{self.connect_timeout:g}"
        if self.statement_timeout != DEFAULT_STATEMENT_TIMEOUT:
            params["statement_timeout"] = ("none" if self.statement_timeout is None
                                           else f"{self.statement_timeout:g}")
        return location, params

    def open_backing_map(self) -> PostgresBackingMap:
        return PostgresBackingMap(self, self.effective_serializer)

    def check_exists(self) -> None:
        """The table must be there (one connection, ``to_regclass``; nothing is created)."""
        probe = PostgresBackingMap(self, self.effective_serializer)
        pg = _import_psycopg(probe.address)
        try:
            with pg.connect(self.dsn, autocommit=True,
                                 connect_timeout=max(1, round(self.connect_timeout))) as connection:
                [exists] = connection.execute("SELECT to_regclass(%s) IS NOT NULL",
                                              (f'"{self.table}"',)).fetchone() or [False]
        except pg.Error as exc:
            raise probe._failed(exc, "looking for the table") from exc
        if not exists:
            raise StateUnavailableError(probe.address, f"no table {self.table!r} in the database; nothing "
                                                       f"was created. Check the table name: {CREATED_BY}")


# -- open_state URLs: postgresql://user@host:5432/db?table=counts&type=opaque --------------------------

_STATE_PARAMS = ("table", "connect_timeout", "statement_timeout")


def _url_seconds(url: str, name: str, value: str, *, allow_none: bool) -> float | None:
    if allow_none and value.lower() == "none":
        return None
    try:
        return float(value)
    except ValueError:
        raise StateConfigError(
            f"state URL {redact(url)}: {name}={value!r} is not a number of seconds") from None


def _build_postgres(url: str, parts: urllib.parse.SplitResult, params: dict[str, str],
                    settings: dict[str, Any]) -> StoreStateFactory:
    extra: dict[str, Any] = {}
    if "table" in params:
        extra["table"] = params.pop("table")
    if "connect_timeout" in params:
        extra["connect_timeout"] = _url_seconds(url, "connect_timeout", params.pop("connect_timeout"),
                                                allow_none=False)
    if "statement_timeout" in params:
        extra["statement_timeout"] = _url_seconds(url, "statement_timeout", params.pop("statement_timeout"),
                                                  allow_none=True)
    # What is left are libpq parameters: they stay in the DSN.
    query = urllib.parse.urlencode(params, safe="/")
    dsn = urllib.parse.urlunsplit(parts._replace(query=query, fragment=""))
    if not parts.hostname and not params.get("host"):
        raise StateConfigError(f"state URL {redact(url)} needs a host: postgresql://USER@HOST:5432/DATABASE")
    return PostgresState(dsn=dsn, **extra, **settings)


for _scheme in SCHEMES:
    register_scheme(_scheme, Scheme((*_STATE_PARAMS, *LIBPQ_PARAMS), _build_postgres,
                                    "postgresql://user@127.0.0.1:5432/db?table=counts"))

__all__ = ["DEFAULT_TABLE", "PostgresBackingMap", "PostgresState", "postgres_address"]
