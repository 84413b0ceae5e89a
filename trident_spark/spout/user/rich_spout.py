"""IRichSpout and BaseRichSpout: Storm's plain spout, wrapped into batches as Trident wraps it.

``topology.newStream(name, MyRichSpout())`` wraps the spout in a :class:`RichSpoutBatchExecutor`
(Trident's ``RichSpoutBatchExecutor``), an :class:`~.trident_spout.ITridentSpout` whose emitter,
for each batch: opens the spout once (``open(conf, context, collector)``), then calls
``nextTuple()`` up to ``topology.spout.max.batch.size`` times (1000 by default; the spout's
``getComponentConfiguration()`` may set it), ending the batch at the first call that emits
nothing; when the batch is done it calls ``ack(msgId)`` for every tuple of the batch emitted with
a message id. A batch emitted again (replayed) first fails the message ids of its earlier
emission (``fail(msgId)``), then calls ``nextTuple`` anew.

Not replayable, as in Trident: a replayed batch holds whatever ``nextTuple`` emits then, not the
tuples of its first emission. Every tuple reaches the topology at least once as long as the
spout re-emits what is failed, or not acked (after a driver restart the lost batch's message
ids are neither acked nor failed: a reliable source redelivers them after its own timeout, as
after a Storm worker crash); with an opaque state, each batch's tuples count once.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from trident_spark.errors import SpoutError, TopologyError
from trident_spark.fields import Fields
from trident_spark.spout.user.batches import calling, spout_label
from trident_spark.spout.user.trident_spout import ITridentSpout

if TYPE_CHECKING:
    from trident_spark.spout.base import Spout
    from trident_spark.spout.user.collector import SpoutCollector
    from trident_spark.spout.user.transaction import SpoutContext, TransactionAttempt

#: Trident's ``RichSpoutBatchExecutor.MAX_BATCH_SIZE_CONF``: most ``nextTuple`` calls per batch.
MAX_BATCH_SIZE_CONF = "topology.spout.max.batch.size"
DEFAULT_MAX_BATCH_SIZE = 1000


class OutputFieldsDeclarer:
    """What ``declareOutputFields(declarer)`` is given: Storm's ``OutputFieldsDeclarer``.

    Examples
    --------
    >>> declarer = OutputFieldsDeclarer()
    >>> declarer.declare(Fields("word", "n"))
    >>> declarer.streams
    {'default': Fields('word', 'n')}
    """

    def __init__(self) -> None:
        self.streams: dict[str, Fields] = {}

    def declare(self, fields: Fields | Sequence[str], direct: bool = False) -> None:
        """Declare the default stream's fields."""
        self.declareStream("default", fields, direct)

    def declareStream(self, streamId: str, fields: Fields | Sequence[str], direct: bool = False) -> None:
        """Declare stream ``streamId``'s fields (Trident reads a spout with one stream)."""
        if direct:
            raise TopologyError(f"declareStream({streamId!r}, ..., direct=True): Trident does not support "
                                "direct streams")
        self.streams[streamId] = Fields.of(fields)


class _Capture:
    """Trident's ``CaptureCollector``: what the spout emits goes to the current batch's collector;
    the message ids of the batch are kept for ``ack``/``fail``."""

    def __init__(self) -> None:
        self.collector: SpoutCollector | None = None
        self.ids: list[Any] = []
        self.emitted = 0  # in the current batch
        self.pending = 0

    def reset(self, collector: SpoutCollector) -> None:
        self.collector = collector
        self.ids = []
        self.emitted = 0


