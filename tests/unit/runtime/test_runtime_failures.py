"""A failed Spark query turned back into the trident-spark error that caused it."""

from __future__ import annotations

import pytest

from trident_spark import errors
from trident_spark.errors import OperatorError
from trident_spark.runtime.failures import StreamFailedError, translate
from trident_spark.task_errors import mark

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
    text = ("PythonException: \ntrident_spark.executor.python_stage.OperatorError: "
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
    from trident_spark.runtime.failures import StreamFailedError, translate

    text = ("[STREAM_FAILED] ... Traceback ...\nModuleNotFoundError: No module named 'my_ops'\n"
            "\tat org.apache.spark...")
    error = translate("words", RuntimeError(text))
    assert isinstance(error, StreamFailedError)
    assert "the executors cannot import module 'my_ops'" in str(error)
    assert "--py-files" in str(error) and "trident-spark run FILE" in str(error)


# -- the state layer's errors, raised on an executor --------------------------------------------

AHEAD_MESSAGE = (
    "state is ahead of the stream: sqlite:///tmp/wc.db?table=counts key ['cat', 1] stored txid 7 > batch "
    "txid 2; the checkpoint was reset or two queries write this state; the update was refused rather than "
    "overwrite newer values. To adopt the stored values, restart with a txid_offset that puts this "
    "stream's txids after every txid in the state (here at least 6; the largest stored txid + 1 always "
    "works) and keep that setting from then on; to reset, delete the state (or point the stream at a new "
    "one) and restart; never let two queries write one state")

# The note the task adds to the error it raises (trident_spark.task_errors): the class and attributes.
AHEAD_NOTE = mark(errors.StateAheadError("sqlite:///tmp/wc.db?table=counts", ["cat", 1], stored_txid=7,
                                         batch_txid=2)).__notes__[0]

# str() of the PythonException a job raises when a mapInArrow task raised StateAheadError (Spark 4.3).
PYTHON_WORKER_TEXT = f"""An exception was thrown from the Python worker:
Traceback (most recent call last):
  File "/work/main/trident_spark/executor/state_stage.py", line 88, in _guarded
    raise StateAheadError("sqlite:///tmp/wc.db?table=counts", ["cat", 1], stored_txid=7, batch_txid=2)
trident_spark.state.errors.StateAheadError: {AHEAD_MESSAGE}
{AHEAD_NOTE}"""

# str() of the StreamingQueryException when that job ran inside foreachBatch (Spark 4.3, trimmed).
STREAMING_QUERY_TEXT = f"""[STREAM_FAILED] Query [id = e90b57e5-cd03-4279-8f84-8d6180fbcede, runId = \
01b7dcb0-73c8-4967-b6cc-40217cbbe39d] terminated with exception: [FOREACH_BATCH_USER_FUNCTION_ERROR] An \
error occurred in the user provided function in foreach batch sink. Reason: An exception was raised by the \
Python Proxy. Return Message: Traceback (most recent call last):
  File "/venv/lib/python3.11/site-packages/py4j/clientserver.py", line 644, in _call_proxy
    return_value = getattr(self.pool[obj_id], method)(*params)
                   ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
  File "/venv/lib/python3.11/site-packages/pyspark/sql/utils.py", line 163, in call
    self.func(DataFrame(jdf, wrapped_session_jdf), batch_id)
  File "/venv/lib/python3.11/site-packages/pyspark/errors/exceptions/captured.py", line 262, in deco
    raise converted from None
  File "/work/main/trident_spark/executor/state_stage.py", line 88, in _guarded
    raise StateAheadError("sqlite:///tmp/wc.db?table=counts", ["cat", 1], stored_txid=7, batch_txid=2)
    ^^^^^^^^^^^^^^^^^
pyspark.errors.exceptions.captured.PythonException: {PYTHON_WORKER_TEXT}
 SQLSTATE: 39000 SQLSTATE: XXKST
=== Streaming Query ===
Identifier: [id = e90b57e5-cd03-4279-8f84-8d6180fbcede, runId = 01b7dcb0-73c8-4967-b6cc-40217cbbe39d]
Current Committed Offsets: {{RateStreamV2[rowsPerSecond=5, rampUpTimeSeconds=0, numPartitions=default: 0}}

Current State: ACTIVE
Thread State: RUNNABLE
"""


@pytest.mark.parametrize("text", [PYTHON_WORKER_TEXT, STREAMING_QUERY_TEXT], ids=["job", "streaming-query"])
def test_state_ahead_comes_back_whole_with_its_attributes(text):
    error = translate("words", RuntimeError(text))
    assert type(error) is errors.StateAheadError
    assert str(error) == AHEAD_MESSAGE + " (stream 'words')"
    assert (error.address, error.key, error.stored_txid, error.batch_txid, error.txid_offset) == (
        "sqlite:///tmp/wc.db?table=counts", ["cat", 1], 7, 2, 0)


def executor_text(error: Exception) -> str:
    """How Spark shows an error an executor raised: the traceback's last line and the task's note
    (trident_spark.task_errors), then Spark's."""
    cls = type(error)
    note = mark(error).__notes__[-1]
    return ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
            '  File "/work/main/trident_spark/executor/state_stage.py", line 88, in _guarded\n'
            "    raise error\n"
            f"{cls.__module__}.{cls.__name__}: {error}\n"
            f"{note}\n"
            "\n\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException("
            "PythonRunner.scala:581)\n")


