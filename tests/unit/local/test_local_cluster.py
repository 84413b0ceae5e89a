"""StandaloneCluster before it starts: where Spark comes from, and clear misuse errors.

Running a real cluster is covered by the cluster-marked tests.
"""

from __future__ import annotations

import os

import pytest

from trident_spark.local import java
from trident_spark.local.cluster import StandaloneCluster, spark_home
from trident_spark.local.java import JavaVersionError


def test_spark_home_is_the_pyspark_package_with_launch_scripts() -> None:
    home = spark_home()
    assert home.name == "pyspark"
    for script in ("spark-class", "spark-submit"):
        assert os.access(home / "bin" / script, os.X_OK)


@pytest.mark.parametrize("attribute", ["master_url", "web_ui_url", "log_dir"])
def test_addresses_before_start_are_an_error(attribute: str) -> None:
    cluster = StandaloneCluster()
    with pytest.raises(RuntimeError, match="StandaloneCluster is not started"):
        getattr(cluster, attribute)
    cluster.stop()  # stopping a cluster that never started is harmless


def test_start_checks_java_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(java, "find_java", lambda: None)
    monkeypatch.delenv("JAVA_HOME", raising=False)
    with pytest.raises(JavaVersionError, match="Spark needs Java 17"):
        StandaloneCluster().start()
