"""A spout of your own as a Spark Python streaming data source (``trident_user_spout``).

Where each call runs. The stream reader's ``latestOffset``, ``partitions`` and ``commit`` run
on the driver, in the one Python process Spark starts for the source, which keeps the user's
spout (unpickled from the file the ``spout_file`` option names: a spout may hold a password,
and options show in Spark's plans) and its :class:`BatchMaker` for the whole query:

* ``latestOffset(start)`` makes the next batch (the spout emits it now) and returns its end
  offset, which Spark logs before the batch runs; the batch is kept in memory;
* ``partitions(start, end)`` serves the kept batch: one input partition per spout partition,
  carrying its tuples as Arrow rows (a value that does not fit its field fails here).
  Without a kept batch (a batch in the offset log, replayed after a restart) the maker
  emits it again: an IBatchSpout's or opaque spout's on the driver, a
  transactional spout's in the tasks (the partition carries the logged metadata and the
  pickled spout);
* ``commit(end)``: the batch is done (``ack``, forgetting metadata);
* ``read(partition)`` runs in a Spark task: the partition's tuples (or, for a replayed
  transactional batch, ``emitPartitionBatch`` with the logged metadata) as Arrow rows.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import pickle
import tempfile
from collections.abc import Iterator, Sequence
from typing import Any

import pyarrow as pa
from pyspark.sql.datasource import DataSource, DataSourceStreamReader, InputPartition
from pyspark.sql.streaming.datasource import ReadAllAvailable, ReadLimit, SupportsTriggerAvailableNow
from pyspark.sql.types import StructType

from trident_spark import checkpoint_files as files
from trident_spark.fields import Fields
from trident_spark.spout.user.batches import (
    Batch,
    BatchMaker,
    PartitionBatch,
    ReplayedMetadata,
    batch_maker,
    emit_again,
)
from trident_spark.spout.user.tuple_rows import TupleRows

FORMAT_NAME = "trident_user_spout"


def pickle_spout(spout: Any) -> bytes:
    """The spout pickled with cloudpickle (its classes by value where the runtime asked for it)."""
    from pyspark import cloudpickle

    return bytes(cloudpickle.dumps(spout))  # type: ignore[no-untyped-call]


def write_spout(pickled: bytes, directory: str | None) -> str:
    """Store a pickled spout for the data source's process: in ``directory`` (the query's
    checkpoint, a local path or a URI), readable by the owner only; without one, in a new
    temporary file. Returns its path (or URI)."""
    if directory is None:
        descriptor, path = tempfile.mkstemp(prefix="trident-user-spout-", suffix=".pickle")
        os.close(descriptor)
        atexit.register(_remove, path)
    else:
        path = str(files.join(directory, "spout.pickle"))
    files.write_bytes(path, pickled, private=True)
    return path


def _remove(path: str) -> None:
    with contextlib.suppress(FileNotFoundError):
        os.remove(path)


class UserSpoutDataSource(DataSource):
    """Spark data source ``trident_user_spout``; options ``spout_file`` (the pickled spout),
    ``spout_class``, ``kind``, ``stream``, ``fields`` (JSON list of ``name[:type]``), ``schema``
    (DDL), ``metadata_dir`` (may be empty)."""

    @classmethod
    def name(cls) -> str:
        return FORMAT_NAME

    def schema(self) -> str:
        return str(self.options["schema"])

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return UserSpoutStreamReader(dict(self.options), schema)


class UserSpoutInputPartition(InputPartition):
    """One spout partition's part of batch ``txid``: its rows (Arrow IPC, made on the driver), or
    its logged metadata and the pickled spout, for the task to emit it again."""

    def __init__(self, txid: int, part: PartitionBatch, rows: bytes | None, spout: bytes | None) -> None:
        super().__init__((txid, part.pid))
        self.txid = txid
        self.part = PartitionBatch(part.pid, None, part.partition, part.meta) if rows is not None else part
        self.rows = rows
        self.spout = spout


class UserSpoutStreamReader(DataSourceStreamReader, SupportsTriggerAvailableNow):
    """One spout batch per micro-batch (see the module's docstring for where each call runs)."""

    def __init__(self, options: dict[str, str], schema: StructType) -> None:
        self.options = options
        self.schema = schema
        self.kind = options["kind"]
        self.stream = options["stream"]
        self.field_specs: list[str] = json.loads(options["fields"])
        self._spout: Any = None
        self._pickled: bytes | None = None
        self._maker: BatchMaker | None = None
        self._kept: tuple[str, Batch] | None = None

    def __getstate__(self) -> dict[str, Any]:
        """What a task gets: the options, not the driver's spout, maker or kept batch."""
        state = dict(self.__dict__)
        state.update(_spout=None, _pickled=None, _maker=None, _kept=None)
        return state

    def _pickled_spout(self) -> bytes:
        """The pickled spout (driver), read once per process from the ``spout_file``."""
        if self._pickled is None:
            self._pickled = files.read_bytes(self.options["spout_file"])
        return self._pickled

    @property
    def spout(self) -> Any:
        """The user's spout (driver), unpickled once per process."""
        if self._spout is None:
            self._spout = pickle.loads(self._pickled_spout())
        return self._spout

    @property
    def maker(self) -> BatchMaker:
        """The spout's batch maker (driver), made once per query start."""
        if self._maker is None:
            directory = self.options.get("metadata_dir") or None
            self._maker = batch_maker(self.kind, self.spout, self.stream, self._names(),
                                      ReplayedMetadata(directory))
        return self._maker

    def _names(self) -> list[str]:
        return list(Fields(*self.field_specs))

    def initialOffset(self) -> dict[str, Any]:
        return self.maker.initial_offset()

    def prepareForTriggerAvailableNow(self) -> None:
        """An ``available_now`` run ends when the spout has nothing more (see the spout kinds)."""
        self.maker.available_now = True

    def getDefaultReadLimit(self) -> ReadLimit:
        return ReadAllAvailable()

    def latestOffset(self, start: dict[str, Any], limit: ReadLimit) -> dict[str, Any]:
        """The next batch, emitted now and kept for :meth:`partitions`: its end offset; or ``start``
        when there is none (no micro-batch this trigger)."""
        batch = self.maker.next_batch(start)
        if batch is None:
            return start
        self._kept = (_key(batch.end), batch)
        return batch.end

    def partitions(self, start: dict[str, Any], end: dict[str, Any]) -> Sequence[InputPartition]:
        """The batch ending at ``end``: kept since ``latestOffset``, else emitted again (a replay)."""
        if self._kept is not None and self._kept[0] == _key(end):
            batch = self._kept[1]
        else:
            batch = self.maker.replay(start, end)
            self._kept = (_key(end), batch)
        return [self._input_partition(batch.txid, part) for part in batch.parts]

    def _input_partition(self, txid: int, part: PartitionBatch) -> UserSpoutInputPartition:
        """The part as a task reads it: emitted tuples become Arrow rows here, on the driver, so a
        value that does not fit its field fails here, naming the spout, partition and batch."""
        if part.tuples is None:
            return UserSpoutInputPartition(txid, part, None, self._pickled_spout())
        table = self._rows().table(part.tuples, self._where(txid, part.pid))
        sink = pa.BufferOutputStream()
        with pa.ipc.new_stream(sink, table.schema) as writer:
            writer.write_table(table)
        return UserSpoutInputPartition(txid, part, sink.getvalue().to_pybytes(), None)

    def _rows(self) -> TupleRows:
        return TupleRows(Fields(*self.field_specs))

    def _where(self, txid: int, pid: str) -> str:
        spout = self.options["spout_class"]
        return f"spout {spout} (stream {self.stream!r}), partition {pid!r}, batch {txid}"

    def read(self, partition: InputPartition) -> Iterator[Any]:
        """Runs in a Spark task: the partition's tuples as Arrow record batches of the stream's schema."""
        from pyspark.sql.pandas.types import to_arrow_schema

        from trident_spark.worker_gc import settle_imports

        settle_imports()
        assert isinstance(partition, UserSpoutInputPartition)
        if partition.rows is not None:
            table = pa.ipc.open_stream(partition.rows).read_all()
        else:
            assert partition.spout is not None
            spout = pickle.loads(partition.spout)
            tuples = emit_again(spout, self.stream, self._names(), partition.txid, partition.part)
            table = self._rows().table(tuples, self._where(partition.txid, partition.part.pid))
        table = table.cast(to_arrow_schema(self.schema, timezone="UTC"))
        return iter([b for b in table.to_batches() if b.num_rows])

    def commit(self, end: dict[str, Any]) -> None:
        """The batch ending at ``end`` is done: ``ack`` it, forget metadata no batch starts from."""
        self.maker.committed(end)

    def stop(self) -> None:
        """The query stops: close the spout (``close``, or the emitter's and coordinator's)."""
        if self._maker is not None:
            self._maker.close()


def _key(offset: dict[str, Any]) -> str:
    return json.dumps(offset, sort_keys=True)


__all__ = ["FORMAT_NAME", "UserSpoutDataSource", "UserSpoutStreamReader", "pickle_spout", "write_spout"]
