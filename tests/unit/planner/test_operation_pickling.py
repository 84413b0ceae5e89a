"""An operation that cannot be pickled to the executors: the error names the operator, the attribute
that holds it back, and says to open such things in prepare() (on Spark: tests/integration/runtime)."""

from __future__ import annotations

import doctest
import pickle
import socket
import sys
import threading

import pytest
from pyspark import cloudpickle

import trident_spark.planner.operation_pickling as shipping
from trident_spark.errors import TopologyError
from trident_spark.operation import BaseFunction, CallableFilter, CallableMapFunction
from trident_spark.planner.operation_pickling import find_unpicklable, shipped, unpicklable_error

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # classes here pickle by value, as on Spark

PREPARE = ("Open connections, clients, locks and files in prepare(conf, context), which runs on the executor "
           "once per task, and close them in cleanup(); not in __init__, which runs on the driver")
INSIDE = ("Create it inside the function, where it runs on the executor, or write a BaseFunction that opens "
          "it in prepare(conf, context)")
LOCK_REASON = "TypeError: cannot pickle '_thread.lock' object"


class Locked(BaseFunction):
    def __init__(self) -> None:
        self.name = "fine"
        self.lock = threading.Lock()

    def execute(self, tuple, collector):
        collector.emit([tuple[0]])


class Client:
    def __init__(self) -> None:
        self.settings = {"peer": socket.socket()}


class Enrich(BaseFunction):
    def __init__(self) -> None:
        self.client = Client()

    def execute(self, tuple, collector):
        collector.emit([tuple[0]])


class Fine(BaseFunction):
    def execute(self, tuple, collector):
        collector.emit([tuple[0]])


LOCK = threading.Lock()


def guarded(t):
    with LOCK:
        return t[0]


def make_lambda():
    lock = threading.Lock()
    return lambda t: (lock, t)


def spark_pickles(*operations):
    """What Spark's mapInArrow does on the driver: cloudpickle the stage, wrapping errors."""
    def build():
        try:
            return cloudpickle.dumps(list(operations))
        except Exception as exc:
            raise pickle.PicklingError(f"Could not serialize object: {type(exc).__name__}: {exc}") from exc
    return build


def test_a_lock_made_in_init_names_the_operator_the_attribute_and_prepare():
    with pytest.raises(TopologyError) as info:
        shipped(spark_pickles(Fine(), Locked()), [("each(Fine)", Fine()), ("each(Locked)", Locked())])
    assert str(info.value) == (
        "each(Locked): the operation cannot be sent to Spark's executors: its attribute self.lock holds a "
        f"_thread.lock, which cannot be pickled ({LOCK_REASON}). {PREPARE}")
    socket_owner = Enrich()
    try:
        error = unpicklable_error([("each(Enrich)", socket_owner)])
        assert str(error) == (
            "each(Enrich): the operation cannot be sent to Spark's executors: its attribute "
            "self.client.settings['peer'] holds a socket.socket, which cannot be pickled (TypeError: cannot "
            f"pickle 'socket' object). {PREPARE}")
    finally:
        socket_owner.client.settings["peer"].close()


def test_plain_callables_name_the_variable_they_use():
    assert str(unpicklable_error([("filter(guarded)", CallableFilter(guarded))])) == (
        "filter(guarded): the operation cannot be sent to Spark's executors: guarded() uses LOCK: a "
        f"_thread.lock, which cannot be pickled ({LOCK_REASON}). {INSIDE}")
    message = str(unpicklable_error([("map(<lambda>)", CallableMapFunction(make_lambda()))]))
    assert message.startswith(
        "map(<lambda>): the operation cannot be sent to Spark's executors: make_lambda.<locals>.<lambda>() "
        "uses lock: a _thread.lock, which cannot be pickled")


def test_what_pickles_builds_as_usual_and_other_errors_pass_through():
    assert shipped(lambda: 42, [("each(Locked)", Locked())]) == 42
    with pytest.raises(TypeError, match="not about pickling"):
        shipped(lambda: (_ for _ in ()).throw(TypeError("not about pickling")), [("each(Fine)", Fine())])


def test_find_unpicklable_walks_attributes_and_class_attributes():
    class Shared(BaseFunction):
        lock = threading.Lock()

    path, value, reason = find_unpicklable(Shared())
    assert (path, type(value).__name__, reason) == ("Shared.lock", "lock", LOCK_REASON)
    assert find_unpicklable(Fine()) is None


def test_docstring_examples():
    failures, attempted = doctest.testmod(shipping, optionflags=doctest.ELLIPSIS)
    assert failures == 0 and attempted > 0
