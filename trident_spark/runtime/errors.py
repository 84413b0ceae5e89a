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
        cls = getattr(errors, found.group("cls"), None) or (
            OperatorError if found.group("cls") == "OperatorError" else StreamFailedError)
        return cls(f"{found.group('msg').strip()} (stream {stream!r})")  # type: ignore[no-any-return]
    missing = _MISSING_MODULE.search(text)
    if missing:
        module = missing.group("module")
        return StreamFailedError(
            f"stream {stream!r} failed: the executors cannot import module {module!r}, which defines an "
            "operation of the topology. Install it where the executors run, ship it with "
            "`spark-submit --py-files`, or start the topology with `trident-spark run FILE` (it ships "
            "the file's code with the operations)."
        )
    first = text.strip().splitlines()[0] if text.strip() else type(exc).__name__
    return StreamFailedError(f"stream {stream!r} failed: {first}")
