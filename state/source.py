"""``StateSource``: what the engine asks of a state factory that opens its own map state.

A topology persists into either of two kinds of factory:

* a *state source*, every built-in store's factory (``SqliteState.opaque(...)``,
  ``MemoryState``, ``RedisState``, ...: :class:`~.factory.StoreStateFactory`): it opens a
  map state itself, keeps a commit record beside the data, names its location and can be
  copied with other settings (a query opens it without a cache);
* a user's Trident ``StateFactory`` (:class:`~.state_api.StateFactory`), which only has
  ``makeState(conf, ...)``: the engine calls that on the executors and asks nothing else.

The engine tells the two apart with ``isinstance(factory, StateSource)`` (a structural check:
a factory need not subclass anything to be one), and type checkers see what a source offers.
"""

from __future__ import annotations

from typing import Any, Protocol, Self, runtime_checkable

from .commit_record import CommitLog
from .map import MapState


@runtime_checkable
class StateSource(Protocol):
    """A state factory that opens its own map state: the built-in stores' shape.

    Attributes
    ----------
    cache_size : int
        Keys an opened state caches (0: none).
    txid_offset : int
        Added to every txid the state stores (see :class:`~.factory.StoreStateFactory`).

    Examples
    --------
    >>> from trident_spark.state import MemoryState, StateFactory
    >>> isinstance(MemoryState.opaque(name="doc-source"), StateSource)
    True
    >>> class Mine(StateFactory):
    ...     def makeState(self, conf, partition_index, num_partitions): ...
    >>> isinstance(Mine(), StateSource)
    False
    """

    # Read-only (the factories are frozen dataclasses). No ``url`` here: ``isinstance`` would
    # compute it (Python 3.11 reads every member), and a user's own factory may have a ``url``
    # too, so callers read it with ``getattr`` where they need it.
    @property
    def cache_size(self) -> int:
        """Keys an opened state caches (0: none)."""
        ...

    @property
    def txid_offset(self) -> int:
        """Added to every txid the state stores."""
        ...

    def url_location(self) -> tuple[str, dict[str, str]]:
        """The URL without query (``memory://wc``) and the backend's own URL parameters."""
        ...

    def open(self) -> MapState:
        """Connect and return the working map state."""
        ...

    def open_commit_log(self) -> CommitLog:
        """The store's commit record of the batches written into it."""
        ...

    def with_settings(self, **settings: Any) -> Self:
        """A copy with some settings changed (``cache_size=0``, ...)."""
        ...

    def check_available(self) -> None:
        """On the driver, raise if the store does not answer or is misconfigured."""
        ...


__all__ = ["StateSource"]
