"""A failed Spark query turned back into the trident-spark error that caused it."""

from __future__ import annotations

import pytest

from trident_spark import errors
from trident_spark.planner.python_stage import OperatorError
from trident_spark.runtime.errors import StreamFailedError, translate

PY4J_TEXT = """[STREAM_FAILED] Query [id = 5b0c6d39, runId = 0a8e1f4c] terminated with exception: \
Job aborted due to stage failure: Task 0 in stage 3.0 failed 1 times, most recent failure: Lost task 0.0 \
in stage 3.0 (TID 7) (10.0.0.5 executor driver): org.apache.spark.api.python.PythonException: \
Traceback (most recent call last):
  File "/work/main/trident_spark/spout/kafka_read.py", line 66, in _read
    raise BrokerUnavailableError(
trident_spark.errors.BrokerUnavailableError: Kafka at 127.0.0.1:1 did not answer for 20 s. \
Check that the broker is up.

\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(PythonRunner.scala:581)
\tat org.apache.spark.sql.execution.python.PythonArrowOutput$$anon$1.read(PythonArrowOutput.scala:118)
"""


def test_broker_unavailable_is_recovered_with_its_message_and_stream():
    error = translate("words", Exception(PY4J_TEXT))
    assert type(error) is errors.BrokerUnavailableError
    assert str(error) == (
        "Kafka at 127.0.0.1:1 did not answer for 20 s. Check that the broker is up. (stream 'words')")


@pytest.mark.parametrize(
    ("name", "cls"),
    [("UnknownTopicError", errors.UnknownTopicError), ("DataLossError", errors.DataLossError),
     ("MalformedRecordError", errors.MalformedRecordError), ("SpoutError", errors.SpoutError),
     ("TopologyError", errors.TopologyError), ("FailedException", errors.FailedException)],
)
def test_each_of_our_errors(name, cls):
    error = translate("s", RuntimeError(f"Traceback ...\ntrident_spark.errors.{name}: what happened\n\tat x"))
    assert type(error) is cls
    assert str(error) == "what happened (stream 's')"


def test_operator_error_from_the_planner():
    text = ("PythonException: \ntrident_spark.planner.python_stage.OperatorError: "
            "each(Split) failed on tuple {'value': None}: AttributeError: 'NoneType' object has no "
            "attribute 'split'\n")
    error = translate("s", RuntimeError(text))
    assert type(error) is OperatorError
    assert str(error) == ("each(Split) failed on tuple {'value': None}: AttributeError: 'NoneType' object "
                          "has no attribute 'split' (stream 's')")


def test_message_ends_before_sqlstate():
    text = "trident_spark.errors.DataLossError: offsets [0, 5) of t[0] are gone  SQLSTATE: 39000"
    assert str(translate("s", RuntimeError(text))) == "offsets [0, 5) of t[0] are gone (stream 's')"


def test_unqualified_class_name_is_recognised():
    error = translate("s", RuntimeError("MalformedRecordError: record t[0]@3 cannot be read"))
    assert type(error) is errors.MalformedRecordError


def test_the_last_of_several_matches_wins():
    text = ("trident_spark.errors.SpoutError: first\n"
            "trident_spark.errors.DataLossError: second\n")
    error = translate("s", RuntimeError(text))
    assert type(error) is errors.DataLossError
    assert str(error) == "second (stream 's')"


def test_unknown_failure_is_a_stream_failed_error_with_the_first_line():
    error = translate("words", RuntimeError("java.lang.OutOfMemoryError: Java heap space\n\tat foo"))
    assert type(error) is StreamFailedError
    assert isinstance(error, errors.TridentSparkError)
    assert str(error) == "stream 'words' failed: java.lang.OutOfMemoryError: Java heap space"


def test_failure_without_text_names_the_exception_type():
    error = translate("words", TimeoutError())
    assert str(error) == "stream 'words' failed: TimeoutError"


def test_a_module_the_executors_cannot_import_is_explained():
    from trident_spark.runtime.errors import StreamFailedError, translate

    text = ("[STREAM_FAILED] ... Traceback ...\nModuleNotFoundError: No module named 'my_ops'\n"
            "\tat org.apache.spark...")
    error = translate("words", RuntimeError(text))
    assert isinstance(error, StreamFailedError)
    assert "the executors cannot import module 'my_ops'" in str(error)
    assert "--py-files" in str(error) and "trident-spark run FILE" in str(error)
