"""Turn a failed Spark query back into the trident-spark error that caused it.

An error raised on an executor reaches the driver as text: the Python
traceback inside Spark's exception. :func:`translate` finds our error's
``Class: message`` line in it and raises that class again, with the message
and the stream's name. The state layer's errors come back with their
attributes too (``StateAheadError.stored_txid``, ...), read from the message.
"""

from __future__ import annotations

import ast
import re
from typing import Any

from trident_spark import errors
from trident_spark.state.redaction import redact_text

_STATE_ERRORS = ("StateAheadError|StateLostError|StateAdoptionError|StateTypeMismatchError|"
                 "StateUnavailableError|UnreadableValueError|StateConflictError|StateConfigError|StateError")
_OUR_ERROR = re.compile(
    r"(?:trident_spark\.[\w.]+\.)?\b(?P<cls>BrokerUnavailableError|UnknownTopicError|DataLossError|"
    r"MalformedRecordError|OffsetOutOfRangeError|SpoutError|TopologyError|FailedException|OperatorError|"
    r"MissingExtraError|"
    + _STATE_ERRORS + r"): "
    r"(?P<msg>[^\n]*?)(?P<end>\s+SQLSTATE|\n|$)",
)
# A line after an error's first line that is not more of its message: blank, indented (a
# traceback or JVM frame, " SQLSTATE"), the start of another traceback or exception, Spark's
# query description.
_NOT_MESSAGE = re.compile(
    r"$|\s|Traceback \(most recent call last\)|During handling of the above|The above exception|"
    r"===|JVM stacktrace|Caused by|Driver stacktrace|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\b")


_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'")


class StreamFailedError(errors.TridentSparkError):
    """A stream's Spark query failed for a reason that is not one of ours (see the cause)."""


def translate(stream: str, exc: BaseException) -> BaseException:
    """The most specific error for a Spark failure: ours if user code or a spout raised one."""
    from trident_spark.errors import OperatorError

    text = str(exc)
    matches = list(_OUR_ERROR.finditer(text))
    if matches:
        found = matches[-1]
        cls: type[Exception] = getattr(errors, found.group("cls"), None) or (
            OperatorError if found.group("cls") == "OperatorError" else StreamFailedError)
        original = redact_text(_message(text, found))  # executors' text: no secret reaches the driver's error
        message = original
        if f"stream {stream!r}" not in message:
            message = f"{message} (stream {stream!r})"
        return _rebuild(cls, message, original)
    missing = _MISSING_MODULE.search(text)
    if missing:
        module = missing.group("module")
        return StreamFailedError(
            f"stream {stream!r} failed: the executors cannot import module {module!r}, which defines an "
            "operation of the topology. Install it where the executors run, ship it with "
            "`topology.run(..., py_files=[...])` or `spark-submit --py-files`, or start the topology "
            "with `trident-spark run FILE` (it ships the file's code with the operations)."
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


def _message(text: str, found: re.Match[str]) -> str:
    """An error's whole message: its first line and the lines that continue it (a multi-line message)."""
    lines = [found.group("msg")]
    if found.group("end") == "\n":
        for line in text[found.end():].split("\n"):
            if _NOT_MESSAGE.match(line) or _OUR_ERROR.search(line):
                break
            before_sqlstate = re.split(r"\s+SQLSTATE", line, maxsplit=1)
            lines.append(before_sqlstate[0])
            if len(before_sqlstate) > 1:
                break
    return "\n".join(lines).strip()


# The messages of the state errors whose classes take structured arguments (state/errors.py),
# and the attributes each names.
_STATE_FIELDS: dict[type[Exception], re.Pattern[str]] = {
    errors.StateAheadError: re.compile(
        r"state is ahead of the stream: (?P<address>.+?) key (?P<key>\[.*?\]) stored txid "
        r"(?P<stored_txid>-?\d+) [>=] batch txid (?P<batch_txid>-?\d+)"
        r"(?: \(batch id -?\d+ \+ txid_offset (?P<txid_offset>\d+)\))?"
        r"(?:, a batch this checkpoint has not written before)?;", re.DOTALL),
    errors.StateTypeMismatchError: re.compile(
        r"(?P<address>.+?)(?: key (?P<key>\[.*?\]))?: expected an? (?P<expected>\S+) value, "
        r"found (?P<found>.*?); the state was written as another kind", re.DOTALL),
    errors.UnreadableValueError: re.compile(
        r"cannot read the stored value of (?:key (?P<key>\[.*?\])|a key) in (?P<address>.+?): "
        r"(?P<reason>.*?); the value was written by another program", re.DOTALL),
    errors.StateUnavailableError: re.compile(
        r"cannot use the state store at (?P<address>.+?): (?P<reason>.*)", re.DOTALL),
    errors.StateLostError: re.compile(
        r"state lost data: (?P<address>.+?) (?:holds no commit record|holds the values of txid "
        r"(?P<stored_txid>-?\d+)|holds another store's values \(txid (?:None|-?\d+), another generation\)), "
        r"but this checkpoint committed batches up to txid (?P<committed_txid>-?\d+) to it", re.DOTALL),
    errors.StateConflictError: re.compile(
        r"(?P<address>.+?) key (?P<key>\[.*?\]): another writer changed the key during each of "
        r"(?P<attempts>\d+) attempts", re.DOTALL),
}
_INT_FIELDS = ("stored_txid", "batch_txid", "txid_offset", "attempts", "committed_txid")


def _rebuild(cls: type[Exception], message: str, original: str) -> Exception:
    """``cls`` with ``message``; a state error also gets its attributes back, read from ``original``.

    The state errors' constructors take the parts of the message (address, key,
    txids, ...), not the message: the instance is made without calling them, and
    an attribute the message does not show (a changed format) is None.
    """
    pattern = _STATE_FIELDS.get(cls)
    if pattern is None:
        return cls(message)
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    found = pattern.match(original)
    attributes: dict[str, Any] = dict.fromkeys(pattern.groupindex)
    if found:
        attributes.update(found.groupdict())
        for name in _INT_FIELDS:
            if attributes.get(name) is not None:
                attributes[name] = int(attributes[name])
        if cls is errors.StateLostError:
            attributes["kind"] = ("missing" if "holds no commit record" in original else
                                  "behind" if "holds the values of txid" in original else "replaced")
        if cls is errors.StateAheadError and attributes["txid_offset"] is None:
            attributes["txid_offset"] = 0
        if attributes.get("key") is not None:
            attributes["key"] = _literal_list(attributes["key"])
    error.__dict__.update(attributes)
    return error


def _literal_list(text: str) -> list[Any] | None:
    try:
        value = ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return None
    return value if isinstance(value, list) else None
