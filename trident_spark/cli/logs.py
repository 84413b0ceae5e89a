"""The command's logging: trident-spark's Python loggers on stderr, and Spark's log4j kept to what matters.

The package itself configures no logging (a library leaves that to the application);
the ``trident-spark`` command is an application, so it does: our records
(``trident_spark.*``: a batch replayed, an outage waited out, ...) go to stderr as
``HH:MM:SS LEVEL logger: message``, at WARNING unless ``--log-level`` (or ``-v``: INFO)
says otherwise; a librdkafka message repeated within a minute (its line for each failed
connection to a broker that is down) is shown once. Spark's driver JVM logs with log4j: the command hands it
``trident_spark/data/log4j2-cli.properties`` (Spark's defaults less the lines that
repeat a failed task's error, which the command reports once), except with ``-v``
or when the user has a log4j2 configuration of their own.

Examples
--------
>>> log_level(None, verbose=False), log_level(None, verbose=True), log_level("debug", verbose=False)
(30, 20, 10)
"""

from __future__ import annotations

import importlib.resources
import logging
import os
import sys
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
DATE_FORMAT = "%H:%M:%S"
LOG4J_FILE = "log4j2-cli.properties"
_CONFIGURED = "_trident_spark_cli_handler"
LIBRDKAFKA_LOGGER = "trident_spark.librdkafka"  # trident_spark/spout/kafka/pool.py


def log_level(name: str | None, *, verbose: bool) -> int:
    """The level of our loggers: ``--log-level NAME``, else INFO with ``-v``, else WARNING."""
    if name:
        return int(logging.getLevelName(name.upper()))
    return logging.INFO if verbose else logging.WARNING


class StderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """Writes to the ``sys.stderr`` of the moment, so records go through a live display that
    redirects it (rich's ``Live``) instead of tearing it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: Any) -> None:
        pass  # always the current sys.stderr


class RepeatFilter(logging.Filter):
    """Lets a message of librdkafka's through once per ``every`` seconds: it logs each failed connection
    to a broker that is down (hundreds of lines a minute), the same but for a number. Records of
    other loggers all pass (each retry of a replayed batch shows).

    Messages that differ only in their numbers count as one; a suppressed repeat is
    counted and the count shown with the next one let through.

    Examples
    --------
    >>> now = [0.0]
    >>> repeats = RepeatFilter(every=60, clock=lambda: now[0])
    >>> def record(msg):
    ...     return logging.LogRecord("trident_spark.librdkafka", logging.ERROR, "", 0, msg, None, None)
    >>> [repeats.filter(record(f"connect failed (after {n}ms)")) for n in (0, 1, 2)]
    [True, False, False]
    >>> now[0] = 61.0
    >>> shown = record("connect failed (after 3ms)")
    >>> repeats.filter(shown), shown.getMessage()
    (True, 'connect failed (after 3ms) [2 more like it in the last 61 s]')
    """

    def __init__(self, every: float = 60.0, clock: Any = None, logger: str = LIBRDKAFKA_LOGGER) -> None:
        super().__init__(logger)
        import time

        self.every = every
        self.clock = clock or time.monotonic
        self._seen: dict[tuple[str, int, str], tuple[float | None, int]] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        import re

        if not super().filter(record):  # another logger's record
            return True
        key = (record.name, record.levelno, re.sub(r"\d+", "#", record.getMessage()))
        now = self.clock()
        shown_at, skipped = self._seen.get(key, (None, 0))
        if shown_at is not None and now - shown_at < self.every:
            self._seen[key] = (shown_at, skipped + 1)
            return False
        if skipped and shown_at is not None:
            record.msg = f"{record.getMessage()} [{skipped} more like it in the last {now - shown_at:.0f} s]"
            record.args = None
        if len(self._seen) > 1000:  # many distinct messages: forget the old ones
            self._seen.clear()
        self._seen[key] = (now, 0)
        return True


def configure_python_logging(level: int) -> logging.Handler:
    """Send the ``trident_spark`` loggers' records at ``level`` and above to stderr (once per process)."""
    logger = logging.getLogger("trident_spark")
    if logger.level == logging.NOTSET or logger.level > level:  # a finer level set already stays
        logger.setLevel(level)
    for handler in logger.handlers:
        if getattr(handler, _CONFIGURED, False):
            handler.setLevel(level)
            return handler
    handler = StderrHandler()
    handler.setFormatter(logging.Formatter(FORMAT, DATE_FORMAT))
    handler.setLevel(level)
    handler.addFilter(RepeatFilter())
    setattr(handler, _CONFIGURED, True)
    logger.addHandler(handler)
    return handler


def log4j_file() -> Path:
    """The command's log4j2 configuration, shipped in the package."""
    return Path(str(importlib.resources.files("trident_spark").joinpath("data", LOG4J_FILE)))


def users_log4j(environ: dict[str, str] | os._Environ[str] | None = None) -> str | None:
    """Where the user configured Spark's log4j, if they did (then the command leaves it alone)."""
    env = os.environ if environ is None else environ
    if "log4j2.configurationFile" in env.get("SPARK_SUBMIT_OPTS", ""):
        return "SPARK_SUBMIT_OPTS"
    conf_dir = env.get("SPARK_CONF_DIR") or (f"{env['SPARK_HOME']}/conf" if env.get("SPARK_HOME") else "")
    if conf_dir and Path(conf_dir, "log4j2.properties").is_file():
        return str(Path(conf_dir, "log4j2.properties"))
    return None


def quiet_spark_logging(environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Make the driver JVM the command starts use :func:`log4j_file`; False if the user has their own.

    Works through ``SPARK_SUBMIT_OPTS`` (options of the JVM spark-submit starts), so that
    ``spark.driver.extraJavaOptions`` of a spark-defaults.conf keeps its value. A JVM that
    is running already keeps its logging.

    Examples
    --------
    >>> env = {}
    >>> quiet_spark_logging(env), env["SPARK_SUBMIT_OPTS"].startswith("-Dlog4j2.configurationFile=")
    (True, True)
    >>> quiet_spark_logging(env)   # once is enough
    False
    """
    env = os.environ if environ is None else environ
    if users_log4j(env):
        return False
    option = f"-Dlog4j2.configurationFile={log4j_file().as_uri()}"
    env["SPARK_SUBMIT_OPTS"] = f"{option} {env.get('SPARK_SUBMIT_OPTS', '')}".strip()
    return True


@contextmanager
def configured(*, verbose: bool, level_name: str | None) -> Iterator[None]:
    """The command's logging while it runs: our loggers on stderr, and Spark's log4j unless ``verbose``.

    On exit the process's logging and environment are as they were (``main()`` may be called
    in a process that goes on: a test, a notebook).
    """
    logger = logging.getLogger("trident_spark")
    level, handlers = logger.level, list(logger.handlers)
    submit_opts = os.environ.get("SPARK_SUBMIT_OPTS")
    try:
        configure_python_logging(log_level(level_name, verbose=verbose))
        if not verbose:
            quiet_spark_logging()
        yield
    finally:
        logger.setLevel(level)
        logger.handlers[:] = handlers
        if submit_opts is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = submit_opts
