"""A Redis Cluster as one key space: calls grouped by hash slot, pipelined per node, redirects followed.

This is the client behind ``RedisState(..., cluster=True)``. It keeps the
cluster's slot table (``CLUSTER SLOTS``: which primary serves each of the
16384 slots) and one ``redis.Redis`` connection pool per primary, and runs a
list of *slot calls* (a command whose keys all lie in one slot) as one
pipeline per node:

* ``MOVED slot host:port`` (the slot lives elsewhere now: a reshard finished or
  a replica took over): the slot table is read again and the call is sent to
  the new owner;
* ``ASK slot host:port`` (the slot is being migrated and the keys are not, or
  not all, on the old owner): the call is sent once to the importing node,
  preceded by ``ASKING``;
* ``TRYAGAIN`` (a multi-key call whose keys are split between the two nodes of
  a migration) and ``CLUSTERDOWN`` (slots uncovered for a moment): the call is
  sent again after a short pause;
* ``NOSCRIPT`` (a node that has not cached the script yet): ``EVALSHA`` is
  sent again as ``EVAL`` with the script's text, which also caches it.

None of these errors means the command ran, so sending it again is safe. A
connection error may hide a command that ran; those are sent again only where
the caller's command is idempotent or conditional (the state's ``MGET`` and
compare-and-set script are both), after the slot table is read again (a
replica may have taken over), in at most :data:`MAX_CONNECTION_ROUNDS` rounds.
After :data:`MAX_ROUNDS` rounds of redirects the call fails with the last error.

Replica acknowledgements (``execute(calls, wait=ReplicaWait(...))``, the
state's ``wait_replicas``): each node's pipeline of writes ends with ``WAIT
replicas timeout`` (``redis_wait.py``), so the writes and their wait are one
round trip; a node whose WAIT answers fewer replicas raises at once. A round
redirected away from a node (``MOVED``: it is no longer the slot's primary)
ran nothing there, and that node's WAIT answer is not looked at.

Why not redis-py's ``RedisCluster``: its pipeline falls back to one command at
a time after a redirect and its multi-key helpers split by slot without
ordering guarantees across nodes; here each batch is exactly one ``MGET`` and
one script call per slot, in one pipeline per node, and the redirect rules
above are spelled out and counted (:attr:`ClusterClient.redirects`).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from .redis_slots import SLOTS
from .redis_wait import ReplicaWait

#: Rounds of redirects and retries before a call fails.
MAX_ROUNDS = 16
#: Rounds in which a node could not be reached before a call fails (each already retried once by
#: the node's connection, so an unreachable cluster fails within a few connect timeouts).
MAX_CONNECTION_ROUNDS = 2

Address = tuple[str, int]


@dataclass
class SlotCall:
    """One command whose keys all hash to ``slot``; ``args`` is the command line as sent.

    Examples
    --------
    >>> SlotCall(12739, ("GET", "123456789")).slot
    12739
    """

    slot: int
    args: tuple[Any, ...]
    ask: Address | None = field(default=None)


@dataclass
class RedirectCounts:
    """How often each redirect or retry happened (for tests and metrics).

    Examples
    --------
    >>> RedirectCounts().moved
    0
    """

    moved: int = 0
    ask: int = 0
    tryagain: int = 0
    noscript: int = 0
    connection: int = 0


class ClusterClient:
    """Slot calls over a Redis Cluster: one pipeline per primary, MOVED/ASK/TRYAGAIN/NOSCRIPT followed.

    Parameters
    ----------
    seed : tuple of (str, int)
        The node the cluster is first asked about (host, port).
    connect : callable
        ``connect(host, port)`` returns a ``redis.Redis`` for that node (credentials, TLS, timeouts).
    errors : module
        ``redis.exceptions``.
    scripts : dict, optional
        Script text by SHA-1, for ``EVALSHA`` answered by ``NOSCRIPT``.

    Examples
    --------
    >>> import redis, redis.exceptions  # doctest: +SKIP
    >>> client = ClusterClient(("127.0.0.1", 7000), lambda h, p: redis.Redis(h, p),
    ...                        redis.exceptions)  # doctest: +SKIP
    >>> client.execute([SlotCall(12739, ("GET", "123456789"))])  # doctest: +SKIP
    [None]
    """

    def __init__(self, seed: Address, connect: Callable[[str, int], Any], errors: Any,
                 scripts: dict[str, str] | None = None) -> None:
        self.seed = seed
        self._connect = connect
        self._errors = errors
        self._scripts = dict(scripts or {})
        self._nodes: dict[Address, Any] = {}
        self._owner: list[Address | None] = [None] * SLOTS
        self._lock = threading.Lock()
        self.redirects = RedirectCounts()

    # -- topology ---------------------------------------------------------------------------

    def node(self, address: Address) -> Any:
        """The ``redis.Redis`` of a node, made on first use."""
        with self._lock:
            client = self._nodes.get(address)
            if client is None:
                client = self._nodes[address] = self._connect(*address)
            return client

    def primaries(self) -> list[Address]:
        """Every primary that serves a slot, in slot order (reads the slot table first if empty)."""
        if self._owner[0] is None:
            self.refresh()
        return list(dict.fromkeys(owner for owner in self._owner if owner is not None))

    def refresh(self) -> None:
        """Read the slot table (``CLUSTER SLOTS``) from a known node; the seed first."""
        candidates = [self.seed, *(a for a in dict.fromkeys(self._owner) if a is not None and a != self.seed)]
        last: BaseException | None = None
        for address in candidates:
            try:
                answer = self.node(address).execute_command("CLUSTER SLOTS")
            except (self._errors.RedisError, OSError) as exc:
                last = exc
                continue
            owner: list[Address | None] = [None] * SLOTS
            for entry in answer:
                start, end, primary = int(entry[0]), int(entry[1]), entry[2]
                host = primary[0].decode() if isinstance(primary[0], bytes) else str(primary[0])
                owner[start:end + 1] = [(host or address[0], int(primary[1]))] * (end - start + 1)
            self._owner = owner
            return
        assert last is not None
        raise last

    def owner(self, slot: int) -> Address:
        """The primary that serves ``slot`` as far as this client knows."""
        found = self._owner[slot]
        if found is None:
            self.refresh()
            found = self._owner[slot]
            if found is None:
                raise self._errors.ClusterDownError(f"CLUSTERDOWN hash slot {slot} is not served by any node")
        return found

    # -- running calls ------------------------------------------------------------------------

    def execute(self, calls: Sequence[SlotCall], *, wait: ReplicaWait | None = None) -> list[Any]:
        """Run every call, one pipeline per node per round; their answers in order.

        With ``wait``, each node's pipeline ends with ``WAIT``, checked when
        any call of it ran there (see the module doc).

        Raises the first error that is not a redirect (``WRONGTYPE``, a script
        error, a WAIT that fell short, ...), or the last redirect or connection
        error after :data:`MAX_ROUNDS` rounds.
        """
        answers: list[Any] = [None] * len(calls)
        pending = list(range(len(calls)))
        work = [SlotCall(call.slot, tuple(call.args)) for call in calls]
        last: BaseException | None = None
        unreachable_rounds = 0
        for round_number in range(MAX_ROUNDS):
            if not pending:
                return answers
            if round_number:
                time.sleep(min(0.5, 0.02 * 2 ** min(round_number, 5)))
            by_node: dict[Address, list[int]] = {}
            for index in pending:
                call = work[index]
                by_node.setdefault(call.ask or self.owner(call.slot), []).append(index)
            pending = []
            refresh = unreachable = False
            for address, indexes in by_node.items():
                results = self._pipeline(address, [work[i] for i in indexes], wait)
                if isinstance(results, BaseException):
                    self.redirects.connection += 1
                    last, refresh, unreachable = results, True, True
                    pending.extend(indexes)
                    for index in indexes:
                        work[index].ask = None
                    continue
                waited = results.pop() if wait is not None else None
                ran = False
                for index, result in zip(indexes, results, strict=True):
                    call = work[index]
                    call.ask = None
                    retry = self._redirected(call, result)
                    if retry is None:
                        if isinstance(result, BaseException):
                            raise result
                        answers[index] = result
                        ran = True
                        continue
                    last = result
                    pending.append(index)
                    refresh = refresh or retry == "moved"
                if wait is not None and ran:
                    if isinstance(waited, BaseException):
                        raise waited
                    wait.check(f"{address[0]}:{address[1]}", waited)
            if unreachable:
                unreachable_rounds += 1
                if unreachable_rounds >= MAX_CONNECTION_ROUNDS:
                    break
            if refresh:
                try:
                    self.refresh()
                except (self._errors.RedisError, OSError) as exc:
                    last = exc
        if not pending:
            return answers
        assert last is not None
        raise last

    def _redirected(self, call: SlotCall, result: Any) -> str | None:
        """How ``call`` must be sent again after ``result`` ("moved", "ask", "again"), or None."""
        errors = self._errors
        if not isinstance(result, errors.ResponseError):
            return None
        if isinstance(result, errors.MovedError):
            self.redirects.moved += 1
            self._owner[call.slot] = (str(result.host), int(result.port))
            return "moved"
        if isinstance(result, errors.AskError):
            self.redirects.ask += 1
            call.ask = (str(result.host), int(result.port))
            return "ask"
        if isinstance(result, errors.TryAgainError | errors.ClusterDownError):
            self.redirects.tryagain += 1
            return "again"
        if isinstance(result, errors.NoScriptError) and call.args[0] == "EVALSHA" and \
                call.args[1] in self._scripts:
            self.redirects.noscript += 1
            call.args = ("EVAL", self._scripts[call.args[1]], *call.args[2:])
            return "again"
        return None

    def _pipeline(self, address: Address, calls: list[SlotCall],
                  wait: ReplicaWait | None = None) -> list[Any] | BaseException:
        """``calls`` to one node in one pipeline: the answers (errors in place; with ``wait``, WAIT's
        answer last), or the connection error."""
        try:
            pipe = self.node(address).pipeline(transaction=False)
            for call in calls:
                if call.ask is not None:
                    pipe.execute_command("ASKING")
                pipe.execute_command(*call.args)
            if wait is not None:
                pipe.execute_command(*wait.command())
            raw = pipe.execute(raise_on_error=False)
        except (self._errors.ConnectionError, self._errors.TimeoutError, OSError) as exc:
            return exc
        results: list[Any] = []
        position = 0
        for call in calls:
            if call.ask is not None:
                asking = raw[position]
                position += 1
                if isinstance(asking, BaseException):
                    results.append(asking)
                    position += 1
                    continue
            results.append(raw[position])
            position += 1
        if wait is not None:
            results.append(raw[position])
        return results

    def close(self) -> None:
        """Close every node's connections."""
        with self._lock:
            nodes, self._nodes = self._nodes, {}
        for client in nodes.values():
            client.close()


__all__ = ["MAX_CONNECTION_ROUNDS", "MAX_ROUNDS", "ClusterClient", "RedirectCounts", "SlotCall"]
