"""FeederBatchSpout: Trident's test spout. You hand it batches; each becomes one txid.

Every ``feed()`` call is stored at once as an Arrow file in the spout's
directory (:mod:`trident_spark.spout.testing.batch_files`); the Spark data source
(:mod:`trident_spark.spout.testing.feeder_source`) serves one stored batch per
micro-batch. A field declared with a type (``"n:bigint"``, see
:mod:`trident_spark.spout.field_types`) is a plain Spark column; a field declared
without one carries any Python value, as Trident's ``Values`` do
(:mod:`trident_spark.object_values`).
"""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
import threading
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from trident_spark.errors import InvalidArgumentError, WrongTypeError, check_int
from trident_spark.fields import Fields
from trident_spark.object_values import OBJECT, OBJECT_METADATA, UncarriableValueError, encode_column
from trident_spark.spout.base import PythonSource, Spout
from trident_spark.spout.field_types import ColumnType, parse_type, quote_name
from trident_spark.spout.testing.batch_files import batch_path, count_batches, write_batch

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession


class FeederBatchSpout(Spout):
    """A spout you feed by hand, for tests and docs: each ``feed()`` is one Trident batch.

    Parameters
    ----------
    fields : list of str, or Fields
        The tuples' fields. A name may declare its Spark SQL type, ``"n:bigint"``
        (also double, boolean, binary, date, timestamp, decimal(p,s), array<T>,
        map<K,V>, struct<...>): the fast path. A field without one carries any
        Python value (str, int, float, bool, bytes, None, list, dict, tuple,
        datetime, any object that pickles), and its values may change type from
        tuple to tuple, as in Trident.
    num_partitions : int
        Spark partitions per batch. A batch's rows are cut, in order, into this many
        contiguous chunks; partition ``i`` gets chunk ``i`` and the first
        ``rows % num_partitions`` chunks have one row more (7 rows, 3 partitions:
        3, 2, 2; fewer rows than partitions leaves some empty).
    directory : str, optional
        Where batches are stored, one Arrow file each, never rewritten: a batch
        Spark replays reads the same rows. Default: a fresh temporary directory,
        removed when the Python process exits. Give a directory to keep batches
        across a driver restart: a spout opened on it goes on after the batches
        already there. It must be visible to Spark's executors (local mode, or a
        shared file system).

    Examples
    --------
    >>> spout = FeederBatchSpout(["word", "n:bigint"])
    >>> spout.feed([["the", 1], ["cat", 2]])          # batch 0, txid 0 of a fresh query
    0
    >>> spout.feed([])                                 # an empty batch is a batch too
    1
    >>> spout
    FeederBatchSpout(fields=['word:object', 'n:bigint'], batches=2)
    """

    def __init__(self, fields: Fields | Sequence[str], num_partitions: int = 2,
                 directory: str | os.PathLike[str] | None = None) -> None:
        names, declared = _parse_fields(fields)
        self._names = names
        self._declared: dict[str, ColumnType] = declared
        self._num_partitions = check_int(num_partitions, "num_partitions",
                                         message="FeederBatchSpout(num_partitions={value!r}): "
                                                 "give an int >= 1")
        if directory is None:
            self._directory = tempfile.mkdtemp(prefix="trident-feeder-")
            atexit.register(shutil.rmtree, self._directory, True)
        else:
            self._directory = os.path.abspath(os.fspath(directory))
            os.makedirs(self._directory, exist_ok=True)
        self._lock = threading.Lock()
        self._batches = count_batches(self._directory)
        self._adopt_existing_batches()

    def _adopt_existing_batches(self) -> None:
        """Check that batches already in the directory have this spout's fields, and that an
        undeclared field's column holds untyped values (binary): a directory written when
        undeclared fields were typed (before untyped values) cannot be read as this spout."""
        for index in range(self._batches):
            with pa.memory_map(batch_path(self._directory, index)) as source:
                schema = pa.ipc.open_file(source).schema
            if schema.names != self._names:
                raise InvalidArgumentError(
                    f"FeederBatchSpout: {self._directory} holds batches with fields {schema.names}, "
                    f"not {self._names}; give this spout another directory")
            typed = [name for name in self._names if name not in self._declared
                     and not _holds_untyped(schema.field(name).type)]
            if typed:
                stored = ", ".join(f"{name}: {schema.field(name).type}" for name in typed)
                raise InvalidArgumentError(
                    f"FeederBatchSpout: batch {index} in {self._directory} stores the undeclared fields "
                    f"{typed} as typed columns ({stored}), written before undeclared fields carried any "
                    f"value; declare their types (e.g. '{typed[0]}:<type>') or give this spout another "
                    "directory")

    # --- what the topology and the runner read ----------------------------------------------
    @property
    def fields(self) -> Fields:
        """The fields with their types: declared, or ``"object"`` (any Python value)."""
        return Fields(*(f"{n}:{self._type_of(n)}" for n in self._names))

    def _type_of(self, name: str) -> str:
        if name in self._declared:
            return self._declared[name].ddl
        return OBJECT

    @property
    def directory(self) -> str:
        """The directory holding the batch files."""
        return self._directory

    @property
    def num_partitions(self) -> int:
        """Spark partitions per batch."""
        return self._num_partitions

    @property
    def batches(self) -> int:
        """How many batches were fed (including those already in ``directory`` at construction)."""
        return self._batches

    def __repr__(self) -> str:
        shown = [f"{n}:{self._type_of(n)}" for n in self._names]
        return f"FeederBatchSpout(fields={shown}, batches={self._batches})"

    # --- feeding -----------------------------------------------------------------------------
    def feed(self, tuples: Iterable[Sequence[Any]]) -> int:
        """Store ``tuples`` as the next batch: one Spark micro-batch (one txid), rows in this order.

        ``feed([])`` makes an empty batch: the stream still runs a micro-batch for it,
        with no rows, and the txid advances. Batches fed between two triggers still
        run one micro-batch each.

        Parameters
        ----------
        tuples : list of lists
            One list of values per tuple, in the order of the spout's fields.

        Returns
        -------
        int
            The batch's number: 0 for the first fed to this directory. It is the
            txid the batch gets in a query that reads this spout from the start.

        Raises
        ------
        InvalidArgumentError
            (a ValueError) A tuple with the wrong number of values (the message names the
            tuple's index and the fields), or an integer too large for its type.
        WrongTypeError
            (a TypeError) A value that does not fit its field's declared type, or a value of an
            undeclared field that does not pickle.

        Examples
        --------
        >>> spout = FeederBatchSpout(["word", "n"])
        >>> spout.feed([["a", 1], ["b", 2.5], ["c", {"three": [3]}]])
        0
        >>> spout.fields.types
        {'word': 'object', 'n': 'object'}
        """
        rows = self._checked_rows(tuples)
        columns = [[row[i] for row in rows] for i in range(len(self._names))]
        arrays = [self._column(name, values) for name, values in zip(self._names, columns, strict=True)]
        table = pa.Table.from_arrays(arrays, names=self._names)
        with self._lock:
            index = self._batches
            write_batch(self._directory, index, table)
            self._batches = index + 1
        return index

    def _checked_rows(self, tuples: Iterable[Sequence[Any]]) -> list[Sequence[Any]]:
        if isinstance(tuples, str | bytes) or not isinstance(tuples, Iterable):
            raise WrongTypeError(
                f"FeederBatchSpout.feed takes a list of tuples, e.g. feed([{self._example()}]); "
                f"got {type(tuples).__name__}")
        rows = list(tuples)
        for i, row in enumerate(rows):
            if isinstance(row, str | bytes) or not isinstance(row, Sequence):
                raise WrongTypeError(
                    f"FeederBatchSpout.feed: tuple {i} is {row!r} ({type(row).__name__}), not a list of "
                    f"values; feed takes a list of tuples, e.g. feed([{self._example()}])")
            if len(row) != len(self._names):
                raise InvalidArgumentError(
                    f"FeederBatchSpout.feed: tuple {i} has {len(row)} values {list(row)!r}, expected "
                    f"{len(self._names)} for fields {self._names}")
        return rows

    def _example(self) -> str:
        return "[" + ", ".join(f"<{n}>" for n in self._names) + "]"

    def _column(self, name: str, values: list[Any]) -> pa.Array:
        """Check one field's values in a batch and make them an Arrow column."""
        if name not in self._declared:
            try:
                return encode_column(values)
            except UncarriableValueError as exc:
                bad = next(i for i, v in enumerate(values) if _uncarriable(v))
                raise WrongTypeError(f"FeederBatchSpout.feed: tuple {bad}, field {name!r}: {exc}") from None
        column_type = self._declared[name]
        for i, value in enumerate(values):
            problem = column_type.problem(value)
            if problem is not None:
                error = ValueError if "does not fit in" in problem else TypeError
                where = f"tuple {i}, field {name!r} ({self._why(name)})"
                raise error(f"FeederBatchSpout.feed: {where}: {problem}")
        if column_type.has_struct:
            values = [column_type.normalized(v) for v in values]
        try:
            return pa.array(values, type=column_type.arrow)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            at = _first_bad_index(values, column_type.arrow)
            what = f"tuple {at}, field {name!r}" if at is not None else f"field {name!r}"
            shown = f"{values[at]!r} cannot" if at is not None else "the values cannot"
            raise InvalidArgumentError(
                f"FeederBatchSpout.feed: {what} ({self._why(name)}): {shown} be stored as "
                f"{column_type.ddl}: {exc}") from None

    def _why(self, name: str) -> str:
        return f"declared {self._declared[name].ddl}; declare it without a type to carry any value"

    # --- Spark ---------------------------------------------------------------------------------
    def check(self) -> None:
        """Fail fast if the batch directory is gone (e.g. a temporary directory that was cleaned up)."""
        if not os.path.isdir(self._directory):
            from trident_spark.errors import SpoutError

            raise SpoutError(f"FeederBatchSpout: its directory {self._directory} does not exist any more")

    def schema_ddl(self) -> str:
        """The stream's schema as Spark DDL (``"`word` binary, `n` bigint"``: an undeclared
        field's tagged values are binary)."""
        return ", ".join(f"{quote_name(n)} {self._declared[n].ddl if n in self._declared else 'binary'}"
                         for n in self._names)

    def to_dataframe(self, spark: SparkSession) -> DataFrame:
        """The spout as a streaming DataFrame: its fields, in order, with their types.

        Undeclared fields are ``binary`` columns marked as untyped (``OBJECT_METADATA``).

        Examples
        --------
        >>> FeederBatchSpout(["word", "n:bigint"]).to_dataframe(spark).columns  # doctest: +SKIP
        ['word', 'n']
        """
        source = self.python_source()
        assert source is not None
        df = source.load(spark)
        return self.mark_untyped(df)

    def python_source(self) -> PythonSource | None:
        """The Spark data source ``trident_feeder`` reading the spout's batch files."""
        from trident_spark.spout.testing.feeder_source import FeederDataSource

        return PythonSource(FeederDataSource, {"directory": self._directory,
                                               "num_partitions": str(self._num_partitions),
                                               "schema": self.schema_ddl()})

    def mark_untyped(self, df: DataFrame) -> DataFrame:
        """``df`` (read from this spout's batches) with its undeclared fields marked untyped."""
        from pyspark.sql import functions as F

        return df.select(*(F.col(quote_name(n)) if n in self._declared
                           else F.col(quote_name(n)).alias(n, metadata=dict(OBJECT_METADATA))
                           for n in self._names))