STATE_ERRORS = [
    (errors.StateAheadError("redis://127.0.0.1:6379/0?prefix=wc", ["us", 2024, "a] stored txid 1"],
                            stored_txid=12, batch_txid=9, txid_offset=5),
     {"address": "redis://127.0.0.1:6379/0?prefix=wc", "key": ["us", 2024, "a] stored txid 1"],
      "stored_txid": 12, "batch_txid": 9, "txid_offset": 5}),
    (errors.StateAheadError("memory://wc", [], stored_txid=3, batch_txid=1),
     {"address": "memory://wc", "key": [], "stored_txid": 3, "batch_txid": 1, "txid_offset": 0}),
    (errors.StateTypeMismatchError("memory://wc", ["cat"], expected="opaque",
                                   found="a transactional value [txid, val]"),
     {"address": "memory://wc", "key": ["cat"], "expected": "opaque",
      "found": "a transactional value [txid, val]"}),
    (errors.StateTypeMismatchError("http://127.0.0.1:9200/wc", None, expected="transactional", found="3"),
     {"address": "http://127.0.0.1:9200/wc", "key": None, "expected": "transactional", "found": "3"}),
    (errors.UnreadableValueError("memory://wc", ["cat", None], "invalid JSON: b'\\xff'"),
     {"address": "memory://wc", "key": ["cat", None], "reason": "invalid JSON: b'\\xff'"}),
    (errors.UnreadableValueError("memory://wc", None, "not a list"),
     {"address": "memory://wc", "key": None, "reason": "not a list"}),
    (errors.StateUnavailableError(
        "redis://127.0.0.1:1/0?prefix=wc",
        "ConnectionError: Error 111 connecting to 127.0.0.1:1. Connection refused. (MGET of 1 keys); "
        "check that Redis runs there and is reachable from this machine"),
     {"address": "redis://127.0.0.1:1/0?prefix=wc",
      "reason": "ConnectionError: Error 111 connecting to 127.0.0.1:1. Connection refused. (MGET of 1 "
                "keys); check that Redis runs there and is reachable from this machine"}),
    (errors.StateConflictError("sqlite:///tmp/wc.db?table=counts", ["cat"], attempts=10),
     {"address": "sqlite:///tmp/wc.db?table=counts", "key": ["cat"], "attempts": 10}),
    (errors.StateConfigError("cache_size must be an int >= 0, got -1"), {}),
    (errors.StateError("cannot use {'a': 1} (dict) in a state key: group values must be str, int, "
                       "float, bool, None, Decimal, bytes, date or datetime"), {}),
]


@pytest.mark.parametrize(("original", "attributes"), STATE_ERRORS,
                         ids=[f"{type(e).__name__}-{i}" for i, (e, _) in enumerate(STATE_ERRORS)])
def test_each_state_error_comes_back_as_itself(original, attributes):
    error = translate("s", RuntimeError(executor_text(original)))
    assert type(error) is type(original)
    assert str(error) == f"{original} (stream 's')"
    assert {name: getattr(error, name) for name in attributes} == attributes


def test_state_errors_are_importable_from_trident_spark_errors():
    from trident_spark import state

    for name in ("StateError", "StateAheadError", "StateTypeMismatchError", "StateUnavailableError",
                 "UnreadableValueError", "StateConflictError", "StateConfigError"):
        assert getattr(errors, name) is getattr(state, name)
        assert name in errors.__all__


def test_a_state_error_whose_message_format_changed_keeps_the_message_and_none_attributes():
    text = "trident_spark.state.errors.StateAheadError: the state moved on (txid 7)\n"
    error = translate("s", RuntimeError(text))
    assert type(error) is errors.StateAheadError
    assert str(error) == "the state moved on (txid 7) (stream 's')"
    assert (error.address, error.key, error.stored_txid, error.batch_txid) == (None, None, None, None)


def test_a_multi_line_message_is_kept_whole():
    text = ("Traceback (most recent call last):\n  File \"app.py\", line 3, in execute\n"
            "trident_spark.errors.FailedException: the store answered:\n503 Service Unavailable\n"
            "retry later\n\n\tat org.apache.spark.api.python.BasePythonRunner")
    error = translate("s", RuntimeError(text))
    assert type(error) is errors.FailedException
    assert str(error) == "the store answered:\n503 Service Unavailable\nretry later (stream 's')"


def test_a_message_ends_where_the_next_exception_or_spark_text_starts():
    chained = ("trident_spark.state.errors.StateError: first\n"
               "pyspark.errors.exceptions.captured.PythonException: wrapped\n")
    assert str(translate("s", RuntimeError(chained))) == "first (stream 's')"
    described = ("trident_spark.state.errors.StateError: gone\n=== Streaming Query ===\n"
                 "Identifier: [id = 1]\n")
    assert str(translate("s", RuntimeError(described))) == "gone (stream 's')"
    more = "trident_spark.state.errors.StateError: gone\nmore text  SQLSTATE: 39000\nIdentifier: x\n"
    assert str(translate("s", RuntimeError(more))) == "gone\nmore text (stream 's')"


def test_a_class_that_only_ends_like_ours_is_not_ours():
    error = translate("s", RuntimeError("Traceback (most recent call last):\n"
                                        "mylib.errors.LegacyStateError: lost\n"))
    assert type(error) is StreamFailedError
    assert str(error) == "stream 's' failed: LegacyStateError: lost"
