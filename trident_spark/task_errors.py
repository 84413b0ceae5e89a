"""Our errors across the Spark task boundary as data: the class and its attributes, not a message to parse.

An error raised in a Spark task (or in ``foreachBatch``) reaches the driver as
text: the Python traceback inside Spark's exception. PySpark's own error classes
carry ``(errorClass, messageParameters)`` across processes; ours do the same with
one line of that text. At the task boundary :func:`mark` adds a PEP 678 note to a
:class:`~trident_spark.errors.TridentSparkError`, which every traceback prints
after the message::

    trident-spark-error: {"class": "StateAheadError", "module": "trident_spark.state.errors",
                          "message": "...", "attrs": {"stored_txid": 7, ...}}

On the driver :func:`rebuild` reads the last such line and makes the same class
with the same attributes. A record's value can appear in a message, so the line
can be forged: it is read as JSON only, the class is looked up among
trident-spark's own error classes (never imported or evaluated from the text),
and the attributes are set from JSON values. A forged line can at most give one
of our error classes with the forger's text.

Examples
--------
>>> from trident_spark.errors import StateConflictError
>>> error = mark(StateConflictError("memory://wc", ["cat"], attempts=3))
>>> import traceback
>>> text = "".join(traceback.format_exception(error))
>>> again = rebuild(text)
>>> type(again).__name__, again.key, again.attempts
('StateConflictError', ['cat'], 3)
"""

from __future__ import annotations

import base64
import datetime
import decimal
import functools
import importlib
import inspect
import json
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

from trident_spark.errors import TridentSparkError
from trident_spark.state.redaction import redact_text

#: The note line's prefix: one fixed format, at the start of a line.
MARKER = "trident-spark-error: "

#: The modules that define trident-spark's error classes. A class named by a note is looked up
#: among the loaded subclasses of TridentSparkError; when its module is not loaded yet on the
#: driver, it is imported only if it is one of these (a test keeps the list complete).
ERROR_MODULES = (
    "trident_spark.errors",
    "trident_spark.state.errors",
    "trident_spark.state.pyvalues",
    "trident_spark.state.redis_wait",
    "trident_spark.checkpoint_files",
    "trident_spark.object_values",
    "trident_spark.cli.query",
    "trident_spark.cli.run",
    "trident_spark.cli.services",
    "trident_spark.cli.status",
    "trident_spark.drpc.board",
    "trident_spark.drpc.http_body",
    "trident_spark.drpc.server",
    "trident_spark.executor.instances",
    "trident_spark.executor.private_ipc",
    "trident_spark.kafka.state",
    "trident_spark.local.java",
    "trident_spark.local.kafka",
    "trident_spark.local.launchers",
    "trident_spark.local.maven",
    "trident_spark.local.process",
    "trident_spark.local.service_handle",
    "trident_spark.runtime.failures",
    "trident_spark.runtime.offsets_log",
    "trident_spark.runtime.run_conf",
    "trident_spark.runtime.stop_quiet",
    "trident_spark.spout.formats.avro_bounds",
    "trident_spark.spout.formats.avro",
    "trident_spark.spout.kafka.jvm",
    "trident_spark.spout.formats.protobuf",
    "trident_spark.spout.formats.schema_registry",
    "trident_spark.tuning.knee",
    "trident_spark.tuning.sweep",
    "trident_spark.windowing.processor",
)

F = TypeVar("F", bound=Callable[..., Iterator[Any]])


def mark(error: BaseException) -> BaseException:
    """Add the note that carries ``error`` (and each of our errors it was raised from) as data.

    Called where an error leaves a task: the traceback Spark sends to the driver then
    holds the note. Idempotent: an error already marked is left as it is. Errors not
    ours are returned unmarked (their causes may be marked).

    Examples
    --------
    >>> from trident_spark.errors import FailedException
    >>> mark(FailedException("store briefly down")).__notes__[0][:40]
    'trident-spark-error: {"class": "FailedEx'
    """
    seen: set[int] = set()
    current: BaseException | None = error
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        notes = getattr(current, "__notes__", ())
        if isinstance(current, TridentSparkError) and not any(
                isinstance(note, str) and note.startswith(MARKER) for note in notes):
            current.add_note(MARKER + json.dumps(_record(current)))
        current = current.__cause__ or (None if current.__suppress_context__ else current.__context__)
    return error


