"""Errors as data on real Spark: every trident-spark error raised in a Spark task comes back to
the driver as the same class with the same attributes (``task_errors``, ``runtime.failures``).

A local SparkSession (the session fixture) runs one small job per error class; the task raises
the error through the task boundary every stage uses (``task_errors.reporting``), and the
driver rebuilds it from the text Spark gives it. A topology that persists a lock into a SQLite
state surfaces the ``UnstorableValueError`` the state guide promises.
"""

from __future__ import annotations

import importlib
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from pyspark import cloudpickle

from tests.error_instances import built
from trident_spark import TridentTopology
from trident_spark.errors import TridentSparkError, UnstorableValueError
from trident_spark.operation import StateUpdater
from trident_spark.runtime.failures import translate
from trident_spark.spout import FeederBatchSpout
from trident_spark.state import SqliteState
from trident_spark.task_errors import ERROR_MODULES, reporting

pytestmark = pytest.mark.integration

# pytest imports this file from a path the executors do not have: ship its functions by value.
cloudpickle.register_pickle_by_value(sys.modules[__name__])


def error_classes() -> list[type[BaseException]]:
    """Every TridentSparkError subclass defined in trident_spark, after importing its error modules."""
    for module in ERROR_MODULES:
        importlib.import_module(module)
    found: dict[str, type[BaseException]] = {}
    pending: list[type[BaseException]] = [TridentSparkError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("trident_spark.") and "<locals>" not in cls.__qualname__:
            found[f"{cls.__module__}.{cls.__qualname__}"] = cls
        pending.extend(cls.__subclasses__())
    return [found[name] for name in sorted(found)]


def raising(error: BaseException) -> Any:
    """A ``mapInArrow`` function that raises ``error`` in its task, through the task boundary."""
    def task(batches: Any) -> Any:
        for _ in batches:
            raise error
        yield from ()

    return reporting(task)


def attributes(error: BaseException) -> dict[str, Any]:
    return {name: value for name, value in vars(error).items() if not name.startswith("__")}


def test_the_walk_finds_the_errors_the_regexes_missed() -> None:
    names = {cls.__name__ for cls in error_classes()}
    assert {"UnstorableValueError", "SchemaRegistryError", "ScanUnsupportedError", "InvalidArgumentError",
            "StateAheadError", "OperatorError", "StreamFailedError", "InstanceHostError"} <= names
    assert len(names) >= 40


def test_every_error_raised_in_a_spark_task_comes_back_as_itself(spark: Any) -> None:
    frame = spark.range(1, numPartitions=1)
    classes = error_classes()

    def mismatch(cls: type[BaseException]) -> tuple[str, Any, Any] | None:
        original = built(cls)
        try:
            frame.mapInArrow(raising(original), "id long").collect()
        except Exception as exc:  # the job's failure, as Spark gives it to the driver
            error = translate("s", exc)
        else:
            return (cls.__qualname__, "no error", None)
        got = (type(error), str(error), attributes(error))
        wanted = (cls, f"{original} (stream 's')", attributes(original))
        return None if got == wanted else (cls.__qualname__, got, wanted)

    # one small job per class, four at a time (Spark runs a session's jobs side by side)
    with ThreadPoolExecutor(max_workers=4) as jobs:
        mismatched = [m for m in jobs.map(mismatch, classes) if m is not None]
    assert mismatched == []
    assert len(classes) >= 40


class PutLocks(StateUpdater):
    """Stores a dict holding a lock under each word: not JSON, not picklable."""

    def updateState(self, state: Any, tuples: list[Any], collector: Any) -> None:
        words = sorted({t["word"] for t in tuples})
        state.multiPut([[w] for w in words], [{"guard": threading.Lock()} for _ in words])


def test_a_lock_persisted_into_state_surfaces_as_unstorable_value_error(spark: Any, tmp_path: Path) -> None:
    spout = FeederBatchSpout(["word"])
    spout.feed([["cat"], ["dog"]])
    topology = TridentTopology()
    topology.newStream("locks", spout).partitionPersist(
        SqliteState.nonTransactional(path=str(tmp_path / "locks.db")), ["word"], PutLocks(), [])
    handle = topology.run(checkpoint_location=tmp_path / "checkpoint", spark=spark, max_batch_retries=0)
    try:
        with pytest.raises(UnstorableValueError) as caught:
            handle.processAllAvailable()
    finally:
        handle.stop()
    error = caught.value
    assert type(error) is UnstorableValueError
    assert error.address == f"sqlite://{tmp_path / 'locks.db'}?table=trident_state"
    assert error.value_type == "_thread.lock"
    assert error.key in (["cat"], ["dog"])
    assert error.reason == "TypeError: cannot pickle '_thread.lock' object"
    assert str(error).endswith("(stream 'locks')")
