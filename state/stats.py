"""Counters of what an opened state did: cache hits, store round trips, lost races.

The runtime reads them per batch for metrics and the tuning report (the tuning
notes size the cache so that the store sees very few reads).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields


@dataclass
class StateStats:
    """What one opened state did since it was opened (or last :meth:`reset`).

    Counted by the layers of an opened state: the cache counts hits and misses,
    the batching layer counts store round trips and keys, the map rules count
    lost races and skipped keys. Not synchronized: one task uses one state.

    Attributes
    ----------
    cache_hits, cache_misses : int
        Keys answered by the cache / read from the store.
    store_reads, store_writes : int
        Round trips to the store (one per batch of at most
        ``max_multi_get_batch_size`` / ``max_multi_put_batch_size`` keys).
    keys_read, keys_written : int
        Keys sent to the store in those round trips.
    write_conflicts : int
        Conditional writes that lost (another writer or a stale cache entry);
        each was re-read and recomputed.
    keys_skipped : int
        Keys a transactional state left alone because their stored txid was the
        batch's (already applied).
    store_read_us, store_write_us : int
        Time spent in those round trips, in microseconds (the store's share of a
        batch: network, server and decoding).

    Examples
    --------
    >>> stats = StateStats(cache_hits=3, cache_misses=1)
    >>> stats.cache_hit_rate
    0.75
    """

    cache_hits: int = 0
    cache_misses: int = 0
    store_reads: int = 0
    store_writes: int = 0
    keys_read: int = 0
    keys_written: int = 0
    write_conflicts: int = 0
    keys_skipped: int = 0
    store_read_us: int = 0
    store_write_us: int = 0

    @property
    def cache_hit_rate(self) -> float | None:
        """Hits / (hits + misses); None before any cached read."""
        looked_up = self.cache_hits + self.cache_misses
        return None if looked_up == 0 else self.cache_hits / looked_up

    def snapshot(self) -> dict[str, int]:
        """The counters as a plain dict (for metrics).

        Examples
        --------
        >>> StateStats(store_reads=2).snapshot()["store_reads"]
        2
        """
        return asdict(self)

    def reset(self) -> None:
        """Set every counter back to zero (for example at the start of a batch)."""
        for field in fields(self):
            setattr(self, field.name, 0)


__all__ = ["StateStats"]
