"""The txids of batches that Spark does not number: the DRPC driver path's, kept in the checkpoint.

On the Spark path a batch's txid is Spark's batch id, written to the query's offsets log
(``<checkpoint>/<stream>/offsets/N``) before the batch runs: a replay gets the same id and the
same data, and a restarted query goes on from the log, so an id is never given to other data.
The DRPC driver path runs each request as a batch with no Spark query, hence no offsets log; a
per-process counter would start at 0 again after each restart and hand the txids of answered
requests to new ones. User code sees the txid (``OperationContext.txid``, a ``BatchState``'s
txid, a ``QueryFunction`` that keys its own records by it), so the same id must never name two
requests' data.

:class:`TxidBlocks` keeps that rule with the Spark path's own source of truth, the query's
checkpoint directory: it starts above the highest batch id in the query's offsets log (a
stream that ran on Spark with this checkpoint before goes on past its batches) and above
everything it handed out before (the file :data:`TXIDS_FILE`). To keep a request free of
file writes it reserves txids a block at a time: one atomic write per :data:`BLOCK` requests,
written before any txid of the block is used. Txids left unused when the process stops are
skipped, never reused: Trident needs txids that grow and are never reused, not consecutive ones.
"""

from __future__ import annotations

import itertools
import threading

from trident_spark import checkpoint_files as files
from trident_spark.errors import TopologyError
from trident_spark.runtime.offsets_log import logged_batches

#: In a query's checkpoint directory: the first txid not yet reserved by the DRPC driver path.
TXIDS_FILE = "trident-driver-txids"

#: Txids reserved per write of :data:`TXIDS_FILE`.
BLOCK = 1000


class TxidBlocks:
    """Txids for batches run outside Spark, never reused across restarts of the same checkpoint.

    Parameters
    ----------
    checkpoint : Path, str or None
        The query's checkpoint directory (a local path or a URI). None: numbered from 0 in
        this process only (a stream run without a checkpoint, as in the examples).
    block : int, default 1000
        Txids reserved per write of :data:`TXIDS_FILE`.

    Thread-safe: the DRPC driver path's workers take txids from one instance.

    Examples
    --------
    >>> import tempfile
    >>> where = tempfile.mkdtemp()
    >>> first = TxidBlocks(where, block=10)
    >>> [first.next() for _ in range(3)]
    [0, 1, 2]
    >>> TxidBlocks(where, block=10).next()  # after a restart: past the reserved block
    10
    """

    def __init__(self, checkpoint: files.Location | None, block: int = BLOCK) -> None:
        if block < 1:
            raise ValueError(f"TxidBlocks: block must be >= 1, got {block}")
        self.checkpoint = checkpoint
        self.block = block
        self._lock = threading.Lock()
        self._counter = itertools.count()
        self._next = 0
        self._end = 0  # the first txid not reserved: nothing reserved yet

    def next(self) -> int:
        """The next txid, reserved in the checkpoint before it is handed out."""
        if self.checkpoint is None:
            return next(self._counter)
        with self._lock:
            if self._next >= self._end:
                self._reserve()
            txid = self._next
            self._next += 1
            return txid

    def _reserve(self) -> None:
        assert self.checkpoint is not None
        start = max(self._next, self._reserved(), self._past_spark_batches())
        end = start + self.block
        files.write_text(files.join(self.checkpoint, TXIDS_FILE), str(end), sync=True)  # atomic
        self._next, self._end = start, end

    def _reserved(self) -> int:
        """The first txid no run of this checkpoint reserved (0: none did)."""
        assert self.checkpoint is not None
        where = files.join(self.checkpoint, TXIDS_FILE)
        try:
            text = files.read_text(where)
        except FileNotFoundError:
            return 0
        try:
            value = int(text.strip())
        except ValueError:
            value = -1
        if value < 0:
            raise TopologyError(
                f"{files.describe(where)} does not hold a txid (got {text[:40]!r}): the DRPC driver path "
                "cannot tell which txids it used. Restore the file, or write a number above every txid "
                "the stream used (its answers' batches) into it")
        return value

    def _past_spark_batches(self) -> int:
        """One past the highest batch id in the query's offsets log (0: none)."""
        assert self.checkpoint is not None
        batches = logged_batches(self.checkpoint)
        return batches[-1] + 1 if batches else 0


__all__ = ["BLOCK", "TXIDS_FILE", "TxidBlocks"]
