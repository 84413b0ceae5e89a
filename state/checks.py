"""The one check of a whole-number argument: an int, not a bool, within bounds.

``isinstance(x, int)`` holds for ``True`` and ``False``, so every count, size
and index trident-spark takes must also refuse a bool; that rule is written
once, here, in the lowest layer, so the state layer and trident_spark share it.

* :func:`is_int` is the rule, for the few callers that build their own error;
* :func:`check_int` raises a named error (by default :class:`InvalidArgumentError`)
  whose message names the argument, the bound and the value given.

Examples
--------
>>> is_int(3), is_int(True), is_int(0, minimum=1), is_int(2.0)
(True, False, False, False)
>>> check_int(4, "cache_size")
4
"""

from __future__ import annotations

from typing import TypeGuard

from .errors import InvalidArgumentError, TridentSparkError


def is_int(value: object, minimum: int | None = None, maximum: int | None = None) -> TypeGuard[int]:
    """Whether ``value`` is an int (a bool is not) from ``minimum`` to ``maximum`` (both included).

    Examples
    --------
    >>> is_int(0, minimum=0), is_int(False, minimum=0), is_int(5, minimum=0, maximum=4)
    (True, False, False)
    """
    if isinstance(value, bool) or not isinstance(value, int):
        return False
    return (minimum is None or value >= minimum) and (maximum is None or value <= maximum)


def check_int(value: object, name: str, *, minimum: int = 1, where: str = "", note: str = "",
              message: str | None = None,
              error: type[TridentSparkError] = InvalidArgumentError) -> int:
    """``value`` if it is an int (not a bool) >= ``minimum``; otherwise raise ``error``.

    Parameters
    ----------
    value : object
        What the user gave.
    name : str
        The argument's name, as the user wrote it.
    minimum : int
        The smallest value allowed.
    where : str
        The call it was given to (``"run()"``, ``"FirstN"``); the message starts with it.
    note : str
        Text after the rule, e.g. what the number counts: ``" (the batch id)"``.
    message : str or None
        The whole message instead of the usual one, as a :meth:`str.format` template of
        ``value``, ``name`` and ``minimum`` (formatted only when the check fails).
    error : type
        The error class raised.

    Returns
    -------
    int
        ``value``.

    Raises
    ------
    InvalidArgumentError
        Or ``error``: ``"{where}: {name} must be an int >= {minimum}{note}, got {value!r}"``.

    Examples
    --------
    >>> check_int(0, "max_batch_retries", minimum=0, where="run()")
    0
    >>> check_int(True, "txid_offset", minimum=0)
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.InvalidArgumentError: txid_offset must be an int >= 0, got True
    >>> check_int(0, "cache_size", message="cache_size must be a positive int here, got {value!r}")
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.InvalidArgumentError: cache_size must be a positive int here, got 0
    """
    if is_int(value, minimum):
        return value
    if message is None:
        prefix = f"{where}: " if where else ""
        text = f"{prefix}{name} must be an int >= {minimum}{note}, got {value!r}"
    else:
        text = message.format(value=value, name=name, minimum=minimum)
    raise error(text)


__all__ = ["check_int", "is_int"]