def reporting(fn: F) -> F:
    """``fn`` (a task function that returns an iterator, e.g. a ``mapInArrow`` function), its
    errors marked (:func:`mark`) as they leave it.

    Examples
    --------
    >>> from trident_spark.errors import DataLossError
    >>> def task(batches):
    ...     yield from batches
    ...     raise DataLossError("offsets [0, 5) of t[0] are gone")
    >>> try:
    ...     list(reporting(task)([1]))
    ... except DataLossError as exc:
    ...     exc.__notes__[0].startswith(MARKER)
    True
    """
    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Iterator[Any]:
        try:
            yield from fn(*args, **kwargs)
        except Exception as exc:  # ours, or another raised from one of ours (its cause is marked)
            mark(exc)
            raise

    return run  # type: ignore[return-value]


def rebuild(text: str) -> TridentSparkError | None:
    """The error the last note in ``text`` describes; None without one (or with one not ours).

    The message and string attributes pass the redaction again; the class must be a
    TridentSparkError subclass defined in trident-spark (:data:`ERROR_MODULES`).

    Examples
    --------
    >>> rebuild('x\\ntrident-spark-error: {"class": "system", "module": "os", "message": "rm", "attrs": {}}')
    >>> rebuild('trident-spark-error: {"class": "TopologyError", "module": "trident_spark.errors", '
    ...         '"message": "bad", "attrs": {}}')
    TopologyError('bad')
    """
    for record in reversed(_records(text)):
        cls = error_class(record.get("module"), record.get("class"))
        message = record.get("message")
        attributes = record.get("attrs")
        if cls is None or not isinstance(message, str) or not isinstance(attributes, dict):
            continue
        error = cls.__new__(cls)
        BaseException.__init__(error, redact_text(message))
        for name, value in attributes.items():
            # Attributes only: never a name of the exception machinery (args, with_traceback) or a method.
            if (isinstance(name, str) and name.isidentifier() and not name.startswith("__")
                    and not hasattr(BaseException, name) and not callable(getattr(cls, name, None))):
                setattr(error, name, _decoded(value))
        return error
    return None


def error_class(module: object, name: object) -> type[TridentSparkError] | None:
    """Our error class ``module.name`` (``name`` may be a qualified name); None if it is not one.

    Examples
    --------
    >>> error_class("trident_spark.errors", "OperatorError").__name__
    'OperatorError'
    >>> error_class("builtins", "eval") is None, error_class("os", "system") is None
    (True, True)
    """
    if not isinstance(module, str) or not isinstance(name, str):
        return None
    found = _loaded_classes().get((module, name))
    if found is None and module in ERROR_MODULES:
        importlib.import_module(module)  # a name from our own list, never one from the text
        found = _loaded_classes().get((module, name))
    return found


def error_class_named(name: str) -> type[TridentSparkError] | None:
    """Our error class whose (possibly qualified) name is ``name``, among the loaded ones and
    those of :data:`ERROR_MODULES`; an unqualified name must be unambiguous.

    Examples
    --------
    >>> error_class_named("trident_spark.errors.DataLossError").__name__
    'DataLossError'
    >>> error_class_named("UnstorableValueError").__module__
    'trident_spark.state.errors'
    >>> error_class_named("mylib.errors.LegacyStateError") is None
    True
    """
    if "." in name:
        module, _, short = name.rpartition(".")
        return error_class(module, short)
    classes = _loaded_classes()
    if not any(qualname == name for _, qualname in classes):
        _import_error_modules()
        classes = _loaded_classes()
    matches = {cls for (_, qualname), cls in classes.items() if qualname == name}
    return matches.pop() if len(matches) == 1 else None


def constructor_attributes(cls: type[BaseException]) -> list[str]:
    """The attribute names ``cls``'s own constructor takes beyond a message (``address``, ``key``, ...).

    Examples
    --------
    >>> from trident_spark.errors import StateConflictError, TopologyError
    >>> constructor_attributes(StateConflictError), constructor_attributes(TopologyError)
    (['address', 'key', 'attempts'], [])
    """
    init = next((vars(c)["__init__"] for c in cls.__mro__ if "__init__" in vars(c)), None)
    if init is None or init in (TridentSparkError.__init__, BaseException.__init__, Exception.__init__):
        return []
    try:
        parameters = list(inspect.signature(init).parameters.values())[1:]
    except (TypeError, ValueError):
        return []
    return [p.name for p in parameters
            if p.kind not in (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)]


