"""The SparkSession a topology runs in: local on this machine's cores when the user gives none,
and never a Spark Connect client (:func:`require_classic`)."""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from trident_spark.errors import TopologyError

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger(__name__)

LOCAL_DEFAULTS = {
    "spark.ui.showConsoleProgress": "false",
    "spark.sql.shuffle.partitions": str(max(2, os.cpu_count() or 2)),
    # Many short micro-batches: keep scheduling overhead low.
    "spark.sql.streaming.noDataMicroBatches.enabled": "false",
    "spark.sql.adaptive.enabled": "false",
    # PySpark's DataFrame debugging records the caller's Python stack in the JVM for every
    # column expression and function call (a dozen py4j round trips each): the planning of a
    # batch pays it hundreds of times. Errors still name the operator (ours do).
    "spark.python.sql.dataFrameDebugging.enabled": "false",
    # A batch plans its outputs anew, and Spark compiles each plan's generated code, cached by
    # its text: with more than a few outputs the default 100 entries are evicted before the next
    # batch asks for the same code again, and every batch compiles it all again (Janino).
    "spark.sql.codegen.cache.maxEntries": "2000",
}


def python_for_workers() -> None:
    """Make Spark's Python workers use this interpreter.

    Without it they start the system ``python3``, which lacks our packages and
    hangs with "Python worker failed to connect back".
    """
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("PYSPARK_DRIVER_PYTHON", sys.executable)


def needs_kafka_connector(spouts: Iterable[object]) -> bool:
    """Whether one of ``spouts`` reads through Spark's own Kafka source (``KafkaSpout(engine="jvm")``
    says so with ``needs_kafka_connector``), so the session needs the connector's jars.

    Examples
    --------
    >>> class JvmSpout:
    ...     needs_kafka_connector = True
    >>> needs_kafka_connector([object(), JvmSpout()])
    True
    """
    return any(getattr(spout, "needs_kafka_connector", False) for spout in spouts)


def kafka_connector_conf(conf: dict[str, str] | None = None) -> dict[str, str]:
    """``conf`` with Spark's Kafka connector on ``spark.jars``: its jars from the local cache, fetched
    from Maven Central the first time (:func:`trident_spark.local.maven.spark_kafka_connector_jars`).
    When they cannot be had (no Maven, no network) ``conf`` is returned as it is, with a warning;
    reading then fails with the coordinates to put on ``spark.jars.packages``.

    Examples
    --------
    >>> kafka_connector_conf({"spark.jars": "/opt/my.jar"})["spark.jars"]   # doctest: +SKIP
    '/opt/my.jar,/root/.cache/trident-spark/jars/spark-kafka-.../commons-pool2-2.13.1.jar,...'
    """
    from trident_spark.local.maven import spark_kafka_connector_jars

    conf = dict(conf or {})
    try:
        jars = spark_kafka_connector_jars()
    except Exception as failure:  # a missing connector is named again, with what to do, when read
        log.warning("Spark's Kafka connector could not be put on the classpath: %s", failure)
        return conf
    given = [jar for jar in conf.get("spark.jars", "").split(",") if jar]
    conf["spark.jars"] = ",".join([*given, *(str(jar) for jar in jars)])
    return conf


def local_session(app_name: str = "trident-spark", master: str | None = None,
                  conf: dict[str, str] | None = None, *, kafka_connector: bool = False) -> SparkSession:
    """A SparkSession for local runs (or the active one, if there is one).

    ``kafka_connector``: put Spark's own Kafka source and sink on the classpath
    (:func:`kafka_connector_conf`), for ``KafkaSpout(engine="jvm")`` and ``format("kafka")``.
    An active session is returned as it is.

    Examples
    --------
    >>> spark = local_session("wordcount")        # doctest: +SKIP
    """
    from pyspark.sql import SparkSession

    from trident_spark.local.java import require_java

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    require_java()
    python_for_workers()
    if kafka_connector:
        conf = kafka_connector_conf(conf)
    master = master or os.environ.get("SPARK_MASTER", f"local[{os.cpu_count() or 2}]")
    if master.startswith("local"):
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # one machine: no interface lookup, no warning
    builder = SparkSession.builder.appName(app_name).master(master)
    builder = builder.config("spark.pyspark.python", os.environ["PYSPARK_PYTHON"])
    for key, value in {**LOCAL_DEFAULTS, **(conf or {})}.items():
        builder = builder.config(key, value)
    # The quiet log4j configuration reaches the driver JVM through SPARK_SUBMIT_OPTS, read when
    # the JVM starts: set for that moment only, so the processes this one starts later (a
    # subprocess asking for Spark's whole log, say) do not inherit it.
    submit_opts = os.environ.get("SPARK_SUBMIT_OPTS")
    quiet_driver_logging(conf)
    try:
        spark = builder.getOrCreate()
    finally:
        if submit_opts is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = submit_opts
    spark.sparkContext.setLogLevel(os.environ.get("TRIDENT_SPARK_LOG_LEVEL", "WARN"))
    return spark


