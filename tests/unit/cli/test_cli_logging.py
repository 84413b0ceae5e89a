"""The command's logging: trident-spark's records on stderr (WARNING by default: a replayed batch
shows), Spark's log4j configuration handed to the driver JVM unless -v or the user has one."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import pytest

from trident_spark.cli import logs
from trident_spark.cli import status as status_command
from trident_spark.cli.main import main


@pytest.fixture
def logged(monkeypatch, capsys):
    """Run the command with a handler that logs what the runtime logs; the stderr lines.
    ``seen`` holds SPARK_SUBMIT_OPTS as the handler saw it."""
    monkeypatch.setenv("SPARK_SUBMIT_OPTS", "")

    def run(*argv):
        def handler(args):
            seen["SPARK_SUBMIT_OPTS"] = os.environ["SPARK_SUBMIT_OPTS"]
            logging.getLogger("trident_spark.runtime.batch").warning(
                "stream lines: batch 0 asked to be replayed (store down); retry 1 of 3 in 0.5 s")
            logging.getLogger("trident_spark.spout.kafka_source").info("adaptive batching: batch 3 "
                                                                       "took 80 ms")

        monkeypatch.setattr(status_command, "main", handler)
        assert main([*argv]) == 0
        return capsys.readouterr().err.splitlines()

    return run


seen: dict[str, str] = {}


def test_a_replayed_batch_shows_at_the_default_level(logged):
    [line] = logged("status", "ck")
    assert line.endswith(" WARNING trident_spark.runtime.batch: stream lines: batch 0 asked to be replayed "
                         "(store down); retry 1 of 3 in 0.5 s")


@pytest.mark.parametrize("argv", [["status", "ck", "--log-level", "info"], ["-v", "status", "ck"]])
def test_info_with_log_level_or_v(logged, argv):
    lines = logged(*argv)
    assert [line.split(" ", 1)[1] for line in lines] == [
        "WARNING trident_spark.runtime.batch: stream lines: batch 0 asked to be replayed (store down); "
        "retry 1 of 3 in 0.5 s",
        "INFO trident_spark.spout.kafka_source: adaptive batching: batch 3 took 80 ms"]


def test_errors_only_with_log_level_error(logged):
    assert logged("status", "ck", "--log-level", "ERROR") == []


def test_main_leaves_the_processs_logging_and_environment_as_it_found_them(logged):
    logger = logging.getLogger("trident_spark")
    before = (logger.level, list(logger.handlers))
    logged("status", "ck", "--log-level", "info")
    assert (logger.level, logger.handlers) == before
    assert os.environ["SPARK_SUBMIT_OPTS"] == ""


def test_each_replay_warning_shows(logged):
    assert len(logged("status", "ck")) == 1
    assert len(logged("status", "ck")) == 1  # the same warning again, a moment later (each main)


def test_librdkafkas_repeats_show_once_a_minute(monkeypatch, capsys):
    def handler(args):
        for ms in (0, 1, 0, 2):
            logging.getLogger("trident_spark.librdkafka").error(
                "FAIL [rdkafka#consumer-1]: Connect to ipv4#127.0.0.1:1 failed: Connection refused "
                "(after %dms in state CONNECT)", ms)

    monkeypatch.setattr(status_command, "main", handler)
    main(["status", "ck"])
    [line] = capsys.readouterr().err.splitlines()
    assert line.endswith("(after 0ms in state CONNECT)")


def test_spark_gets_the_quiet_log4j_configuration_by_default(logged):
    logged("status", "ck")
    assert seen["SPARK_SUBMIT_OPTS"] == f"-Dlog4j2.configurationFile={logs.log4j_file().as_uri()}"


def test_with_v_spark_logs_as_spark_configures_it(logged):
    logged("-v", "status", "ck")
    assert seen["SPARK_SUBMIT_OPTS"] == ""


def test_a_users_log4j_configuration_is_kept(tmp_path):
    (tmp_path / "log4j2.properties").write_text("rootLogger.level = info\n")
    env = {"SPARK_CONF_DIR": str(tmp_path)}
    assert logs.quiet_spark_logging(env) is False
    assert env == {"SPARK_CONF_DIR": str(tmp_path)}
    env = {"SPARK_SUBMIT_OPTS": "-Xmx2g -Dlog4j2.configurationFile=/etc/mine.properties"}
    assert logs.quiet_spark_logging(env) is False
    assert env["SPARK_SUBMIT_OPTS"] == "-Xmx2g -Dlog4j2.configurationFile=/etc/mine.properties"


def test_other_submit_options_stay():
    env = {"SPARK_SUBMIT_OPTS": "-Xmx2g"}
    assert logs.quiet_spark_logging(env) is True
    assert env["SPARK_SUBMIT_OPTS"].endswith(" -Xmx2g")


def test_the_log4j_file_is_in_the_package_and_hides_only_a_failed_tasks_repeats():
    text = Path(logs.log4j_file()).read_text()
    assert "rootLogger.level = warn" in text
    assert text.count("onMatch = DENY") == 6  # six message patterns (a stop's cancel too), no logger off
    assert ".level = off" not in text


def test_a_finer_level_set_by_the_process_stays(logged, caplog):
    caplog.set_level(logging.DEBUG, logger="trident_spark")  # as a test or an application may
    assert len(logged("status", "ck")) == 1  # stderr still shows WARNING and above
    assert [r.levelname for r in caplog.records] == ["WARNING", "INFO"]  # the process's own handler: all
