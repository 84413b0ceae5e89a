"""LocalDRPC: a DRPC server inside this process, for tests and single-machine runs (Storm's LocalDRPC)."""

from __future__ import annotations

from trident_spark.drpc.server import DRPCServer


class LocalDRPC:
    """Storm's ``LocalDRPC``: a DRPC server in this process, on 127.0.0.1 and a free port.

    Give it to ``topology.newDRPCStream(function, drpc)``; :meth:`execute` asks it. Spark's data
    source (another process) takes the requests over HTTP, so :attr:`address` is reachable
    from this machine; other programs may ask it too (``DRPCClient("127.0.0.1", drpc.port)``).

    Parameters
    ----------
    request_timeout : float, default 600
        Seconds :meth:`execute` waits at most (Storm's ``drpc.request.timeout.secs``).
    lease : float, default 20
        Seconds a topology that took requests may stay silent before they fail.

    Examples
    --------
    >>> with LocalDRPC() as drpc:
    ...     drpc.address.startswith("127.0.0.1:")
    True
    """

    def __init__(self, request_timeout: float = 600.0, lease: float = 20.0) -> None:
        self.server = DRPCServer("127.0.0.1", 0, request_timeout=request_timeout, lease=lease).start()

    @property
    def address(self) -> str:
        """``127.0.0.1:<port>``."""
        return self.server.address

    @property
    def port(self) -> int:
        return self.server.port

    def execute(self, function: str, args: str) -> str:
        """Run ``function`` with ``args`` and wait for its result, Trident's JSON (``'[[5]]'``).

        Raises :class:`~trident_spark.errors.DRPCExecutionException` if the request failed or
        timed out.
        """
        board = self.server.board
        return board.wait(board.submit(function, args))

    def getServiceId(self) -> str:
        """Storm's service id: here the server's address."""
        return self.address

    def shutdown(self) -> None:
        """Stop the server; callers still waiting get an error."""
        self.server.shutdown()

    def __enter__(self) -> LocalDRPC:
        return self

    def __exit__(self, *exc: object) -> None:
        self.shutdown()

    def __repr__(self) -> str:
        return f"LocalDRPC({self.address})"


__all__ = ["LocalDRPC"]
