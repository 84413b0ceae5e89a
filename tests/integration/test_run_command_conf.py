"""`trident-spark run --conf spark.trident.*`: the command takes a run's settings from the Spark conf
where no option gives them, an option wins, and a bad value is one error line naming the key."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

APP = '''
from trident_spark import Fields, TridentTopology
from trident_spark.spout import FixedBatchSpout

topology = TridentTopology()
topology.newStream("words", FixedBatchSpout(Fields("word"), 2, ["a"], ["b"], ["c"])).collect()
'''


def run_command(tmp_path: Path, *options: str) -> subprocess.CompletedProcess[str]:
    app = tmp_path / "app.py"
    app.write_text(APP)
    cli = Path(sys.executable).with_name("trident-spark")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_SUBMIT_OPTS", None)
    return subprocess.run([str(cli), "run", str(app), *options], capture_output=True, text=True,
                          timeout=300, env=env, cwd=tmp_path)


def test_conf_settings_stand_in_for_options_not_given(tmp_path: Path):
    checkpoint = tmp_path / "from-conf"
    done = run_command(tmp_path, "--conf", "spark.trident.trigger=available_now",
                       "--conf", f"spark.trident.checkpointLocation={checkpoint}",
                       "--conf", "spark.trident.drpc.path=spark",
                       "--conf", "spark.trident.outageBudget=forever",
                       "--outage-budget", "90s")  # given: the conf's unreadable value is never read
    assert done.returncode == 0, done.stderr[-3000:]
    assert f"running {tmp_path / 'app.py'} (checkpoint {checkpoint}, trigger available_now)" in (
        done.stderr.splitlines())
    run_info = json.loads((checkpoint / "trident-run.json").read_text())
    assert (run_info["trigger"], run_info["stopped"] is not None) == ("available_now", True)
    assert not (tmp_path / "checkpoints").exists()  # the command's own default was not used


def test_a_bad_conf_value_is_one_error_line(tmp_path: Path):
    done = run_command(tmp_path, "--available-now", "--checkpoint", str(tmp_path / "ck"),
                       "--conf", "spark.trident.maxBatchRetries=-2")
    assert done.returncode == 1, done.stderr[-3000:]
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        "error: Spark conf spark.trident.maxBatchRetries='-2': give an int >= 0 (replays of a batch that "
        "raises FailedException); it comes from --conf, spark-defaults.conf or SparkSession.builder.config() "
        "(a value given to run() takes its place)")
