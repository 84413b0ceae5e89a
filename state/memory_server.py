"""Serving a process's named MemoryStores to other processes of this machine (Spark's local workers).

Spark runs state operations in Python worker processes, not in the driver. In local mode they
are on the driver's machine, so the driver serves its stores over a Unix socket
(``multiprocessing.connection``, with a random key) and a worker's store is a
:class:`RemoteStore` that forwards each read and conditional write to the driver, where the
store's lock makes it atomic: the same guarantees as in one process. Pure standard library.
"""

from __future__ import annotations

import os
import secrets
import threading
from collections.abc import Callable
from multiprocessing.connection import Client, Connection, Listener
from typing import Any

from .errors import StateError

#: (socket path, key, pid of the serving process)
Address = tuple[str, bytes, int]


class MemoryServer:
    """Answers store operations for ``lookup(name)``'s stores, one thread per connection.

    Examples
    --------
    >>> from trident_spark.state.keys import encode_key
    >>> from trident_spark.state.memory import MemoryState
    >>> server = MemoryServer(MemoryState.store)
    >>> MemoryState.store("doc-served").raw_put(["cat"], b"1")
    >>> RemoteStore("doc-served", server.address).get_entries([encode_key(["cat"])])[0][0]
    b'1'
    >>> server.close()
    """

    def __init__(self, lookup: Callable[[str], Any]) -> None:
        self._lookup = lookup
        key = secrets.token_bytes(32)
        self._listener = Listener(family="AF_UNIX", authkey=key)
        self.address: Address = (str(self._listener.address), key, os.getpid())
        self._closed = False
        threading.Thread(target=self._accept, name="memory-state-server", daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                connection = self._listener.accept()
            except Exception:  # a client that failed the key, or the listener closed
                continue
            threading.Thread(target=self._serve, args=(connection,), daemon=True).start()

    def _serve(self, connection: Connection) -> None:
        with connection:
            while True:
                try:
                    operation, name, args = connection.recv()
                except (EOFError, OSError):
                    return
                try:
                    reply: tuple[str, Any] = ("ok", getattr(self._lookup(name), operation)(*args))
                except Exception as exc:
                    reply = ("error", f"{type(exc).__name__}: {exc}")
                connection.send(reply)

    def close(self) -> None:
        """Stop accepting connections (served stores stay in this process)."""
        self._closed = True
        self._listener.close()


_CONNECTIONS: dict[str, tuple[Connection, threading.Lock]] = {}
_CONNECTIONS_LOCK = threading.Lock()


class RemoteStore:
    """A MemoryStore served by another process: the same operations, over its socket."""

    def __init__(self, name: str, address: Address) -> None:
        self.name = name
        self.address = address

    def _connection(self) -> tuple[Connection, threading.Lock]:
        path, key, pid = self.address
        with _CONNECTIONS_LOCK:
            found = _CONNECTIONS.get(path)
            if found is None:
                try:
                    client = Client(path, family="AF_UNIX", authkey=key)
                    found = _CONNECTIONS[path] = (client, threading.Lock())
                except (OSError, EOFError) as exc:
                    raise StateError(
                        f"memory://{self.name}: this MemoryState lives in the driver process (pid {pid}), "
                        f"which serves it at {path}, but this process cannot reach it ({exc}). MemoryState "
                        "works in Spark's local mode only; on a cluster use SqliteState, RedisState or "
                        "ElasticsearchState") from None
            return found

    def _call(self, operation: str, *args: Any) -> Any:
        connection, lock = self._connection()
        try:
            with lock:
                connection.send((operation, self.name, args))
                status, value = connection.recv()
        except (OSError, EOFError) as exc:
            with _CONNECTIONS_LOCK:
                _CONNECTIONS.pop(self.address[0], None)
            raise StateError(f"memory://{self.name}: the driver process serving this MemoryState "
                             f"(pid {self.address[2]}) stopped answering ({exc}); did the run stop?"
                             ) from None
        if status != "ok":
            raise StateError(f"memory://{self.name}: the driver's store failed: {value}")
        return value

    def get_entries(self, encoded: list[str]) -> list[tuple[bytes, int] | None]:
        return self._call("get_entries", encoded)  # type: ignore[no-any-return]

    def put_if_version(self, encoded: list[str], data: list[bytes],
                       expected: list[Any]) -> list[int | None]:
        return self._call("put_if_version", encoded, data, expected)  # type: ignore[no-any-return]

    def snapshot(self) -> list[tuple[str, tuple[bytes, int]]]:
        return self._call("snapshot")  # type: ignore[no-any-return]

    def remove(self, encoded: list[str]) -> None:
        self._call("remove", encoded)


__all__ = ["Address", "MemoryServer", "RemoteStore"]
