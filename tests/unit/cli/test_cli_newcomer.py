"""The command line's newcomer details: `--conf` on run and tune, `services`' export lines and its
unknown names, a closed stdout ending a command quietly, and what a stop signal leaves."""

from __future__ import annotations

import os
import signal

import pytest

from trident_spark.cli.failure import CLOSED_PIPE, run_handler
from trident_spark.cli.main import build_parser
from trident_spark.cli.services import UnknownServiceError, export_line
from trident_spark.cli.services import main as services_main
from trident_spark.cli.stops import StopSignals


@pytest.mark.parametrize("command", ["run", "tune"])
def test_conf_is_repeatable_key_value_pairs(command):
    args = build_parser().parse_args([command, "app.py", "--conf", "spark.sql.shuffle.partitions=8",
                                      "--conf", "spark.executor.memory=2g", "--conf", "spark.x=a=b"])
    assert args.conf == [("spark.sql.shuffle.partitions", "8"), ("spark.executor.memory", "2g"),
                         ("spark.x", "a=b")]


def test_conf_without_equals_is_a_usage_error(capsys):
    with pytest.raises(SystemExit) as exit_:
        build_parser().parse_args(["run", "app.py", "--conf", "spark.sql.shuffle.partitions"])
    assert exit_.value.code == 2
    assert ("argument --conf: --conf 'spark.sql.shuffle.partitions': write KEY=VALUE, "
            "e.g. spark.sql.shuffle.partitions=8") in capsys.readouterr().err


def test_services_export_lines_name_the_variables_the_tests_read():
    assert [export_line(n, a) for n, a in [("kafka", "127.0.0.1:1"), ("redis", "redis://127.0.0.1:2/0"),
                                           ("elasticsearch", "http://127.0.0.1:3"),
                                           ("postgres", "postgresql://postgres@127.0.0.1:4/postgres")]] == [
        "export KAFKA_BOOTSTRAP_SERVERS=127.0.0.1:1", "export REDIS_URL=redis://127.0.0.1:2/0",
        "export ELASTICSEARCH_URL=http://127.0.0.1:3",
        "export POSTGRES_URL=postgresql://postgres@127.0.0.1:4/postgres"]


def test_services_refuses_an_unknown_name():
    args = build_parser().parse_args(["services", "start", "kafka", "mongodb"])
    with pytest.raises(UnknownServiceError, match=r"no service 'mongodb'; choose from kafka, redis, "
                                                   r"elasticsearch, postgres"):
        services_main(args)


def test_a_closed_stdout_ends_the_command_quietly_with_141():
    def writes(args):
        raise BrokenPipeError(32, "Broken pipe")
    assert run_handler(writes, None, verbose=False) == CLOSED_PIPE == 141


@pytest.mark.parametrize(("number", "status"), [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_a_stop_signal_is_recorded_once_and_a_second_one_forces(number, status):
    with StopSignals() as stops:
        os.kill(os.getpid(), number)
        assert stops.wait(5) and stops.exit_status == status
        with pytest.raises(KeyboardInterrupt):
            os.kill(os.getpid(), number)
            stops.wait(5)
    assert signal.getsignal(number) is not stops._handle
