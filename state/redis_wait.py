"""Replica acknowledgements for the Redis state: the ``WAIT`` after a node's writes, and its failure.

Redis replicates asynchronously: a primary answers a write before any replica
has it, and a replica promoted after its primary died may lack the writes its
primary acknowledged last. ``WAIT numreplicas timeout`` blocks the connection
until ``numreplicas`` replicas have acknowledged every write made on that
connection so far, or ``timeout`` milliseconds have passed, and answers how
many did. With ``wait_replicas=N`` the Redis state sends ``WAIT N timeout`` in
the same pipeline as each node's compare-and-set calls (one round trip), and
a write that fewer than N replicas acknowledged is not taken as done: the call
raises :class:`ReplicasNotAcknowledgedError`, a
:class:`~.errors.StateUnavailableError`, so the batch is run again within the
run's outage budget (the txid in each value makes the second attempt end where
one would).

``WAIT`` says nothing about disks: the replicas hold the writes in memory.
Surviving the loss of every copy at once (a power cut) is what
``appendonly yes`` with ``appendfsync always`` or ``everysec`` is for.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import StateConfigError, StateUnavailableError

#: ``wait_timeout`` when none is given: seconds WAIT waits for the replicas.
DEFAULT_WAIT_TIMEOUT = 1.0


class ReplicasNotAcknowledgedError(StateUnavailableError):
    """Fewer replicas than ``wait_replicas`` acknowledged a node's writes within ``wait_timeout``.

    The writes were made on the primary but are not safe from a failover yet;
    the batch is retried (within the outage budget) like any store outage.

    Attributes
    ----------
    node : str
        The primary that was asked (``host:port``, never credentials).
    asked, acknowledged : int
        Replicas asked for and replicas that acknowledged.
    timeout_ms : int
        How long ``WAIT`` waited.

    Examples
    --------
    >>> error = ReplicasNotAcknowledgedError("redis://127.0.0.1:7000/0?prefix=wc", node="127.0.0.1:7000",
    ...                                      asked=1, acknowledged=0, timeout_ms=1000)
    >>> error.acknowledged, isinstance(error, StateUnavailableError)
    (0, True)
    """

    def __init__(self, address: str, *, node: str, asked: int, acknowledged: int, timeout_ms: int) -> None:
        self.node = node
        self.asked = asked
        self.acknowledged = acknowledged
        self.timeout_ms = timeout_ms
        replicas = "replica" if asked == 1 else "replicas"
        super().__init__(
            address,
            f"WAIT {asked} {timeout_ms} on node {node}: {acknowledged} of {asked} {replicas} acknowledged "
            f"the writes within {timeout_ms} ms, so they are not safe from a failover (wait_replicas="
            f"{asked}); the batch is retried within the outage budget. Check that the node's replicas run "
            f"and are connected (INFO replication on {node} lists them), or lower wait_replicas or raise "
            f"wait_timeout")


@dataclass(frozen=True)
class ReplicaWait:
    """``WAIT replicas timeout`` after a node's writes, and the check of its answer.

    Parameters
    ----------
    address : str
        The state, for messages (without secrets).
    replicas : int
        Replicas that must acknowledge (> 0).
    timeout : float
        Seconds to wait for them (> 0).

    Examples
    --------
    >>> wait = ReplicaWait("redis://127.0.0.1:7000/0?prefix=wc", replicas=1, timeout=0.5)
    >>> wait.command()
    ('WAIT', 1, 500)
    >>> wait.check("127.0.0.1:7000", 1)
    >>> try:
    ...     wait.check("127.0.0.1:7000", 0)
    ... except ReplicasNotAcknowledgedError as short:
    ...     print(short.asked, short.acknowledged)
    1 0
    """

    address: str
    replicas: int
    timeout: float

    @property
    def timeout_ms(self) -> int:
        """The timeout as WAIT takes it: whole milliseconds, at least 1 (0 would wait forever)."""
        return max(1, round(self.timeout * 1000))

    def command(self) -> tuple[str, int, int]:
        """The command line: ``("WAIT", replicas, timeout_ms)``."""
        return ("WAIT", self.replicas, self.timeout_ms)

    def check(self, node: str, answer: Any) -> None:
        """Raise :class:`ReplicasNotAcknowledgedError` when ``answer`` (WAIT's reply) is short."""
        acknowledged = int(answer)
        if acknowledged < self.replicas:
            raise ReplicasNotAcknowledgedError(self.address, node=node, asked=self.replicas,
                                               acknowledged=acknowledged, timeout_ms=self.timeout_ms)


def check_wait_settings(wait_replicas: Any, wait_timeout: Any, socket_timeout: float | None) -> None:
    """Refuse ``wait_replicas`` / ``wait_timeout`` values the state cannot use, saying what to give.

    Examples
    --------
    >>> check_wait_settings(1, 0.5, 10.0)
    >>> try:
    ...     check_wait_settings(-1, 1.0, 10.0)
    ... except StateConfigError as bad:
    ...     print(str(bad)[:41])
    wait_replicas must be a whole number >= 0
    """
    if isinstance(wait_replicas, bool) or not isinstance(wait_replicas, int) or wait_replicas < 0:
        raise StateConfigError(f"wait_replicas must be a whole number >= 0 (replicas that must acknowledge "
                               f"each write; 0: do not wait), got {wait_replicas!r}")
    if isinstance(wait_timeout, bool) or not isinstance(wait_timeout, int | float) or not wait_timeout > 0:
        raise StateConfigError(f"wait_timeout must be a number of seconds > 0 (how long WAIT waits for the "
                               f"replicas), got {wait_timeout!r}")
    if wait_replicas and socket_timeout is not None and wait_timeout >= socket_timeout:
        raise StateConfigError(f"wait_timeout ({wait_timeout:g} s) must be less than socket_timeout "
                               f"({socket_timeout:g} s): the connection would time out before WAIT answers")


__all__ = ["DEFAULT_WAIT_TIMEOUT", "ReplicaWait", "ReplicasNotAcknowledgedError", "check_wait_settings"]