class SpoutOutputCollector:
    """What ``IRichSpout.open`` is given: Storm's ``SpoutOutputCollector``.

    ``emit(values)``, ``emit(values, msgId)``, ``emit(streamId, values[, msgId])``; a tuple
    emitted with a message id is acked (``ack(msgId)``) when its batch is done, or failed
    (``fail(msgId)``) when its batch is emitted again.

    Examples
    --------
    >>> from trident_spark.spout.user.collector import SpoutCollector
    >>> capture = _Capture(); capture.reset(SpoutCollector(["word"], "spout Words, batch 0"))
    >>> SpoutOutputCollector(capture).emit(["cat"], "m1")
    []
    >>> capture.collector.tuples, capture.ids
    ([['cat']], ['m1'])
    """

    def __init__(self, capture: _Capture) -> None:
        self._capture = capture

    def emit(self, *args: Any, **kwargs: Any) -> list[int]:
        """Emit one tuple into the current batch; returns ``[]`` (no task ids here)."""
        msg_id = kwargs.pop("messageId", kwargs.pop("msgId", None))
        if kwargs:
            raise SpoutError(f"SpoutOutputCollector.emit(): unexpected keywords {sorted(kwargs)}")
        if args and isinstance(args[0], str) and len(args) >= 2:  # emit(streamId, values[, msgId])
            args = args[1:]
        if len(args) == 2:
            values, msg_id = args
        elif len(args) == 1:
            (values,) = args
        else:
            raise SpoutError("SpoutOutputCollector.emit() takes (values[, messageId]) or "
                             "(streamId, values[, messageId])")
        capture = self._capture
        if capture.collector is None:
            raise SpoutError("the spout emitted outside nextTuple(); emit from nextTuple, which each batch "
                             "calls")
        capture.collector.emit(values)
        capture.emitted += 1
        if msg_id is not None:
            capture.ids.append(msg_id)
        return []

    def emitDirect(self, taskId: int, *args: Any) -> None:
        """Refused: Trident does not support direct streams."""
        raise SpoutError("emitDirect: Trident does not support direct streams")

    def reportError(self, error: BaseException) -> None:
        """Log ``error`` and go on (the batch is not failed)."""
        if self._capture.collector is not None:
            self._capture.collector.reportError(error)

    def getPendingCount(self) -> int:
        """How many batches' message ids wait for their ack."""
        return self._capture.pending

    def flush(self) -> None:
        """Nothing to do: tuples are the batch's once emitted."""


class IRichSpout(ABC):
    """Storm's ``IRichSpout``: a spout that emits one tuple per ``nextTuple()`` call.

    ``newStream`` wraps it as Trident does (:class:`RichSpoutBatchExecutor`): see the module's
    docstring for the batches it makes and its guarantee. Every method runs on the driver, in
    the Python process Spark starts for the stream's data source; the instance is pickled there:
    open connections in ``open``. :class:`BaseRichSpout` gives the optional methods.
    """

    @abstractmethod
    def open(self, conf: dict[str, Any], context: SpoutContext, collector: SpoutOutputCollector) -> None:
        """Called once, before the first ``nextTuple``; keep ``collector`` to emit with."""

    @abstractmethod
    def nextTuple(self) -> None:
        """Emit the next tuple (or none: that ends the batch)."""

    @abstractmethod
    def declareOutputFields(self, declarer: OutputFieldsDeclarer) -> None:
        """``declarer.declare(Fields(...))``: the fields of the emitted tuples."""

    def ack(self, msgId: Any) -> None:
        """The tuple emitted with ``msgId`` is done. The default does nothing."""
        return None

    def fail(self, msgId: Any) -> None:
        """The tuple emitted with ``msgId`` was in a batch emitted again. The default does nothing."""
        return None

    def close(self) -> None:
        """The query stops. The default does nothing."""
        return None

    def activate(self) -> None:
        """Storm's hook; not called here (a query is active while it runs)."""
        return None

    def deactivate(self) -> None:
        """Storm's hook; not called here."""
        return None

    def getComponentConfiguration(self) -> dict[str, Any] | None:
        """The ``conf`` given to ``open`` (``topology.spout.max.batch.size`` is read from it)."""
        return None

    def __trident_spout__(self, stream: str) -> Spout:
        """The spout as the runtime reads it: wrapped as Trident wraps it (``newStream`` calls this)."""
        return RichSpoutBatchExecutor(self).__trident_spout__(stream)


class BaseRichSpout(IRichSpout, ABC):
    """Storm's ``BaseRichSpout``: an :class:`IRichSpout` with the optional methods given.

    Examples
    --------
    >>> class Words(BaseRichSpout):
    ...     def open(self, conf, context, collector):
    ...         self.collector, self.left = collector, ["cat", "dog"]
    ...     def nextTuple(self):
    ...         if self.left:
    ...             word = self.left.pop(0)
    ...             self.collector.emit([word], word)
    ...     def declareOutputFields(self, declarer):
    ...         declarer.declare(Fields("word"))
    >>> list(Words().__trident_spout__("words").fields)
    ['word']
    """


class _RichSpoutCoordinator(ITridentSpout.BatchCoordinator):
    """No metadata: every batch is whatever ``nextTuple`` gives."""

    def initializeTransaction(self, txid: int, prevMetadata: Any, currMetadata: Any) -> None:
        return None


