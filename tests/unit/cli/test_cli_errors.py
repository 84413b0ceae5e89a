"""The command's errors: one `error:` line on stderr and exit status 1, the traceback only with -v;
-v and --log-level before or after the subcommand; --version from the package's one version."""

from __future__ import annotations

import importlib.metadata
import sys

import pytest

import trident_spark
from trident_spark.cli import failure
from trident_spark.cli import run as run_command
from trident_spark.cli.main import build_parser, main
from trident_spark.errors import BrokerUnavailableError, MissingExtraError, OperatorError

OPERATOR_FAILED = OperatorError("each(parse) failed on tuple {'line': 'a'}: ValueError: cannot parse 'a' "
                                "(stream 'lines')")


@pytest.fixture
def raising(monkeypatch):
    """main() of `trident-spark run app.py` whose handler raises the given error."""

    def run(error, *argv):
        def handler(args):
            raise error

        monkeypatch.setattr(run_command, "main", handler)  # register() sets it as `run`'s handler
        return main(list(argv) or ["run", "app.py"])

    return run


@pytest.mark.parametrize("error", [
    OPERATOR_FAILED,
    BrokerUnavailableError("Kafka at 127.0.0.1:1 did not answer"),
    MissingExtraError("the Redis state needs the redis package, which is not installed: "
                      "pip install 'trident-spark[redis]'"),
])
def test_our_error_is_one_line_and_exit_status_1(raising, capsys, error):
    assert raising(error) == 1
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"error: {error}\n")


def test_with_v_the_traceback_comes_first_then_the_same_line(raising, capsys):
    assert raising(OPERATOR_FAILED, "run", "app.py", "-v") == 1
    err = capsys.readouterr().err
    assert err.startswith("Traceback (most recent call last):\n")
    assert f"trident_spark.errors.OperatorError: {OPERATOR_FAILED}\n" in err
    assert err.endswith(f"\nerror: {OPERATOR_FAILED}\n")


@pytest.mark.parametrize("argv", [["-v", "run", "app.py"], ["run", "-v", "app.py"],
                                  ["run", "app.py", "--verbose"]])
def test_v_before_or_after_the_subcommand(raising, capsys, argv):
    raising(OPERATOR_FAILED, *argv)
    assert "Traceback" in capsys.readouterr().err


def test_an_unexpected_error_is_one_line_too_with_a_hint(raising, capsys):
    assert raising(KeyError("topology")) == 1
    assert capsys.readouterr().err == "error: KeyError: 'topology' (run again with -v for the traceback)\n"


def test_ctrl_c_is_status_130_without_output(raising, capsys):
    assert raising(KeyboardInterrupt()) == 130
    assert capsys.readouterr() == ("", "")


def test_bad_arguments_are_argparse_usage_errors_with_status_2(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--log-level", "loud", "status", "x"])
    assert info.value.code == 2
    assert "invalid choice: 'LOUD'" in capsys.readouterr().err


def test_log_level_before_or_after_the_subcommand():
    parser = build_parser()
    assert parser.parse_args(["--log-level", "debug", "status", "ck"]).log_level == "DEBUG"
    assert parser.parse_args(["status", "ck", "--log-level", "error"]).log_level == "ERROR"
    defaults = parser.parse_args(["status", "ck"])
    assert (defaults.log_level, defaults.verbose) == (None, False)


def test_version_is_the_package_version(capsys):
    with pytest.raises(SystemExit) as info:
        main(["--version"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    import pyspark

    assert out.startswith(f"trident-spark {trident_spark.__version__} (PySpark {pyspark.__version__}, ")
    # the one version source: pyproject reads trident_spark.__version__ (setuptools dynamic version)
    assert importlib.metadata.version("trident-spark") == trident_spark.__version__


def test_a_missing_extra_names_the_pip_install(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "redis", None)  # as if redis-py were not installed
    assert main(["query", "redis://127.0.0.1:1/0", "cat"]) == 1
    assert capsys.readouterr() == ("", (
        "error: the Redis state at redis://127.0.0.1:1/0?prefix=trident needs the redis package, "
        "which is not installed: pip install 'trident-spark[redis]'\n"))


def test_a_bad_state_url_in_query(capsys):
    assert main(["query", "foo://x", "cat"]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.startswith("error: unknown state URL scheme 'foo' in foo://x; supported: ")
    assert err.count("\n") == 1


def test_report_prints_the_message_of_our_errors_as_is():
    assert failure.message(OPERATOR_FAILED) == f"error: {OPERATOR_FAILED}"
