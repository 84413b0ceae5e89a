"""``handle.stop()`` from a script or a notebook logs no "Failed to cancel job group", and hides nothing else.

Stopping a streaming query cancels its job group whether or not a batch runs, and Spark's
DAGScheduler warns when none does. ``trident-spark run`` and sessions ``run()`` builds log with the
package's log4j2 configuration, which drops that line; a session the user built logs with Spark's
own, and ``handle.stop()`` adds the same one-message filter there. A driver program
(``quiet_stop_driver.py``) in a subprocess runs and stops two runs in a session it built, then
logs another warning of the same logger, which must still show.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.driver_processes import REPO

pytestmark = [pytest.mark.integration]

DRIVER = Path(__file__).with_name("quiet_stop_driver.py")


@pytest.mark.parametrize("session", ["own", "library"])
def test_stopping_logs_no_job_group_warning_and_keeps_other_warnings(tmp_path: Path, session: str):
    env = {**os.environ, "PYTHONPATH": str(REPO), "PYSPARK_PYTHON": sys.executable}
    env.pop("TRIDENT_SPARK_SPARK_LOGS", None)
    done = subprocess.run([sys.executable, str(DRIVER), str(tmp_path), session], cwd=REPO, env=env,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    lines = done.stderr.splitlines()
    assert [line for line in lines if line.startswith("stopped ")] == [
        "stopped 0 after 3 rows", "stopped 1 after 3 rows"], done.stderr[-3000:]
    assert [line for line in lines if "Failed to cancel job group" in line] == []
    assert [line for line in lines if "DAGScheduler" in line and "no job group's" in line] != [], (
        done.stderr[-3000:])
    assert "IPython imported: False" in lines  # no live table outside a notebook, no IPython import
    assert lines[-1] == "done"
