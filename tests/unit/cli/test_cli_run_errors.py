"""`trident-spark run`: a stream's failure is one `error:` line on stderr and exit status 1."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from trident_spark.cli import run as run_command
from trident_spark.cli.main import main
from trident_spark.errors import DataLossError, StateAheadError, StateTypeMismatchError

#: The session the command's run gets here: no Spark, and no spark.trident.* setting in its conf.
NO_SPARK = SimpleNamespace(conf={})


class FailingTopology:
    def __init__(self, error):
        self.error = error

    def run(self, **options):
        raise self.error


@pytest.fixture
def run_failing(monkeypatch, capsys):
    monkeypatch.setenv("COLUMNS", "1000")  # one line per message
    monkeypatch.setattr("trident_spark.runtime.session.local_session", lambda master=None, conf=None:
                        NO_SPARK)

    def run(error):
        monkeypatch.setattr(run_command, "load_topology", lambda target: FailingTopology(error))
        code = main(["run", "app.py", "--checkpoint", "/tmp/never-used"])
        return code, capsys.readouterr().err.splitlines()[-1]

    return run


def test_a_state_error_is_printed_not_raised(run_failing):
    error = StateAheadError("memory://wc", ["cat"], stored_txid=7, batch_txid=2)
    assert run_failing(error) == (1, f"error: {error}")


def test_brackets_in_a_message_are_printed_as_written(run_failing):
    error = StateTypeMismatchError("memory://wc", ["cat"], expected="opaque",
                                   found="a transactional value [txid, val]")
    code, line = run_failing(error)
    assert (code, line) == (1, f"error: {error}")
    assert "[txid, val]" in line


def test_our_other_errors_too(run_failing):
    assert run_failing(DataLossError("offsets [0, 5) of t[0] are gone")) == (
        1, "error: offsets [0, 5) of t[0] are gone")
