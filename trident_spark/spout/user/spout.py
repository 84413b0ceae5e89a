"""A spout of your own (IBatchSpout, IPartitionedTridentSpout, IOpaquePartitionedTridentSpout,
ITridentSpout, IRichSpout) behind the :class:`Spout` interface.

``topology.newStream(name, spout)`` calls the interfaces' ``__trident_spout__(name)``, which
wraps the user's instance in a :class:`UserSpout`; the runtime then uses it as any spout.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from trident_spark import checkpoint_files as files
from trident_spark.errors import SpoutError, TopologyError
from trident_spark.fields import Fields
from trident_spark.object_values import OBJECT_METADATA
from trident_spark.shapes import MethodShape, check_methods
from trident_spark.spout.base import PythonSource, Spout, SpoutRun
from trident_spark.spout.user.batches import KINDS, spout_label
from trident_spark.spout.user.tuple_rows import TupleRows

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

_KIND_NAMES = {"batch": "IBatchSpout", "transactional": "IPartitionedTridentSpout",
               "opaque": "IOpaquePartitionedTridentSpout", "trident": "ITridentSpout", "rich": "IRichSpout"}


_CONF = "Map conf, TopologyContext context"
_PARTITIONED: tuple[MethodShape, ...] = (
    ("getCoordinator", f"getCoordinator({_CONF})", ("conf", "context")),
    ("getEmitter", f"getEmitter({_CONF})", ("conf", "context")),
    ("getOutputFields", "getOutputFields()", ()),
    ("getComponentConfiguration", "getComponentConfiguration()", ()))

#: Per kind: the interface's name and its methods as Storm declares them (checked at newStream).
SPOUT_SHAPES: dict[str, tuple[str, tuple[MethodShape, ...]]] = {
    "batch": ("IBatchSpout", (
        ("open", f"open({_CONF})", ("conf", "context")),
        ("emitBatch", "emitBatch(long batchId, TridentCollector collector)", ("batch_id", "collector")),
        ("ack", "ack(long batchId)", ("batch_id",)),
        ("close", "close()", ()),
        ("getOutputFields", "getOutputFields()", ()),
        ("getComponentConfiguration", "getComponentConfiguration()", ()))),
    "transactional": ("IPartitionedTridentSpout", _PARTITIONED),
    "opaque": ("IOpaquePartitionedTridentSpout", _PARTITIONED),
    "trident": ("ITridentSpout", (
        ("getCoordinator", f"getCoordinator(String txStateId, {_CONF})", ("txStateId", "conf", "context")),
        ("getEmitter", f"getEmitter(String txStateId, {_CONF})", ("txStateId", "conf", "context")),
        ("getOutputFields", "getOutputFields()", ()),
        ("getComponentConfiguration", "getComponentConfiguration()", ()))),
    "rich": ("IRichSpout", (
        ("open", f"open({_CONF}, SpoutOutputCollector collector)", ("conf", "context", "collector")),
        ("nextTuple", "nextTuple()", ()),
        ("ack", "ack(Object msgId)", ("msgId",)),
        ("fail", "fail(Object msgId)", ("msgId",)),
        ("close", "close()", ()),
        ("declareOutputFields", "declareOutputFields(OutputFieldsDeclarer declarer)", ("declarer",)),
        ("getComponentConfiguration", "getComponentConfiguration()", ()))),
}


#: Storm's ``Config.TOPOLOGY_MAX_TASK_PARALLELISM``.
MAX_TASK_PARALLELISM = "topology.max.task.parallelism"


class UserSpout(Spout):
    """A user's spout of ``kind`` read as stream ``stream``: its fields, and its Spark data source.

    Parameters
    ----------
    spout : object
        The user's IBatchSpout, IPartitionedTridentSpout or IOpaquePartitionedTridentSpout.
    kind : str
        ``"batch"``, ``"transactional"``, ``"opaque"``, ``"trident"`` (an ITridentSpout) or ``"rich"``
        (an IRichSpout in its RichSpoutBatchExecutor).
    stream : str
        The stream's name.
    metadata_dir : str, optional
        Where an opaque spout keeps the metadata of replays (set by :meth:`for_run`).

    Examples
    --------
    >>> from trident_spark.spout import IBatchSpout
    >>> class Words(IBatchSpout):
    ...     def open(self, conf, context): pass
    ...     def emitBatch(self, batch_id, collector): collector.emit(["cat"])
    ...     def ack(self, batch_id): pass
    ...     def getOutputFields(self): return ["word"]
    >>> UserSpout(Words(), "batch", "words")
    Words (IBatchSpout, stream 'words')
    """

    def __init__(self, spout: Any, kind: str, stream: str, metadata_dir: str | None = None) -> None:
        if kind not in KINDS:
            raise TopologyError(f"newStream({stream!r}): unknown spout kind {kind!r}; one of {list(KINDS)}")
        self.spout = spout
        self.kind = kind
        self.stream = stream
        self.metadata_dir = metadata_dir
        interface, shapes = SPOUT_SHAPES[kind]
        checked = spout.spout if kind == "rich" else spout  # a RichSpoutBatchExecutor: the rich spout
        check_methods(f"newStream({stream!r})", checked, interface, shapes)
        try:
            declared = spout.getOutputFields()
        except TopologyError:
            raise
        except Exception as exc:
            raise TopologyError(f"newStream({stream!r}): {type(spout).__name__}.getOutputFields() raised "
                                f"{type(exc).__name__}: {exc}") from exc
        if declared is None or isinstance(declared, bytes) or not (isinstance(declared, str)
                                                                   or len(declared)):
            raise TopologyError(f"newStream({stream!r}): {type(spout).__name__}.getOutputFields() returned "
                                f"{declared!r}; return the output fields, e.g. Fields('word') or ['word']")
        self._fields = Fields.of(declared)
        duplicates = self._fields.duplicates()
        if duplicates:
            raise TopologyError(f"newStream({stream!r}): {type(spout).__name__}.getOutputFields() has "
                                f"duplicate fields {duplicates}")
        self._rows = TupleRows(self._fields)
        self._python_source: PythonSource | None = None  # built once: writing it writes the pickle

    @property
    def fields(self) -> Fields:
        """The spout's output fields, with their declared types."""
        return self._fields

    def __repr__(self) -> str:
        name = getattr(self.spout, "spout_name", None) or type(self.spout).__name__
        return f"{name} ({_KIND_NAMES[self.kind]}, stream {self.stream!r})"

    def max_task_parallelism(self) -> int | None:
        """``topology.max.task.parallelism`` of the spout's ``getComponentConfiguration()``, as
        Trident reads it to cap the spout's stage (None when it sets none).

        Examples
        --------
        >>> from trident_spark.spout import IBatchSpout
        >>> class One(IBatchSpout):
        ...     def open(self, conf, context): pass
        ...     def emitBatch(self, batch_id, collector): pass
        ...     def ack(self, batch_id): pass
        ...     def getOutputFields(self): return ["word"]
        ...     def getComponentConfiguration(self): return {"topology.max.task.parallelism": 1}
        >>> UserSpout(One(), "batch", "words").max_task_parallelism()
        1
        """
        where = f"newStream({self.stream!r}): {type(self.spout).__name__}.getComponentConfiguration()"
        method = getattr(self.spout, "getComponentConfiguration", None)
        try:
            conf = method() if callable(method) else None
        except Exception as exc:
            raise TopologyError(f"{where} raised {type(exc).__name__}: {exc}") from exc
        value = conf.get(MAX_TASK_PARALLELISM) if isinstance(conf, dict) else None  # else: its run says
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise TopologyError(f"{where} sets {MAX_TASK_PARALLELISM!r} to {value!r}; give an int >= 1 "
                                "(the most tasks the spout's stage runs in) or leave it out")
        return value

    def for_run(self, run: SpoutRun) -> UserSpout:
        """The spout told where its metadata of replays lives: ``<checkpoint>/user-spout-<stream>``."""
        directory = (None if run.checkpoint is None
                     else str(files.join(run.checkpoint, f"user-spout-{self.stream}")))
        return UserSpout(self.spout, self.kind, self.stream, directory)

    def check(self) -> None:
        """Fail fast if the spout does not pickle (it is sent to the data source's process)."""
        self._pickled()

    def _pickled(self) -> bytes:
        from trident_spark.spout.user.source import pickle_spout

        try:
            return pickle_spout(self.spout)
        except Exception as exc:
            raise SpoutError(
                f"{spout_label(self.spout, self.stream)}: the spout does not pickle "
                f"({type(exc).__name__}: {exc}); it is sent to the Python process that reads its batches: "
                "open connections in open/getCoordinator/getEmitter, not in __init__") from None

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The spout as a streaming DataFrame (Spark data source ``trident_user_spout``)."""
        from pyspark.sql import functions as F

        from trident_spark.spout.field_types import quote_name
        source = self.python_source()
        assert source is not None
        df = source.load(spark)
        return df.select(*(F.col(quote_name(n)) if n in self._rows.declared
                           else F.col(quote_name(n)).alias(n, metadata=dict(OBJECT_METADATA))
                           for n in self._fields))

    def python_source(self) -> PythonSource | None:
        """The Spark data source ``trident_user_spout``; the spout's pickle is written (to
        :attr:`metadata_dir`) the first time it is asked for."""
        from trident_spark.spout.user.source import UserSpoutDataSource, write_spout

        source = self._python_source
        if source is None:
            declared = self._rows.declared
            specs = [f"{n}:{declared[n].ddl}" if n in declared else n for n in self._fields]
            source = PythonSource(UserSpoutDataSource, {
                "spout_file": write_spout(self._pickled(), self.metadata_dir),
                "spout_class": getattr(self.spout, "spout_name", None) or type(self.spout).__name__,
                "kind": self.kind, "stream": self.stream, "fields": json.dumps(specs),
                "schema": self._rows.ddl(), "metadata_dir": self.metadata_dir or ""})
            self._python_source = source
        return source


__all__ = ["UserSpout"]
