"""The handle a started (or borrowed) service is known by."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from typing import Literal

from trident_spark.errors import TridentSparkError
from trident_spark.state.redaction import redact_url

__all__ = ["Provider", "ServiceHandle", "ServiceName", "ServiceRestartError"]

ServiceName = Literal["kafka", "redis", "elasticsearch", "postgres"]
"""The services trident-spark knows how to provide."""

Provider = Literal["env", "testcontainers", "local"]
"""Where a service comes from: an address in the environment, a Docker
container started by testcontainers, or a local binary started here."""


class ServiceRestartError(TridentSparkError, RuntimeError):
    """:meth:`ServiceHandle.restart` on a service that cannot come back with its data.

    Examples
    --------
    >>> issubclass(ServiceRestartError, RuntimeError)
    True
    """


@dataclass
class ServiceHandle:
    """A running service: its address, where it came from, how to stop it.

    Parameters
    ----------
    name
        "kafka", "redis", "elasticsearch" or "postgres".
    address
        Kafka: a bootstrap string "127.0.0.1:PORT"; Redis: "redis://127.0.0.1:PORT/0";
        Elasticsearch: "http://127.0.0.1:PORT"; PostgreSQL: "postgresql://postgres@127.0.0.1:PORT/postgres".
    provider
        "env", "testcontainers" or "local".
    log_path
        The service's log file for local processes, else ``None``.
    pid
        Process id of a local service, else ``None``.
    keep_logs
        When false, a clean :meth:`stop` removes the log (and its temporary
        directory); set it to keep them, e.g. after a failed test session.

    Examples
    --------
    >>> handle = ServiceHandle("redis", "redis://127.0.0.1:6379/0", "env")
    >>> with handle as redis:
    ...     redis.address
    'redis://127.0.0.1:6379/0'
    >>> handle.stopped
    True
    """

    name: ServiceName
    address: str
    provider: Provider
    log_path: Path | None = None
    pid: int | None = None
    keep_logs: bool = False
    _stopper: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    _discard_logs: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    _restarter: Callable[[], None] | None = field(default=None, repr=False, compare=False)
    _stopped: bool = field(default=False, repr=False, compare=False)

    def __repr__(self) -> str:
        # A local Redis started with a password has it in its address: shown as ***.
        return (f"ServiceHandle(name={self.name!r}, address={redact_url(self.address)!r}, "
                f"provider={self.provider!r}, log_path={self.log_path!r}, pid={self.pid!r}, "
                f"keep_logs={self.keep_logs!r})")

    @property
    def stopped(self) -> bool:
        """Whether :meth:`stop` has run."""
        return self._stopped

    def stop(self) -> None:
        """Stop the service if this handle started it; idempotent.

        A service from the environment ("env") is never stopped: it belongs
        to whoever started it.
        """
        if self._stopped:
            return
        self._stopped = True
        stopper, self._stopper = self._stopper, None
        if stopper is not None:
            stopper()
        if self._discard_logs is not None and not self.keep_logs:
            self._discard_logs()

    @property
    def restartable(self) -> bool:
        """Whether :meth:`restart` can bring this service back (local Kafka and OpenSearch)."""
        return self._restarter is not None and not self._stopped

    def restart(self) -> None:
        """Stop the service's process and start it again: same address, same data on disk.

        Raises
        ------
        ServiceRestartError
            The service was not started here with data on disk (an address from the
            environment, a container, an in-memory server), or it was stopped.
        """
        if self._restarter is None or self._stopped:
            why = "it was stopped" if self._stopped else (
                f"it comes from {self.provider!r} and keeps no data of its own here")
            raise ServiceRestartError(
                f"{self.name} at {redact_url(self.address)} cannot be restarted: {why}; "
                "start it with kind='apache' (Kafka) or kind='opensearch' (Elasticsearch) to restart it")
        self._restarter()

    def __enter__(self) -> ServiceHandle:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()
