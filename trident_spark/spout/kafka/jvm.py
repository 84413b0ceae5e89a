"""``KafkaSpout(engine="jvm")``: the same options on Spark's own ``kafka`` source.

That source lives in the ``spark-sql-kafka-0-10`` connector (Maven Central), which a
session built by ``run()`` puts on its classpath (``runtime/session.py``); a session
without it fails here with :class:`MissingConnectorError`, naming the coordinates.
Spark's source bounds a batch by records, not bytes, so Trident's max-fetch-bytes rule
becomes ``maxOffsetsPerTrigger``: ``partitions x max_fetch_bytes / record_bytes``, with
the record size measured from the head of the topic when the query starts.
"""

from __future__ import annotations

import json
import logging
import math
import re
from typing import TYPE_CHECKING, Any

from trident_spark.errors import SpoutError
from trident_spark.spout.kafka.config import KafkaSpoutConfig
from trident_spark.state.redaction import redact_options

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

log = logging.getLogger(__name__)


class MissingConnectorError(SpoutError):
    """``KafkaSpout(engine="jvm")`` in a SparkSession without Spark's Kafka connector.

    Examples
    --------
    >>> issubclass(MissingConnectorError, SpoutError)
    True
    """


def connector_coordinates() -> str:
    """The connector's Maven coordinates for ``spark.jars.packages``: the installed Spark's version,
    or the version chosen when that one is not served (from the local cache; nothing is fetched).

    Examples
    --------
    >>> connector_coordinates().startswith("org.apache.spark:spark-sql-kafka-0-10_2.13:4.")
    True
    """
    from trident_spark.local.maven import (
        SPARK_KAFKA_ARTIFACT,
        SPARK_KAFKA_GROUP,
        spark_kafka_connector_version,
    )

    return f"{SPARK_KAFKA_GROUP}:{SPARK_KAFKA_ARTIFACT}:{spark_kafka_connector_version(cached_only=True)}"


def missing_connector(failure: BaseException) -> MissingConnectorError | None:
    """Our error for Spark's "Failed to find the data source: kafka", else None.

    Examples
    --------
    >>> error = missing_connector(Exception("[DATA_SOURCE_NOT_FOUND] Failed to find the data source: kafka."))
    >>> "spark.jars.packages" in str(error)
    True
    >>> missing_connector(Exception("something else")) is None
    True
    """
    if re.search(r"Failed to find (the )?data source: kafka\b", str(failure)) is None:
        return None
    coordinates = connector_coordinates()
    return MissingConnectorError(
        "KafkaSpout(engine='jvm'): this SparkSession does not have Spark's Kafka connector (Spark says: "
        "Failed to find the data source: kafka). Start the session with "
        f"`.config(\"spark.jars.packages\", \"{coordinates}\")` (spark-submit: --packages {coordinates}), or "
        "put its jars on spark.jars; or let run() build the session (spark=None), which fetches it into "
        "the local jar cache; or use engine='python', which needs no jar")


def jvm_options(config: KafkaSpoutConfig, *, partitions: int | None = None,
                record_bytes: float | None = None) -> dict[str, str]:
    """Options for ``spark.readStream.format("kafka")`` equivalent to ``config``.

    ``partitions`` and ``record_bytes`` (measured) are needed only when
    ``max_fetch_bytes`` is set.

    Examples
    --------
    >>> cfg = KafkaSpoutConfig("b:9092", topics=("t",), max_fetch_bytes=100_000)
    >>> jvm_options(cfg, partitions=12, record_bytes=1000.0)["maxOffsetsPerTrigger"]
    '1200'
    """
    opts: dict[str, str] = {"kafka.bootstrap.servers": config.bootstrap_servers}
    if config.topics:
        opts["subscribe"] = ",".join(config.topics)
    else:
        opts["subscribePattern"] = config.pattern or ""
    offsets = config.starting_offsets
    opts["startingOffsets"] = offsets if isinstance(offsets, str) else json.dumps(offsets, sort_keys=True)
    opts["failOnDataLoss"] = "true" if config.fail_on_data_loss else "false"
    max_rows = config.max_offsets_per_trigger
    if config.max_fetch_bytes:
        if not partitions or not record_bytes:
            raise ValueError("max_fetch_bytes on engine='jvm' needs the partition count and the "
                             "measured record size")
        by_bytes = max(partitions, math.floor(partitions * config.max_fetch_bytes / record_bytes))
        max_rows = min(max_rows, by_bytes) if max_rows else by_bytes
    if max_rows:
        opts["maxOffsetsPerTrigger"] = str(max_rows)
    if config.min_offsets_per_trigger:
        opts["minOffsetsPerTrigger"] = str(config.min_offsets_per_trigger)
        opts["maxTriggerDelay"] = f"{round(config.max_trigger_delay_s * 1000)}ms"
    if config.min_partitions:
        opts["minPartitions"] = str(config.min_partitions)
    if config.include_headers:
        opts["includeHeaders"] = "true"
    for name, value in sorted(config.kafka_options.items()):
        opts[f"kafka.{name}"] = str(value).lower() if isinstance(value, bool) else str(value)
    return opts


def measure_topic(config: KafkaSpoutConfig) -> tuple[int, float | None]:
    """Partition count and average record bytes, sampled from the head of each partition."""
    from trident_spark.spout.kafka.client import KafkaBrokerClient

    client = KafkaBrokerClient(config)
    try:
        partitions = client.topic_partitions()
        probes = client.probe(client.earliest_offsets(partitions), config.size_sample_bytes)
    finally:
        client.close()
    sizes = [size for p in probes.values() for size in p.sample.sizes]
    return len(partitions), (sum(sizes) / len(sizes) if sizes else None)


def jvm_dataframe(spark: SparkSession, config: KafkaSpoutConfig) -> DataFrame:
    """Spark's ``kafka`` source read with ``config``, shaped like the Python spout's records."""
    from pyspark.sql import functions as F

    partitions, record_bytes = (None, None)
    if config.max_fetch_bytes:
        partitions, record_bytes = measure_topic(config)
        record_bytes = record_bytes or float(config.max_fetch_bytes)
    opts = jvm_options(config, partitions=partitions, record_bytes=record_bytes)
    if config.max_fetch_bytes:
        log.info("KafkaSpout(engine='jvm'): max_fetch_bytes=%d over %d partitions of ~%.0f-byte records "
                 "is maxOffsetsPerTrigger=%s for this run", config.max_fetch_bytes, partitions,
                 record_bytes, opts["maxOffsetsPerTrigger"])
    log.info("KafkaSpout(engine='jvm') options: %s", redact_options(opts))
    try:
        raw = spark.readStream.format("kafka").options(**opts).load()
    except Exception as failure:
        missing = missing_connector(failure)
        if missing is None:
            raise
        raise missing from None
    key = F.col("key").cast("string") if config.key_format == "str" else F.col("key")
    if config.value_format == "json":
        mode = {"mode": "FAILFAST"} if config.on_malformed == "fail" else {}
        value = F.from_json(F.col("value").cast("string"), config.value_schema or "", mode)
    elif config.value_format == "str":
        value = F.col("value").cast("string")
    else:
        value = F.col("value")
    columns: list[Any] = [key.alias("key"), value.alias("value"), "topic",
               F.col("partition").cast("int").alias("partition"), "offset", "timestamp"]
    if config.include_headers:
        columns.append("headers")
    if config.on_malformed != "fail":
        bad = F.col("value").isNotNull() & value.isNull()
        columns.append(F.when(bad, F.lit("value is not JSON matching value_schema")).alias("malformed"))
    return raw.select(*columns)  # type: ignore[no-any-return]
