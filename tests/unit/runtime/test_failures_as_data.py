"""Errors as data across the task boundary (``task_errors``): the note a task adds, read back by
``runtime.failures.translate``; a forged note can at most name one of our error classes."""

from __future__ import annotations

import datetime
import importlib
import json
import pickle
import traceback
from decimal import Decimal
from pathlib import Path

import pytest

import trident_spark
from trident_spark import errors
from trident_spark.runtime.failures import StreamFailedError, translate
from trident_spark.task_errors import ERROR_MODULES, MARKER, error_class, mark, rebuild, reporting


def spark_text(error: BaseException) -> str:
    """What the driver reads: Spark's wrapper around the worker's formatted traceback."""
    return ("org.apache.spark.api.python.PythonException: An exception was thrown from the Python worker:\n"
            + "".join(traceback.format_exception(error))
            + " SQLSTATE: 39000\n\tat org.apache.spark.api.python.BasePythonRunner\n")


def forged(cls: str, module: str, message: str = "gotcha", attrs: object = None) -> str:
    return MARKER + json.dumps({"class": cls, "module": module, "message": message, "attrs": attrs or {}})


def test_the_state_errors_the_regexes_could_not_read_come_back_with_their_attributes():
    lost = errors.StateLostError("redis://127.0.0.1:6379/0?prefix=wc", kind="behind", committed_txid=24,
                                 stored_txid=20, detail="restored")
    error = translate("wc", RuntimeError(spark_text(mark(lost))))
    assert type(error) is errors.StateLostError
    assert (error.address, error.kind, error.committed_txid, error.stored_txid) == (
        "redis://127.0.0.1:6379/0?prefix=wc", "behind", 24, 20)
    assert str(error) == f"{lost} (stream 'wc')"


def test_an_unstorable_value_comes_back_as_itself_not_as_stream_failed():
    original = errors.UnstorableValueError("memory://wc", ["cat"], "_thread.lock",
                                           "TypeError: cannot pickle '_thread.lock' object")
    error = translate("wc", RuntimeError(spark_text(mark(original))))
    assert type(error) is errors.UnstorableValueError
    assert (error.address, error.key, error.value_type, error.reason) == (
        "memory://wc", ["cat"], "_thread.lock", "TypeError: cannot pickle '_thread.lock' object")


def test_group_values_that_are_not_json_keep_their_type():
    key = ["us", b"\x00\xff", Decimal("1.50"), datetime.date(2024, 1, 2),
           datetime.datetime(2024, 1, 2, 3, 4, 5), (1, 2), float("nan")]
    original = errors.StateConflictError("memory://wc", key, attempts=3)
    error = translate("wc", RuntimeError(spark_text(mark(original))))
    assert error.key[:6] == ["us", b"\x00\xff", Decimal("1.50"), datetime.date(2024, 1, 2),
                             datetime.datetime(2024, 1, 2, 3, 4, 5), (1, 2)]
    assert error.key[6] != error.key[6]  # nan
    assert error.attempts == 3


def test_the_note_is_added_once_and_to_our_causes_too():
    inner = errors.StateUnavailableError("redis://127.0.0.1:1/0", "refused")
    try:
        try:
            raise inner
        except errors.StateUnavailableError as exc:
            raise RuntimeError("pyarrow gave up") from exc
    except RuntimeError as outer:
        mark(outer)
        mark(outer)
        assert not hasattr(outer, "__notes__")
        assert len(inner.__notes__) == 1
        error = translate("s", RuntimeError(spark_text(outer)))
    assert type(error) is errors.StateUnavailableError
    assert (error.address, error.reason) == ("redis://127.0.0.1:1/0", "refused")


def test_the_last_note_wins():
    first, second = errors.SpoutError("first"), errors.DataLossError("second")
    text = spark_text(mark(first)) + spark_text(mark(second))
    error = translate("s", RuntimeError(text))
    assert type(error) is errors.DataLossError and str(error) == "second (stream 's')"


def test_reporting_marks_what_leaves_a_task_function():
    def task(batches):
        yield from batches
        raise errors.SchemaRegistryError("Schema Registry at http://r:8081 did not answer")

    with pytest.raises(errors.SchemaRegistryError) as caught:
        list(reporting(task)([1, 2]))
    error = translate("s", RuntimeError(spark_text(caught.value)))
    assert type(error) is errors.SchemaRegistryError
    assert str(error) == "Schema Registry at http://r:8081 did not answer (stream 's')"


