"""Trident's built-in operations: aggregators, filters, a word splitter and query functions.

Each runs in Python like user code, and most also offer a Spark SQL form
(``spark_*`` methods, see ``trident_spark.operation``) that the planner
compiles to Spark expressions with the same results. Importing this package
does not import pyspark.

Examples
--------
>>> from trident_spark.builtin import Count, FirstN, Max, Negate, FilterNull
>>> Count(), Max("n"), FirstN(3, "score", reverse=True), Negate(FilterNull())
(Count(), Max('n'), FirstN(3, 'score', reverse=True), Negate(FilterNull()))
"""

from trident_spark.builtin.aggregators import Count, Max, Min, Sum
from trident_spark.builtin.filters import Debug, Equals, FilterNull, Negate
from trident_spark.builtin.first_n import FirstN
from trident_spark.builtin.functions import Split
from trident_spark.builtin.queries import MapGet, SnapshotGet, TupleCollectionGet

__all__ = [
    "Count",
    "Debug",
    "Equals",
    "FilterNull",
    "FirstN",
    "MapGet",
    "Max",
    "Min",
    "Negate",
    "SnapshotGet",
    "Split",
    "Sum",
    "TupleCollectionGet",
]