# -- the record ---------------------------------------------------------------------------------


def _record(error: BaseException) -> dict[str, Any]:
    cls = type(error)
    attributes = {name: _encoded(value) for name, value in vars(error).items() if not name.startswith("__")}
    return {"class": cls.__qualname__, "module": cls.__module__, "message": redact_text(str(error)),
            "attrs": attributes}


def _encoded(value: Any) -> Any:
    """``value`` as JSON; the few non-JSON values a key holds are tagged, anything else is its repr."""
    if value is None or isinstance(value, bool | int | str):
        return redact_text(value) if isinstance(value, str) else value
    if isinstance(value, float):
        finite = value == value and value not in (float("inf"), float("-inf"))
        return value if finite else {"$float": repr(value)}
    if isinstance(value, list | tuple):
        encoded = [_encoded(v) for v in value]
        return encoded if isinstance(value, list) else {"$tuple": encoded}
    if isinstance(value, dict) and all(isinstance(k, str) and not k.startswith("$") for k in value):
        return {k: _encoded(v) for k, v in value.items()}
    if isinstance(value, bytes):
        return {"$bytes": base64.b64encode(value).decode("ascii")}
    if isinstance(value, decimal.Decimal):
        return {"$decimal": str(value)}
    if isinstance(value, datetime.datetime):
        return {"$datetime": value.isoformat()}
    if isinstance(value, datetime.date):
        return {"$date": value.isoformat()}
    return {"$repr": redact_text(repr(value))}


def _decoded(value: Any) -> Any:
    """The value :func:`_encoded` wrote: JSON values, and only the tagged kinds it knows."""
    if isinstance(value, list):
        return [_decoded(v) for v in value]
    if not isinstance(value, dict):
        return redact_text(value) if isinstance(value, str) else value
    if len(value) == 1:
        ((tag, inner),) = value.items()
        try:
            if tag == "$tuple" and isinstance(inner, list):
                return tuple(_decoded(v) for v in inner)
            if tag == "$bytes" and isinstance(inner, str):
                return base64.b64decode(inner, validate=True)
            if tag == "$decimal" and isinstance(inner, str):
                return decimal.Decimal(inner)
            if tag == "$datetime" and isinstance(inner, str):
                return datetime.datetime.fromisoformat(inner)
            if tag == "$date" and isinstance(inner, str):
                return datetime.date.fromisoformat(inner)
            if tag == "$float" and isinstance(inner, str) and inner in ("nan", "inf", "-inf"):
                return float(inner)
            if tag == "$repr" and isinstance(inner, str):
                return redact_text(inner)
        except (ValueError, decimal.InvalidOperation):
            return None
    return {k: _decoded(v) for k, v in value.items()}


def _records(text: str) -> list[dict[str, Any]]:
    """Every well-formed note record in ``text``, in order (a line may go on after the JSON:
    Spark appends `` SQLSTATE: ...`` to a traceback's last line)."""
    found = []
    decoder = json.JSONDecoder()
    start = 0
    while (at := text.find(MARKER, start)) >= 0:
        start = at + len(MARKER)
        if at and text[text.rfind("\n", 0, at) + 1:at].strip():
            continue  # not at the start of a line
        try:
            record, _ = decoder.raw_decode(text, start)
        except ValueError:
            continue
        if isinstance(record, dict):
            found.append(record)
    return found


def _loaded_classes() -> dict[tuple[str, str], type[TridentSparkError]]:
    """Every loaded TridentSparkError subclass defined in trident-spark, by ``(module, qualname)``."""
    classes: dict[tuple[str, str], type[TridentSparkError]] = {}
    pending: list[type[TridentSparkError]] = [TridentSparkError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("trident_spark.") and "<locals>" not in cls.__qualname__:
            classes[(cls.__module__, cls.__qualname__)] = cls
        pending.extend(cls.__subclasses__())
    return classes


@functools.cache
def _import_error_modules() -> None:
    for module in ERROR_MODULES:
        try:
            importlib.import_module(module)
        except ImportError:  # an optional dependency missing: its errors cannot have been raised here
            continue