class _RichSpoutEmitter(ITridentSpout.Emitter):
    """Trident's ``RichSpoutEmitter``: ``nextTuple`` until the batch is full or a call emits nothing."""

    def __init__(self, spout: IRichSpout, stream: str, conf: dict[str, Any], context: SpoutContext) -> None:
        self.spout = spout
        self.label = spout_label(spout, stream)
        self.conf = conf
        self.context = context
        size = conf.get(MAX_BATCH_SIZE_CONF, DEFAULT_MAX_BATCH_SIZE)
        if isinstance(size, bool) or not isinstance(size, int) or size < 1:
            raise SpoutError(f"{self.label}: {MAX_BATCH_SIZE_CONF} is {size!r}; give an int >= 1 (most "
                             "nextTuple calls per batch)")
        self.max_batch_size = size
        self.capture = _Capture()
        self.ids: dict[int, list[Any]] = {}
        self.prepared = False

    def emitBatch(self, tx: TransactionAttempt, coordinatorMeta: Any,
                  collector: SpoutCollector) -> None:
        txid = tx.getTransactionId()
        where = f"{self.label}, batch {txid}"
        if txid in self.ids:  # emitted before: Trident fails the earlier emission's ids
            self._finish(txid, "fail")
        self.capture.reset(collector)
        if not self.prepared:
            calling(self.label, "open", self.spout.open, self.conf, self.context,
                    SpoutOutputCollector(self.capture))
            self.prepared = True
        for _ in range(self.max_batch_size):
            before = self.capture.emitted
            calling(where, "nextTuple", self.spout.nextTuple)
            if self.capture.emitted == before:
                break
        self.ids[txid] = self.capture.ids
        self.capture.pending = len(self.ids)
        self.capture.collector = None

    def success(self, tx: TransactionAttempt) -> None:
        self._finish(tx.getTransactionId(), "ack")

    def _finish(self, txid: int, method: str) -> None:
        for msg_id in self.ids.pop(txid, []):
            calling(f"{self.label}, batch {txid}", method, getattr(self.spout, method), msg_id)
        self.capture.pending = len(self.ids)

    def close(self) -> None:
        if self.prepared:
            calling(self.label, "close", self.spout.close)


class RichSpoutBatchExecutor(ITridentSpout):
    """Trident's ``RichSpoutBatchExecutor``: an :class:`IRichSpout` as an ITridentSpout.

    ``newStream`` wraps a rich spout in one; construct it yourself only to pass it where an
    ITridentSpout is expected.

    Parameters
    ----------
    spout : IRichSpout
        The spout to read in batches.

    Examples
    --------
    >>> class Nothing(BaseRichSpout):
    ...     def open(self, conf, context, collector): pass
    ...     def nextTuple(self): pass
    ...     def declareOutputFields(self, declarer): declarer.declare(["x"])
    >>> RichSpoutBatchExecutor(Nothing()).getOutputFields()
    Fields('x')
    """

    def __init__(self, spout: IRichSpout) -> None:
        self.spout = spout

    @property
    def spout_name(self) -> str:
        """The wrapped spout's class name, as errors name the spout."""
        return type(self.spout).__name__

    def getComponentConfiguration(self) -> dict[str, Any] | None:
        return self.spout.getComponentConfiguration()

    def getOutputFields(self) -> Fields:
        """The fields of the spout's one declared stream (Trident's ``getSingleOutputStreamFields``)."""
        declarer = OutputFieldsDeclarer()
        self.spout.declareOutputFields(declarer)
        if len(declarer.streams) != 1:
            raise TopologyError(f"{type(self.spout).__name__}.declareOutputFields declared "
                                f"{len(declarer.streams)} streams {sorted(declarer.streams)}; Trident reads "
                                "a spout with exactly one stream: declarer.declare(Fields(...))")
        return next(iter(declarer.streams.values()))

    def getCoordinator(self, txStateId: str, conf: dict[str, Any],
                       context: SpoutContext) -> ITridentSpout.BatchCoordinator:
        return _RichSpoutCoordinator()

    def getEmitter(self, txStateId: str, conf: dict[str, Any],
                   context: SpoutContext) -> ITridentSpout.Emitter:
        return _RichSpoutEmitter(self.spout, txStateId, conf, context)

    def __trident_spout__(self, stream: str) -> Spout:
        from trident_spark.spout.user.spout import UserSpout

        return UserSpout(self, "rich", stream)


__all__ = ["DEFAULT_MAX_BATCH_SIZE", "MAX_BATCH_SIZE_CONF", "BaseRichSpout", "IRichSpout",
           "OutputFieldsDeclarer", "RichSpoutBatchExecutor", "SpoutOutputCollector"]
