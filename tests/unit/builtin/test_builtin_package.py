"""The builtin package: every docstring example runs, nothing imports pyspark, everything pickles."""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys

import pytest
from pyspark import cloudpickle

import trident_spark.builtin as builtin_package
from trident_spark.builtin import (
    Count,
    Debug,
    Equals,
    FilterNull,
    FirstN,
    MapGet,
    Max,
    Min,
    Negate,
    SnapshotGet,
    Split,
    Sum,
    TupleCollectionGet,
)
from trident_spark.builtin.first_n import FirstNAgg, FirstNSortedAgg
from trident_spark.fields import TridentTuple
from trident_spark.operation import TridentCollector

MODULES = ["trident_spark.builtin", *(f"trident_spark.builtin.{m.name}"
                                      for m in pkgutil.iter_modules(builtin_package.__path__))]


@pytest.mark.parametrize("name", MODULES)
def test_docstring_examples(name):
    module = importlib.import_module(name)
    failures, attempted = doctest.testmod(module, optionflags=doctest.ELLIPSIS, report=True)
    assert failures == 0
    assert attempted > 0, f"{name} has no docstring example"


def test_the_public_names():
    assert sorted(builtin_package.__all__) == sorted([
        "Count", "Sum", "Min", "Max", "FirstN", "Debug", "Equals", "FilterNull", "Negate", "Split",
        "MapGet", "SnapshotGet", "TupleCollectionGet"])


def test_builtins_work_where_pyspark_cannot_be_imported():
    code = (
        "import sys; sys.modules['pyspark'] = None\n"
        "from trident_spark.builtin import *\n"
        "from trident_spark.builtin import first_n\n"
        "from trident_spark.fields import TridentTuple\n"
        "from trident_spark.operation import TridentCollector\n"
        "t = TridentTuple(['the cat', 3], ['value', 'n'])\n"
        "out = TridentCollector()\n"
        "Split().execute(t, out)\n"
        "assert out.emitted == [['the'], ['cat']]\n"
        "assert Negate(FilterNull()).isKeep(t) is False and Equals().isKeep(t) is False\n"
        "agg = Max('n'); state = agg.init(0, out); agg.aggregate(state, t, out)\n"
        "assert Count().combine(Count().zero(), Count().init(t)) == 1\n"
        "assert Sum().spark_types(['int']) == ['bigint']\n"
        "assert first_n.FirstN(2, 'n').agg is not None\n"
        "assert not any(m == 'pyspark' or m.startswith('pyspark.') for m in sys.modules\n"
        "               if sys.modules[m] is not None)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def _shortest(word):
    return len(word)


OPERATIONS = [
    (Count(), "Count()"),
    (Sum(), "Sum()"),
    (Max("n"), "Max('n')"),
    (Max(), "Max()"),
    (Min("n", key=_shortest), "Min('n', key=_shortest)"),
    (FirstN(3), "FirstN(3)"),
    (FirstN(3, "score", reverse=True), "FirstN(3, 'score', reverse=True)"),
    (FirstNAgg(2), "FirstNAgg(2)"),
    (FirstNSortedAgg(2, "score"), "FirstNSortedAgg(2, 'score')"),
    (Debug(), "Debug()"),
    (Debug("words"), "Debug('words')"),
    (Equals(), "Equals()"),
    (FilterNull(), "FilterNull()"),
    (Negate(FilterNull()), "Negate(FilterNull())"),
    (Split(), "Split()"),
    (Split(r",\s*"), "Split(',\\\\s*')"),
    (MapGet(), "MapGet()"),
    (SnapshotGet(), "SnapshotGet()"),
    (TupleCollectionGet(), "TupleCollectionGet()"),
]


@pytest.mark.parametrize(("operation", "text"), OPERATIONS, ids=[text for _, text in OPERATIONS])
def test_repr_and_cloudpickle_round_trip(operation, text):
    assert repr(operation) == text
    copy = cloudpickle.loads(cloudpickle.dumps(operation))
    assert type(copy) is type(operation)
    assert repr(copy) == text


def test_operations_with_lambdas_pickle_and_still_work():
    longest = cloudpickle.loads(cloudpickle.dumps(Max("word", key=lambda w: len(w))))
    short = cloudpickle.loads(cloudpickle.dumps(Negate(lambda t: len(t["word"]) > 3)))
    out = TridentCollector()
    state = longest.init(0, out)
    for word in ["ox", "tiger", "cat"]:
        longest.aggregate(state, TridentTuple([word], ["word"]), out)
    longest.complete(state, out)
    assert out.emitted == [["tiger"]]
    assert short.isKeep(TridentTuple(["cat"], ["word"])) is True
    assert short.isKeep(TridentTuple(["tiger"], ["word"])) is False
