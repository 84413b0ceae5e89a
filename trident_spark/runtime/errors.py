"""Turn a failed Spark query back into the trident-spark error that caused it."""

from __future__ import annotations

import re

from trident_spark import errors

_OUR_ERROR = re.compile(
    r"(?:trident_spark\.[\w.]+\.)?(?P<cls>BrokerUnavailableError|UnknownTopicError|DataLossError|"
    r"MalformedRecordError|SpoutError|TopologyError|FailedException|OperatorError): "
    r"(?P<msg>.*?)(?:\n|\s+SQLSTATE|$)",
)


_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'")


class StreamFailedError(errors.TridentSparkError):
    """A stream's Spark query failed for a reason that is not one of ours (see the cause)."""


def translate(stream: str, exc: BaseException) -> BaseException:
    """The most specific error for a Spark failure: ours if user code or a spout raised one."""
    from trident_spark.planner.python_stage import OperatorError

    text = str(exc)
    matches = list(_OUR_ERROR.finditer(text))
    if matches:
        found = matches[-1]
        cls: type[Exception] = getattr(errors, found.group("cls"), None) or (
            OperatorError if found.group("cls") == "OperatorError" else StreamFailedError)
        message = found.group("msg").strip()
        if f"stream {stream!r}" not in message:
            message = f"{message} (stream {stream!r})"
        return cls(message)
    missing = _MISSING_MODULE.search(text)
    if missing:
        module = missing.group("module")
        return StreamFailedError(
            f"stream {stream!r} failed: the executors cannot import module {module!r}, which defines an "
            "operation of the topology. Install it where the executors run, ship it with "
            "`spark-submit --py-files`, or start the topology with `trident-spark run FILE` (it ships "
            "the file's code with the operations)."
        )
    cause = _python_cause(text)
    if cause is None:
        cause = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return StreamFailedError(f"stream {stream!r} failed: {cause}")


_PYTHON_ERROR_LINE = re.compile(
    r"^(?:[A-Za-z_]\w*\.)*(?P<cls>[A-Za-z_]\w*(?:Error|Exception)): (?P<msg>.*)$", re.MULTILINE)


def _python_cause(text: str) -> str | None:
    """The user's exception in a Python traceback Spark wrapped (its last ``Class: message`` line)."""
    if "Traceback (most recent call last)" not in text:
        return None
    body = text.split("Traceback (most recent call last)", 1)[1]
    for marker in ("SQLSTATE", "=== Streaming Query ==="):
        body = body.split(marker, 1)[0]
    found = list(_PYTHON_ERROR_LINE.finditer(body))
    if not found:
        return None
    last = found[-1]
    return f"{last.group('cls')}: {last.group('msg').strip()}"
