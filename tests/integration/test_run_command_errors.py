"""`trident-spark run` as a user runs it, on a topology whose each() raises: exit status 1 and a
short stderr naming the operator and the error, no traceback and none of Spark's repeats of it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

APP = '''
from trident_spark import Fields, TridentTopology
from trident_spark.operation import BaseFunction
from trident_spark.spout import FixedBatchSpout


class Parse(BaseFunction):
    def execute(self, tuple, collector):
        raise ValueError(f"cannot parse {tuple.getString(0)!r}")


topology = TridentTopology()
(topology.newStream("lines", FixedBatchSpout(Fields("line"), 2, ["a"], ["b"]))
 .each(["line"], Parse(), ["n"]).name("parse"))
'''


def test_an_operator_that_raises_ends_the_run_with_one_error_line(tmp_path):
    app = tmp_path / "app.py"
    app.write_text(APP)
    cli = Path(sys.executable).with_name("trident-spark")
    env = {**os.environ, "PYSPARK_PYTHON": sys.executable}
    env.pop("SPARK_SUBMIT_OPTS", None)
    argv = [str(cli), "run", str(app), "--available-now", "--checkpoint", str(tmp_path / "ck")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, env=env, cwd=tmp_path)
    assert done.returncode == 1, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert "Traceback" not in done.stderr and "PythonException" not in done.stderr, done.stderr[-3000:]
    assert lines[-1] == ("error: parse failed on tuple {'line': 'a'}: ValueError: cannot parse 'a' "
                         "(stream 'lines')")
    # the JVM's own notice, the run's first line, the error (was 269 lines of Spark's log4j)
    assert len(lines) <= 5, done.stderr
    assert done.stdout == ""