def _parse_fields(fields: Fields | Sequence[str]) -> tuple[list[str], dict[str, ColumnType]]:
    """Field names and the declared types (a bare name in a list declares none)."""
    if isinstance(fields, str):
        fields = [fields]
    if isinstance(fields, Fields):
        declared_types = fields.declared_types
        specs = [(n, declared_types.get(n, "")) for n in fields]
        names = list(fields)
    else:
        parsed = Fields(*fields)  # validates the names
        names = list(parsed)
        specs = [(name, spec.partition(":")[2].strip()) for name, spec in zip(names, fields, strict=True)]
    if not names:
        raise InvalidArgumentError(
            "FeederBatchSpout: give at least one field, e.g. FeederBatchSpout(['word'])")
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise InvalidArgumentError(f"FeederBatchSpout: duplicate fields {duplicates} in {names}")
    declared: dict[str, ColumnType] = {}
    for name, type_text in specs:
        if type_text and type_text != OBJECT:  # "word:object" (as fields show it): no declared type
            try:
                declared[name] = parse_type(type_text)
            except ValueError as exc:
                raise InvalidArgumentError(
                    f"FeederBatchSpout: field {name!r} has type {type_text!r}: {exc}") from None
    return names, declared


def _holds_untyped(arrow_type: pa.DataType) -> bool:
    return bool(pa.types.is_binary(arrow_type) or pa.types.is_null(arrow_type))


def _uncarriable(value: Any) -> bool:
    try:
        encode_column([value])
    except UncarriableValueError:
        return True
    return False


def _first_bad_index(values: list[Any], arrow_type: pa.DataType) -> int | None:
    for i, value in enumerate(values):
        try:
            pa.array([value], type=arrow_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            return i
    return None
