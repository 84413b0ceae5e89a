"""The command's main() configures the process's logging and SPARK_SUBMIT_OPTS (cli/logs.py):
each test here gets them back as they were."""

from __future__ import annotations

import logging

import pytest


@pytest.fixture(autouse=True)
def _command_logging_undone(monkeypatch):
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")  # restored (or removed) after the test
    logger = logging.getLogger("trident_spark")
    level, handlers = logger.level, list(logger.handlers)
    yield
    logger.setLevel(level)
    logger.handlers[:] = handlers
