"""Fill the jar cache once (``make setup``): the Kafka broker, the OpenSearch node, Spark's Kafka connector.

``python -m trident_spark.local.jar_cache`` fetches each set Maven Central has not given this
machine yet (:func:`trident_spark.local.maven.resolve_jars`) and prints where each one is; sets
already in the cache cost nothing. Tests, the demo and the benchmarks then start without the
network. The local services' sets are needed (a failure fails ``make setup``); Spark's
connector is optional (``KafkaSpout(engine="jvm")`` only): a failure there is a note.
"""

from __future__ import annotations

import argparse
import sys
import time

from trident_spark.local.maven import (
    KAFKA_BROKER,
    OPENSEARCH_NODE,
    ArtifactSet,
    cache_root,
    resolve_jars,
    spark_kafka_connector,
    spark_kafka_connector_version,
)
from trident_spark.local.process import ServiceStartError

__all__ = ["main", "wanted_sets"]


def wanted_sets() -> list[tuple[ArtifactSet, bool]]:
    """The sets the project runs with, each with whether it is needed: the broker, the node (needed),
    Spark's Kafka connector at the installed PySpark's version, or the newest served release
    not newer (optional).

    Examples
    --------
    >>> [(s.name, needed) for s, needed in wanted_sets()]
    [('kafka-broker', True), ('opensearch-node', True), ('spark-kafka', False)]
    """
    try:
        connector = spark_kafka_connector_version()
    except ServiceStartError:  # Maven Central out of reach: main() reports the set as not fetched
        import pyspark

        connector = pyspark.__version__
    return [(KAFKA_BROKER, True), (OPENSEARCH_NODE, True), (spark_kafka_connector(connector), False)]


def main(argv: list[str] | None = None) -> int:
    """Fetch every wanted set missing from the cache; 0 when the needed ones are there, 1 (and why) if not.

    Examples
    --------
    >>> main(["--help"])  # doctest: +SKIP
    """
    parser = argparse.ArgumentParser(prog="python -m trident_spark.local.jar_cache",
                                     description=__doc__.split("\n\n")[0])
    parser.parse_args(argv)
    failed = 0
    for artifacts, needed in wanted_sets():
        started = time.monotonic()
        try:
            jars = resolve_jars(artifacts)
        except ServiceStartError as error:
            if needed:
                print(f"jars: {artifacts.name}: {error}", file=sys.stderr)
                failed += 1
            else:
                first = str(error).splitlines()[0]
                print(f"jars: note: {artifacts.name} (optional) is not in the cache: {first}",
                      file=sys.stderr)
            continue
        size = sum(jar.stat().st_size for jar in jars) / 2**20
        print(f"jars: {artifacts.name}: {len(jars)} jars, {size:.0f} MB in "
              f"{cache_root() / artifacts.directory_name} ({time.monotonic() - started:.1f} s)")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
