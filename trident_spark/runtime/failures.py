"""Turn a failed Spark query back into the trident-spark error that caused it.

An error raised on an executor (or in ``foreachBatch``) reaches the driver as
text: the Python traceback inside Spark's exception. Our errors carry themselves
in it as data (``trident_spark.task_errors``: a note with the class and its
attributes), and :func:`translate` rebuilds the same class with the same
attributes, the message redacted and the stream's name added. Text without that
note (an error from a task path that does not mark them) falls back to our
class's ``Class: message`` line, with the message only; a failure that is not
ours becomes :class:`StreamFailedError` naming its cause.
"""

from __future__ import annotations

import re

from trident_spark import errors
from trident_spark.state.redaction import redact_text
from trident_spark.task_errors import MARKER, constructor_attributes, error_class_named, rebuild

# A ``Class: message`` line of a Python traceback, the class maybe qualified; it is ours when the
# class is one of trident-spark's errors (``task_errors.error_class_named``).
_CLASS_LINE = re.compile(
    r"\b(?P<cls>(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*): (?P<msg>[^\n]*?)(?P<end>\s+SQLSTATE|\n|$)")
# A line after an error's first line that is not more of its message: blank, indented (a
# traceback or JVM frame, " SQLSTATE"), the start of another traceback or exception, Spark's
# query description, a note of ours.
_NOT_MESSAGE = re.compile(
    r"$|\s|Traceback \(most recent call last\)|During handling of the above|The above exception|"
    r"===|JVM stacktrace|Caused by|Driver stacktrace|(?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*(?:Error|Exception)\b|"
    + re.escape(MARKER))


_MISSING_MODULE = re.compile(r"ModuleNotFoundError: No module named '(?P<module>[\w.]+)'")


class StreamFailedError(errors.TridentSparkError):
    """A stream's Spark query failed for a reason that is not one of ours (see the cause)."""


def translate(stream: str, exc: BaseException) -> BaseException:
    """The most specific error for a Spark failure: ours if user code or a spout raised one.

    Examples
    --------
    >>> import traceback
    >>> from trident_spark.errors import StateConflictError
    >>> from trident_spark.task_errors import mark
    >>> text = "".join(traceback.format_exception(mark(StateConflictError("memory://wc", ["a"], attempts=3))))
    >>> error = translate("words", RuntimeError(text))
    >>> type(error).__name__, error.attempts, str(error).endswith("(stream 'words')")
    ('StateConflictError', 3, True)
    """
    text = str(exc)
    rebuilt = rebuild(text)
    if rebuilt is not None:
        return _named(rebuilt, stream)
    ours = _our_class_lines(text)
    if ours:
        cls, found = ours[-1]
        error = cls.__new__(cls)
        # executors' text: no secret reaches the driver's error
        BaseException.__init__(error, redact_text(_message(text, found)))
        # Without the note the attributes are unknown: None, never read back from the message.
        error.__dict__.update(dict.fromkeys(constructor_attributes(cls)))
        return _named(error, stream)
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


def _named(error: errors.TridentSparkError, stream: str) -> errors.TridentSparkError:
    """``error`` with the stream's name after its message (once)."""
    message = str(error)
    if f"stream {stream!r}" not in message:
        error.args = (f"{message} (stream {stream!r})",)
    return error


def _our_class_lines(text: str) -> list[tuple[type[errors.TridentSparkError], re.Match[str]]]:
    """The ``Class: message`` lines of ``text`` whose class is one of our errors, in order."""
    found = []
    for match in _CLASS_LINE.finditer(text):
        name = match.group("cls")
        # Our classes by their own module, or by any trident_spark module that re-raised them.
        short = name.rpartition(".")[2] if name.startswith("trident_spark.") else name
        cls = error_class_named(short)
        if cls is not None:
            found.append((cls, match))
    return found


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
            if _NOT_MESSAGE.match(line) or _our_class_lines(line):
                break
            before_sqlstate = re.split(r"\s+SQLSTATE", line, maxsplit=1)
            lines.append(before_sqlstate[0])
            if len(before_sqlstate) > 1:
                break
    return "\n".join(lines).strip()