#: Spark's log4j2 configuration without the lines that repeat one task failure (the package's).
LOG4J_FILE = "log4j2-cli.properties"


def quiet_driver_logging(conf: dict[str, str] | None = None,
                         environ: dict[str, str] | os._Environ[str] | None = None) -> bool:
    """Start the driver JVM a session builds with the package's log4j2 configuration, as the
    ``trident-spark`` command does: a failing task then reaches the console as its one error
    (raised by ``processAllAvailable``/``awaitTermination``), not as Spark's task-failure dump
    repeated per retry. False, changing nothing, when a JVM runs already, the user configured
    log4j (``SPARK_SUBMIT_OPTS``, ``spark.driver.extraJavaOptions``, a ``log4j2.properties`` in
    ``SPARK_CONF_DIR``), or ``TRIDENT_SPARK_SPARK_LOGS=full`` asks for Spark's own logging.

    Examples
    --------
    >>> env = {}
    >>> quiet_driver_logging({}, env), "log4j2-cli.properties" in env["SPARK_SUBMIT_OPTS"]
    (True, True)
    >>> quiet_driver_logging({}, {"TRIDENT_SPARK_SPARK_LOGS": "full"})
    False
    """
    import importlib.resources

    from pyspark import SparkContext

    env = os.environ if environ is None else environ
    if SparkContext._active_spark_context is not None or env.get("TRIDENT_SPARK_SPARK_LOGS") == "full":
        return False
    if "log4j2.configurationFile" in env.get("SPARK_SUBMIT_OPTS", "") + (conf or {}).get(
            "spark.driver.extraJavaOptions", ""):
        return False
    conf_dir = env.get("SPARK_CONF_DIR") or (f"{env['SPARK_HOME']}/conf" if env.get("SPARK_HOME") else "")
    if conf_dir and os.path.isfile(os.path.join(conf_dir, "log4j2.properties")):
        return False
    from pathlib import Path

    uri = Path(str(importlib.resources.files("trident_spark").joinpath("data", LOG4J_FILE))).as_uri()
    env["SPARK_SUBMIT_OPTS"] = f"-Dlog4j2.configurationFile={uri} {env.get('SPARK_SUBMIT_OPTS', '')}".strip()
    return True


def default_filesystem(spark: Any) -> str | None:
    """Spark's default filesystem (Hadoop's ``fs.defaultFS``: ``file:///``, ``hdfs://nn:8020`` ...),
    against which it resolves a checkpoint given as a plain path; None if it cannot be read."""
    try:
        value = spark.sparkContext._jsc.hadoopConfiguration().get("fs.defaultFS")
    except Exception:  # not a classic session (require_classic says so), or no JVM (tests)
        return None
    return str(value) if value else None


def require_classic(spark: Any, where: str = "run()") -> None:
    """Refuse a Spark Connect session (``SparkSession.builder.remote(...)``, ``SPARK_REMOTE``):
    a topology drives each batch on the driver through what a Connect client does not have.

    Examples
    --------
    >>> class ConnectSession:               # what a Connect session's class looks like
    ...     __module__ = "pyspark.sql.connect.session"
    >>> require_classic(ConnectSession())
    Traceback (most recent call last):
    ...
    trident_spark.errors.TopologyError: run(): this is a Spark Connect session ...
    """
    if spark is None or not type(spark).__module__.startswith("pyspark.sql.connect"):
        return
    raise TopologyError(
        f"{where}: this is a Spark Connect session (a client of a remote Spark); trident-spark needs a "
        "classic session on the driver: each batch runs through the SparkContext (accumulators for the "
        "tasks' counters, Spark's status store, a streaming listener over py4j, SparkContext.addPyFile) "
        "and foreachBatch must call back into this process. Run the topology where the driver runs "
        "(spark-submit, or SparkSession.builder.master(...)); see docs/deployment.md#spark-connect")

