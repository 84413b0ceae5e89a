"""SqliteState: the embedded default store, one file, safe for several processes on one machine.

Layout: one table (``trident_state`` unless configured) with one row per key::

    k        TEXT PRIMARY KEY   -- the encoded key (keys.py), readable for short keys
    v        BLOB               -- the serialized value: JSON [txid, curr, prev] / [txid, val] / val
    version  INTEGER            -- bumped by every write; writes are conditional on it

The database runs in WAL mode (readers never wait for the writer). Each
``multiPutIfVersion`` round trip is one ``BEGIN IMMEDIATE`` transaction:
``UPDATE ... WHERE k=? AND version=?`` for keys that were read, ``INSERT ... ON
CONFLICT DO NOTHING`` for keys that were missing; a statement that changes no
row is a lost race. Other processes wait up to ``busy_timeout`` seconds for the
write lock. SQLite over a network file system is not supported (WAL needs shared
memory on one machine).
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sqlite3
import threading
import time
import urllib.parse
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from .base import Key, Version, Versioned, VersionedBackingMap, check_scan_batch_size
from .checks import is_int
from .errors import StateConfigError, StateError, StateUnavailableError
from .factory import CREATED_BY, StoreStateFactory

if TYPE_CHECKING:
    from typing import Self, Unpack

    from .factory import StoreSettings
from .keys import decode_scanned_key, encode_keys, is_reserved
from .serializers import Serializer, deserialize_stored, serialize_stored

DEFAULT_TABLE = "trident_state"
_TABLE_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,127}")
_SYNCHRONOUS = ("OFF", "NORMAL", "FULL", "EXTRA")
# Below SQLite's smallest host-parameter limit (999 before 3.32).
_PARAMS_PER_STATEMENT = 900


def _is_busy(exc: Exception) -> bool:
    message = str(exc)
    return isinstance(exc, sqlite3.OperationalError) and ("locked" in message or "busy" in message)


def _chunks(items: Sequence[str], size: int) -> Iterator[Sequence[str]]:
    for start in range(0, len(items), size):
        yield items[start:start + size]


def sqlite_url(path: str, table: str) -> str:
    """The ``open_state`` URL of a SQLite state (without the type).

    Examples
    --------
    >>> sqlite_url("/tmp/wc.db", "counts")
    'sqlite:///tmp/wc.db?table=counts'
    """
    return f"sqlite://{urllib.parse.quote(path)}?table={table}"


def _create_owner_only(path: str) -> None:
    """Create the database file readable and writable by this user only (0600), if it is not there.

    SQLite creates its ``-wal`` and ``-shm`` files with the database file's mode, so the three
    are owner-only. An empty file is an empty database to SQLite. A file that is already there
    (or a link) is left as it is: its mode is its owner's choice.
    """
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600))
    except OSError:  # there already (left as it is), or a path sqlite3.connect refuses in its words
        return


class SqliteBackingMap(VersionedBackingMap):
    """The versioned backing map over one SQLite table. Opens its connection when created.

    Parameters
    ----------
    path : str
        The database file (created with its parent directories if missing).
    table : str
        The table (created if missing).
    serializer : Serializer
        Turns values into the stored bytes and back.
    busy_timeout : float
        Seconds to wait for another process's write lock.
    synchronous : str
        SQLite's ``PRAGMA synchronous``: FULL (default) survives power loss,
        NORMAL only process crashes.

    Raises
    ------
    StateUnavailableError
        The file cannot be created or opened, or is not a database with that table's layout.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "wc.db")
    >>> from trident_spark.state import SqliteState
    >>> backing = SqliteState.nonTransactional(path=path).open_backing_map()
    >>> backing.multiPut([["cat"]], [3]); backing.multiGet([["cat"], ["dog"]])
    [3, None]
    >>> backing.journal_mode
    'wal'
    """

    def __init__(self, path: str, table: str, serializer: Serializer, *, busy_timeout: float = 30.0,
                 synchronous: str = "FULL") -> None:
        self.path = path
        self.table = table
        self.serializer = serializer
        self.busy_timeout = busy_timeout
        self._lock = threading.Lock()
        self._connection = self._connect(synchronous)
        self.journal_mode: str = self._connection.execute("PRAGMA journal_mode").fetchone()[0]

    @property
    def address(self) -> str:
        return sqlite_url(self.path, self.table)

    def _unavailable(self, exc: Exception, waited: float | None = None) -> StateUnavailableError:
        message = str(exc)
        if _is_busy(exc) and (waited is None or waited >= self.busy_timeout):
            hint = (f"another process held the write lock for more than busy_timeout={self.busy_timeout}s; "
                    f"raise busy_timeout or find the process holding it")
        elif _is_busy(exc):
            hint = "another process holds the database; retry, or find the process holding it"
        else:
            hint = "check that the path is a writable SQLite file in a writable directory"
        return StateUnavailableError(self.path, f"{type(exc).__name__}: {message}; {hint}")

    def _connect(self, synchronous: str) -> sqlite3.Connection:
        directory = os.path.dirname(self.path) or "."
        try:
            os.makedirs(directory, exist_ok=True)
        except OSError as exc:
            raise StateUnavailableError(
                self.path, f"cannot create its directory {directory}: {exc.strerror or exc}; "
                           f"choose a path in a writable directory") from exc
        if not os.access(directory, os.W_OK):
            raise StateUnavailableError(
                self.path, f"directory {directory} is not writable (SQLite also writes -wal and -shm files "
                           f"next to the database); choose a path in a writable directory")
        _create_owner_only(self.path)
        try:
            connection = sqlite3.connect(self.path, timeout=self.busy_timeout, isolation_level=None,
                                         check_same_thread=False)
        except sqlite3.Error as exc:
            raise self._unavailable(exc) from exc
        # Switching to WAL and creating the table can fail at once with "database is
        # locked" while another process does the same (SQLite skips the busy handler
        # there), so these steps retry until busy_timeout.
        started = time.monotonic()
        while True:
            try:
                columns = self._set_up(connection, synchronous)
                break
            except sqlite3.Error as exc:
                waited = time.monotonic() - started
                if _is_busy(exc) and waited < self.busy_timeout:
                    time.sleep(min(0.05, self.busy_timeout - waited))
                    continue
                connection.close()
                raise self._unavailable(exc, waited) from exc
        if columns[:3] != ["k", "v", "version"]:
            connection.close()
            raise StateUnavailableError(
                self.path, f"table {self.table!r} exists with columns {columns}, not a state table "
                           f"(k, v, version); choose another table=")
        return connection

    def _set_up(self, connection: sqlite3.Connection, synchronous: str) -> list[str]:
        if connection.execute("PRAGMA journal_mode").fetchone()[0] != "wal":
            connection.execute("PRAGMA journal_mode=WAL")
        connection.execute(f"PRAGMA synchronous={synchronous}")
        connection.execute(
            f'CREATE TABLE IF NOT EXISTS "{self.table}" '
            f"(k TEXT PRIMARY KEY NOT NULL, v BLOB NOT NULL, version INTEGER NOT NULL) WITHOUT ROWID")
        return [row[1] for row in connection.execute(f'PRAGMA table_info("{self.table}")')]

    def _execute_read(self, sql: str, params: Sequence[Any]) -> list[Any]:
        try:
            return self._connection.execute(sql, params).fetchall()
        except sqlite3.ProgrammingError as exc:
            raise StateError(f"{self.address}: {exc}; the state was closed, open it again") from exc
        except sqlite3.Error as exc:
            raise self._unavailable(exc) from exc

    def multiGetVersioned(self, keys: Sequence[Key]) -> list[Versioned | None]:
        return self.multiGetEncoded(keys, encode_keys(keys))

    def multiGetEncoded(self, keys: Sequence[Key], encoded: Sequence[str]) -> list[Versioned | None]:
        rows: dict[str, tuple[bytes, int]] = {}
        with self._lock:
            for part in _chunks(encoded, _PARAMS_PER_STATEMENT):
                marks = ",".join("?" * len(part))
                for k, v, version in self._execute_read(
                        f'SELECT k, v, version FROM "{self.table}" WHERE k IN ({marks})', part):
                    rows[k] = (v, version)
        found: list[Versioned | None] = []
        serializer, address = self.serializer, self.address
        for key, enc in zip(keys, encoded, strict=True):
            row = rows.get(enc)
            found.append(None if row is None else Versioned(
                deserialize_stored(serializer, row[0], key=key, address=address), row[1]))
        return found

    def scanVersioned(self, batch_size: int | None = None) -> Iterator[tuple[Key, Versioned]]:
        """Every row in key order, one ``SELECT ... WHERE k > ? ORDER BY k LIMIT ?`` per page.

        Each page is its own read (no transaction stays open between pages, so
        writers are never held up); a key is found once even if it is written
        while the scan runs.

        Examples
        --------
        >>> import tempfile, os
        >>> from trident_spark.state import SqliteState
        >>> path = os.path.join(tempfile.mkdtemp(), "scan.db")
        >>> backing = SqliteState.nonTransactional(path=path).open_backing_map()
        >>> backing.multiPut([["dog"], ["cat"], ["eel"]], [2, 3, 1])
        >>> [(key, stored.value) for key, stored in backing.scanVersioned(batch_size=2)]
        [(['cat'], 3), (['dog'], 2), (['eel'], 1)]
        """
        return self._scan(check_scan_batch_size(batch_size))

    def _scan(self, size: int) -> Iterator[tuple[Key, Versioned]]:
        table = self.table
        after: str | None = None
        while True:
            with self._lock:
                if after is None:
                    rows = self._execute_read(
                        f'SELECT k, v, version FROM "{table}" ORDER BY k LIMIT ?', (size,))
                else:
                    rows = self._execute_read(
                        f'SELECT k, v, version FROM "{table}" WHERE k > ? ORDER BY k LIMIT ?', (after, size))
            for k, v, version in rows:
                if is_reserved(k):
                    continue
                key = decode_scanned_key(k, self.address)
                yield key, Versioned(deserialize_stored(self.serializer, v, key=key, address=self.address),
                                     version)
            if len(rows) < size:
                return
            after = rows[-1][0]

    def _write(self, statements: Iterator[tuple[str, Sequence[Any]]]) -> list[int]:
        """Run statements in one immediate transaction; the rows each changed."""
        with self._lock:
            try:
                self._connection.execute("BEGIN IMMEDIATE")
            except sqlite3.ProgrammingError as exc:
                raise StateError(f"{self.address}: {exc}; the state was closed, open it again") from exc
            except sqlite3.Error as exc:
                raise self._unavailable(exc) from exc
            try:
                changed = [self._connection.execute(sql, params).rowcount for sql, params in statements]
                self._connection.execute("COMMIT")
            except BaseException as exc:
                if self._connection.in_transaction:
                    self._connection.execute("ROLLBACK")
                if isinstance(exc, sqlite3.Error):
                    raise self._unavailable(exc) from exc
                raise
        return changed

    def _next_version(self, expected: Version | None) -> int:
        if expected is None:
            # A created key starts at a random version, so a removed and re-created key
            # never gets back a version a stale reader still holds.
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
        table = self.table
        serializer, address = self.serializer, self.address
        new_versions = [self._next_version(expected) for expected in expected_versions]
        rows = [(enc, serialize_stored(serializer, value, key=key, address=address), expected, version)
                for key, enc, value, expected, version
                in zip(keys, encoded, values, expected_versions, new_versions, strict=True)]

        def statements() -> Iterator[tuple[str, Sequence[Any]]]:
            for enc, blob, expected, version in rows:
                if expected is None:
                    yield (f'INSERT INTO "{table}" (k, v, version) VALUES (?, ?, ?) '
                           f"ON CONFLICT(k) DO NOTHING", (enc, blob, version))
                else:
                    yield (f'UPDATE "{table}" SET v = ?, version = ? WHERE k = ? AND version = ?',
                           (blob, version, enc, expected))

        changed = self._write(statements())
        return [version if count == 1 else None for version, count in zip(new_versions, changed, strict=True)]

    def multiRemove(self, keys: Sequence[Key]) -> None:
        encoded = encode_keys(keys)
        table = self.table

        def statements() -> Iterator[tuple[str, Sequence[Any]]]:
            for part in _chunks(encoded, _PARAMS_PER_STATEMENT):
                yield f'DELETE FROM "{table}" WHERE k IN ({",".join("?" * len(part))})', part

        self._write(statements())

    def close(self) -> None:
        with self._lock:
            self._connection.close()


@dataclass(frozen=True, kw_only=True)
class SqliteState(StoreStateFactory):
    """Settings of a state in a SQLite file: the embedded default.

    Parameters
    ----------
    path : str or os.PathLike
        The database file; made absolute where the factory is created (the
        driver), so executors with another working directory use the same file.
    table : str, default "trident_state"
        The table; several states can share one file with different tables.
    busy_timeout : float, default 30.0
        Seconds a writer waits for another process's write lock before failing.
    synchronous : {"FULL", "NORMAL", "EXTRA", "OFF"}, default "FULL"
        SQLite durability: FULL keeps committed state through a power loss.
    **settings
        ``cache_size``, ``max_multi_get_batch_size``, ``max_multi_put_batch_size``,
        ``txid_offset``, ``max_conflict_retries``, ``serializer``: see
        :class:`~.factory.StoreStateFactory`.

    Examples
    --------
    >>> import tempfile, os
    >>> path = os.path.join(tempfile.mkdtemp(), "wc.db")
    >>> spec = SqliteState.opaque(path=path, table="counts")
    >>> spec.url == f"sqlite://{path}?table=counts&type=opaque"
    True
    >>> with spec.open() as counts:
    ...     counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 1])
    [1]
    """

    if TYPE_CHECKING:  # the kinds' keywords for type checkers; at run time, StoreStateFactory's
        @classmethod
        def opaque(cls, *, path: str, table: str = ..., busy_timeout: float = ...,  # type: ignore[override]
                   synchronous: str = ..., **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def transactional(cls, *, path: str, table: str = ..., busy_timeout: float = ...,  # type: ignore[override]
                          synchronous: str = ..., **settings: Unpack[StoreSettings]) -> Self: ...
        @classmethod
        def nonTransactional(cls, *, path: str, table: str = ...,  # type: ignore[override]
                             busy_timeout: float = ..., synchronous: str = ...,
                             **settings: Unpack[StoreSettings]) -> Self: ...

    path: str
    table: str = DEFAULT_TABLE
    busy_timeout: float = 30.0
    synchronous: str = "FULL"

    def __post_init__(self) -> None:
        super().__post_init__()
        if not isinstance(self.path, str | os.PathLike) or not os.fspath(self.path):
            raise StateConfigError(f"SqliteState needs a file path, got {self.path!r}")
        object.__setattr__(self, "path", os.path.abspath(os.fspath(self.path)))
        if not isinstance(self.table, str) or not _TABLE_NAME.fullmatch(self.table):
            raise StateConfigError(
                f"SQLite table name {self.table!r} is not allowed: use letters, digits and _ "
                f"(not starting with a digit, at most 128 characters)")
        if isinstance(self.busy_timeout, bool) or not isinstance(self.busy_timeout, int | float) \
                or self.busy_timeout < 0:
            raise StateConfigError(
                f"busy_timeout must be a number of seconds >= 0, got {self.busy_timeout!r}")
        if str(self.synchronous).upper() not in _SYNCHRONOUS:
            raise StateConfigError(
                f"synchronous must be one of {', '.join(_SYNCHRONOUS)}, got {self.synchronous!r}")
        object.__setattr__(self, "synchronous", str(self.synchronous).upper())

    def url_location(self) -> tuple[str, dict[str, str]]:
        params = {"table": self.table}
        if self.busy_timeout != 30.0:
            params["busy_timeout"] = str(self.busy_timeout)
        if self.synchronous != "FULL":
            params["synchronous"] = self.synchronous
        return f"sqlite://{urllib.parse.quote(self.path)}", params

    def open_backing_map(self) -> SqliteBackingMap:
        return SqliteBackingMap(self.path, self.table, self.effective_serializer,
                                busy_timeout=float(self.busy_timeout), synchronous=self.synchronous)

    def check_exists(self) -> None:
        """The file and its table must be there (read-only look: nothing is created)."""
        path = self.path
        if not os.path.isfile(path):
            directory = os.path.dirname(path)
            missing = ("a directory, not a file" if os.path.isdir(path)
                       else f"no such file (and no directory {directory})" if not os.path.isdir(directory)
                       else "no such file")
            raise StateUnavailableError(path, f"{missing}; nothing was created. Check the path: {CREATED_BY}")
        try:
            with contextlib.closing(sqlite3.connect(f"file:{urllib.parse.quote(path)}?mode=ro",
                                                    uri=True)) as db:
                tables = [row[0] for row in db.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name")]
        except sqlite3.Error:
            return  # not readable as SQLite: opening the state says why
        if self.table not in tables:
            there = ", ".join(tables[:20]) if tables else "none"
            raise StateUnavailableError(path, f"no table {self.table!r} in it (tables: {there}); "
                                              f"name the state's table with ?table=NAME")


__all__ = ["DEFAULT_TABLE", "SqliteBackingMap", "SqliteState", "sqlite_url"]