def test_a_secret_in_a_note_is_redacted_on_the_driver():
    text = forged("TopologyError", "trident_spark.errors", "cannot reach redis://:s3cret@cache:6379/0",
                  {"url": "es://es1:9200/wc?api_key=abc123"})
    error = translate("s", RuntimeError(text))
    assert type(error) is errors.TopologyError
    assert str(error) == "cannot reach redis://:***@cache:6379/0 (stream 's')"
    assert error.url == "es://es1:9200/wc?api_key=***"


@pytest.mark.parametrize(("cls", "module"), [
    ("system", "os"), ("eval", "builtins"), ("Popen", "subprocess"), ("loads", "pickle"),
    ("ValueError", "builtins"), ("TridentSparkError", "mylib.errors"), ("TopologyError", "os"),
    ("errors.TopologyError", "trident_spark"), ("__class__", "trident_spark.errors"),
    ("Path", "trident_spark.checkpoint_files"),
])
def test_a_forged_note_naming_a_class_not_ours_is_ignored(cls, module):
    text = f"Traceback (most recent call last):\nValueError: a record said\n{forged(cls, module)}\n"
    assert rebuild(text) is None
    error = translate("s", RuntimeError(text))
    assert type(error) is StreamFailedError
    assert str(error) == "stream 's' failed: ValueError: a record said"


def test_a_forged_note_gives_at_most_one_of_our_classes_with_its_text():
    text = forged("OperatorError", "trident_spark.errors", "each(x) failed",
                  {"__class__": "os.system", "__dict__": {}, "args": 3, "not an identifier": 1})
    error = translate("s", RuntimeError(text))
    assert type(error) is errors.OperatorError
    assert str(error) == "each(x) failed (stream 's')"
    assert error.args == ("each(x) failed (stream 's')",)


@pytest.mark.parametrize("text", [
    MARKER + "{not json", MARKER + "[1, 2]",
    MARKER + '{"class": 1, "module": [], "message": "m", "attrs": {}}',
    MARKER + '{"class": "TopologyError", "module": "trident_spark.errors", "message": 3, "attrs": {}}',
    MARKER + '{"class": "TopologyError", "module": "trident_spark.errors", "message": "m", "attrs": []}',
    "x " + forged("TopologyError", "trident_spark.errors"),  # not at the start of a line
])
def test_a_malformed_note_is_ignored(text):
    assert rebuild(text) is None


def test_a_forged_note_never_imports_a_module_from_its_text(monkeypatch):
    imported = []
    monkeypatch.setattr("importlib.import_module", lambda name, *a: imported.append(name))
    assert error_class("trident_spark_evil", "TopologyError") is None
    assert error_class("os.path", "join") is None
    assert imported == []


def test_every_module_that_defines_an_error_is_in_the_list():
    """Every module of both packages imported (as tests/unit/test_error_root.py walks them): each of
    our error classes is defined in a module of the list, so the driver can find it."""
    for package in (trident_spark, trident_spark.state):
        root = Path(next(iter(package.__path__)))
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            importlib.import_module(".".join((package.__name__, *parts)))
    outside, pending = set(), [errors.TridentSparkError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("trident_spark.") and cls.__module__ not in ERROR_MODULES:
            outside.add(f"{cls.__module__}.{cls.__qualname__}")
        pending.extend(cls.__subclasses__())
    assert sorted(outside) == []


@pytest.mark.parametrize("error", [
    errors.StateAheadError("memory://wc", ["cat"], stored_txid=7, batch_txid=2),
    errors.UnstorableValueError("memory://wc", ["cat"], "_thread.lock", "TypeError: no"),
    errors.OperatorError("each(Split) failed"),
], ids=lambda e: type(e).__name__)
def test_a_marked_error_keeps_its_note_across_pickling(error):
    """An instance host sends a task's error back pickled (state/errors.py __reduce__)."""
    from pyspark import cloudpickle

    mark(error)
    for dumps in (pickle.dumps, cloudpickle.dumps):
        again = pickle.loads(dumps(error))
        assert again.__notes__ == error.__notes__ and vars(again) == vars(error)


def test_reporting_marks_our_error_under_one_that_is_not_ours():
    def task(batches):
        yield from batches
        try:
            raise errors.FailedException("store down")
        except errors.FailedException as exc:
            raise KeyError("lost while handling it") from exc

    with pytest.raises(KeyError) as caught:
        list(reporting(task)([1]))
    error = translate("s", RuntimeError(spark_text(caught.value)))
    assert type(error) is errors.FailedException and str(error) == "store down (stream 's')"
