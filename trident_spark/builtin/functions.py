"""Built-in function Split: one tuple per word of a text field, in Python, Arrow or Spark SQL.

Nothing here imports pyspark until a ``spark_*`` method is called.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from trident_spark.arrow_operation import ArrowFunction, ArrowResult
from trident_spark.errors import InvalidArgumentError, TopologyError, WrongTypeError
from trident_spark.fields import TridentTuple
from trident_spark.operation import TridentCollector

if TYPE_CHECKING:
    import pyarrow as pa
    from pyspark.sql import Column

#: Every character for which Python's ``str.isspace()`` is true, as a Java regex class:
#: Java's Unicode ``\s`` (``(?U)``: the White_Space property) plus U+001C..U+001F, which
#: ``str.split()`` also splits on. Kept short on purpose: Spark's ``split`` compiles its
#: pattern again for every row, and the spelt-out class of 29 characters cost 2-3x the
#: CPU of this one (bench/dsl.py). Checked against ``str.isspace()`` on every code point.
PYTHON_WHITESPACE_REGEX = r"(?U)[\s\x1C-\x1F]+"


class Split(ArrowFunction):
    """Emit one tuple per word of the (first) input field; a None value emits nothing.

    Parameters
    ----------
    pattern : str, optional
        None (default): split as ``str.split()`` does, on runs of whitespace
        (Unicode whitespace included), without empty words. Otherwise a regular
        expression separating words (``re.split``), empty pieces dropped. The
        SQL form hands the pattern to Java's regex engine: use syntax both
        engines read alike (character classes, ``+``, ``*``, ``|``, escapes),
        and no capturing groups (``re.split`` would emit what they capture).

    Notes
    -----
    The emitted field is a string: :meth:`function_types` tells the planner.
    The SQL form is ``explode(array_remove(split(value, regex), ''))``, which
    emits the same words, in the same order, as the Python form. Where the SQL
    form cannot run (an untyped field; inside a Python stage), :meth:`execute_arrow`
    splits a whole batch: Arrow's ``utf8_split_whitespace`` (the same whitespace
    as ``str.split()``, checked on every code point), or ``re.split`` per value
    for a ``pattern``.

    Examples
    --------
    >>> from trident_spark.fields import TridentTuple
    >>> from trident_spark.operation import TridentCollector
    >>> out = TridentCollector()
    >>> Split().execute(TridentTuple(["  the cat\\tsat \\n"], ["value"]), out)
    >>> Split(",").execute(TridentTuple(["a,,b,"], ["value"]), out)
    >>> out.emitted
    [['the'], ['cat'], ['sat'], ['a'], ['b']]
    """

    def __init__(self, pattern: str | None = None) -> None:
        if pattern is not None:
            if not isinstance(pattern, str):
                raise WrongTypeError(f"Split: pattern must be a regular expression (str) or None, "
                                     f"got {pattern!r}")
            try:
                re.compile(pattern)
            except re.error as exc:
                raise InvalidArgumentError(
                    f"Split: {pattern!r} is not a valid regular expression: {exc}") from None
        self.pattern = pattern

    def words(self, text: str) -> list[str]:
        """The words of ``text``, as :meth:`execute` emits them.

        Examples
        --------
        >>> Split(r"\\s*;\\s*").words("a ; b;;c ")
        ['a', 'b', 'c ']
        """
        if self.pattern is None:
            return text.split()
        return [piece for piece in re.split(self.pattern, text) if piece]

    def execute(self, tuple: TridentTuple, collector: TridentCollector) -> None:
        value = tuple.getValue(0)
        if value is None:
            return
        if not isinstance(value, str):
            field = tuple.getFields()[0]
            raise WrongTypeError(f"Split() splits text, but field {field!r} holds {type(value).__name__} "
                                 f"{value!r}; convert it to str first")
        for word in self.words(value):
            collector.emit([word])

    def execute_arrow(self, batch: pa.RecordBatch) -> ArrowResult:
        """The words of every value of the batch's first column: (each word's row, [words]).

        Examples
        --------
        >>> import pyarrow as pa
        >>> parents, (words,) = Split().execute_arrow(pa.record_batch({"v": [" a  b", None, "c"]}))
        >>> parents.to_pylist(), words.to_pylist()
        ([0, 0, 2], ['a', 'b', 'c'])
        """
        import pyarrow as pa
        import pyarrow.compute as pc

        column = batch.column(0)
        if pa.types.is_null(column.type) or column.null_count == len(column):
            return pa.array([], pa.int64()), [pa.array([], pa.string())]
        if not (pa.types.is_string(column.type) or pa.types.is_large_string(column.type)):
            value = next(v for v in column.to_pylist() if v is not None)
            raise WrongTypeError(f"Split() splits text, but field {batch.schema.names[0]!r} holds "
                                 f"{type(value).__name__} {value!r}; convert it to str first")
        if self.pattern is not None:
            parents: list[int] = []
            words: list[str] = []
            for i, text in enumerate(column.to_pylist()):
                if text is not None:
                    found = self.words(text)
                    parents.extend([i] * len(found))
                    words.extend(found)
            return pa.array(parents, pa.int64()), [pa.array(words, pa.string())]
        lists = pc.utf8_split_whitespace(column)
        pieces = pc.list_flatten(lists)
        nonempty = pc.not_equal(pc.utf8_length(pieces), 0)
        return pc.list_parent_indices(lists).filter(nonempty), [pieces.filter(nonempty)]

    def spark_columns(self, columns: list[Column]) -> list[Column] | None:
        """``[explode(array_remove(split(first column, regex), ''))]``: 0..n rows per input row."""
        from pyspark.sql import functions as F

        regex = PYTHON_WHITESPACE_REGEX if self.pattern is None else self.pattern
        return [F.explode(F.array_remove(F.split(columns[0], regex), ""))]

    def function_types(self, n_fields: int) -> list[str]:
        """Spark SQL types of the emitted fields: ``["string"]``.

        The field's name comes from the ``each`` call, so ``output_types`` (keyed
        by name) cannot declare it; the planner asks this method instead.

        Raises
        ------
        TopologyError
            ``n_fields`` (the number of output fields declared) is not 1.
        """
        if n_fields != 1:
            raise TopologyError(f"{self!r} emits one field (the word), but {n_fields} output fields "
                                f"were declared; declare one, e.g. ['word']")
        return ["string"]

    def __repr__(self) -> str:
        return "Split()" if self.pattern is None else f"Split({self.pattern!r})"


__all__ = ["PYTHON_WHITESPACE_REGEX", "Split"]
