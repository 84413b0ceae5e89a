"""How the command ends on an error: one message on stderr and exit status 1; the traceback with ``-v``.

Every subcommand's handler runs in :func:`run_handler` (``cli/main.py``),
so a new subcommand gets the same behaviour without code of its own. An error
trident-spark raises on purpose (a :class:`~trident_spark.errors.TridentSparkError`:
an operator that raised, a broker or store that does not answer, a missing extra,
a bad state URL, ...) already says what failed, where and what to do: it is
printed as ``error: MESSAGE``. Anything else (a bug, in the user's file or ours)
is printed as ``error: Type: message`` with a hint to run again with ``-v``.

Examples
--------
>>> import io
>>> from trident_spark.errors import OperatorError
>>> err = io.StringIO()
>>> report(OperatorError("each(Parse) raised ValueError: bad line"), verbose=False, stderr=err)
1
>>> print(err.getvalue(), end="")
error: each(Parse) raised ValueError: bad line
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Callable
from typing import Any, TextIO

from trident_spark.errors import TridentSparkError

#: The exit status of a command that failed (argparse's usage errors exit with 2).
FAILED = 1
#: The exit status after Ctrl-C (128 + SIGINT), as shells report it.
INTERRUPTED = 130
#: The exit status when stdout's reader went away (``status ... | head``): 128 + SIGPIPE, what a
#: shell reports for a command the closed pipe ended.
CLOSED_PIPE = 141
VERBOSE_HINT = "run again with -v for the traceback"


def message(error: BaseException) -> str:
    """The one line (or the few lines of a multi-line message) the command prints for ``error``.

    Examples
    --------
    >>> from trident_spark.errors import BrokerUnavailableError
    >>> message(BrokerUnavailableError("no Kafka broker answers at 127.0.0.1:1"))
    'error: no Kafka broker answers at 127.0.0.1:1'
    >>> message(KeyError("x"))
    "error: KeyError: 'x' (run again with -v for the traceback)"
    """
    if isinstance(error, TridentSparkError):
        return f"error: {error}"
    text = str(error)
    shown = f"{type(error).__name__}: {text}" if text else type(error).__name__
    return f"error: {shown} ({VERBOSE_HINT})"


def report(error: BaseException, *, verbose: bool, stderr: TextIO | None = None) -> int:
    """Print ``error`` to stderr (its traceback first if ``verbose``); the exit status."""
    out = stderr if stderr is not None else sys.stderr
    if isinstance(error, KeyboardInterrupt):
        return INTERRUPTED
    if verbose:
        out.write("".join(traceback.format_exception(error)))
        out.write(f"error: {error}\n" if isinstance(error, TridentSparkError) else "")
    else:
        out.write(message(error) + "\n")
    out.flush()
    return FAILED


def run_handler(handler: Callable[[Any], int | None], args: Any, *, verbose: bool) -> int:
    """Call a subcommand's handler; its exit status, or :func:`report`'s if it raised.

    ``SystemExit`` (argparse, ``sys.exit``) passes through unchanged. A closed stdout (the
    reader of a pipe stopped reading) ends the command quietly with :data:`CLOSED_PIPE`.

    Examples
    --------
    >>> def fails(args):
    ...     raise TridentSparkError("no Kafka broker answers at 127.0.0.1:1")
    >>> run_handler(fails, None, verbose=False)
    1
    """
    try:
        status = int(handler(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at exit as "Exception ignored ..."
        return status
    except BrokenPipeError:
        _discard_stdout()
        return CLOSED_PIPE
    except SystemExit as exit_:
        # rich meets a closed pipe by pointing stdout at /dev/null and exiting with 1: the same case
        if exit_.code == 1 and _stdout_discarded():
            return CLOSED_PIPE
        raise
    except (Exception, KeyboardInterrupt) as exc:
        return report(exc, verbose=verbose)


def _discard_stdout() -> None:
    """Point stdout at /dev/null: Python flushes it at exit, and a closed pipe would raise again."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # stdout is no file (a test's StringIO): nothing to flush at exit
        pass
    finally:
        os.close(devnull)


def _stdout_discarded() -> bool:
    """Whether stdout now writes to /dev/null (after a closed pipe)."""
    try:
        return os.path.samestat(os.fstat(sys.stdout.fileno()), os.stat(os.devnull))
    except (OSError, ValueError):
        return False
