"""Python's cyclic garbage collector in Spark's Python workers: paused around allocation-heavy
work, and kept off the modules the worker imported.

Spark's Python worker calls ``gc.collect()`` after every task (``pyspark/daemon.py``), a full
collection that walks every object the collector tracks. Once pyarrow, pandas, pyspark and
our modules are imported that is about 45 ms of CPU per task, paid by every task of every
batch: with a few Python stages over a few partitions, more than a tenth of a second per
batch, and half of the Python workers' CPU in a test run of many small batches.
:func:`settle_imports` moves the imported modules out of its way.
"""

from __future__ import annotations

import gc
import sys
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def gc_paused() -> Iterator[None]:
    """Hold off the cyclic garbage collector for the block (reference counting still frees).

    Reading or transforming an Arrow batch makes a tracked object or more per record,
    all alive until the batch is done; every few hundred allocations start a collection
    that walks them all, which cost a third (the spout's read) to half (a Python ``each``)
    of the CPU time. A cycle made inside is collected once the block ends. Never hold it
    across a ``yield``: the consumer's code would run with the collector off.

    Examples
    --------
    >>> with gc_paused():
    ...     words = [w for w in "a b".split()]
    """
    if not gc.isenabled():
        yield
        return
    gc.disable()
    try:
        yield
    finally:
        gc.enable()


#: How many modules were imported when this worker last froze its heap (0: never).
_modules_frozen = 0


def settle_imports() -> None:
    """In a Spark task: freeze the worker's heap if modules were imported since the last time.

    Called when a task of ours starts: one collection, then ``gc.freeze()`` moves what is
    alive (modules, their functions and classes) to the permanent generation, which later
    collections skip; objects tasks make afterwards are collected as before. It freezes again
    only when modules were imported since (a user's module, a store's client), so a worker
    freezes a handful of times in its life. Frozen objects are still freed by reference
    counting; only a reference cycle among them, garbage already when frozen, would stay.
    Outside a Spark task (the driver, a test calling a stage directly) it does nothing.

    Examples
    --------
    >>> settle_imports()  # on the driver: nothing to do
    >>> import gc
    >>> gc.get_freeze_count() >= 0
    True
    """
    global _modules_frozen
    count = len(sys.modules)
    if count == _modules_frozen:
        return
    from pyspark import TaskContext

    if TaskContext.get() is None:
        return
    gc.collect()
    gc.freeze()
    _modules_frozen = count
