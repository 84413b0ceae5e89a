"""KafkaSpout(engine="jvm") on Spark's own Kafka source."""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.integration


def _connector_on_classpath() -> bool:
    from pathlib import Path

    import pyspark

    jars = Path(pyspark.__file__).parent / "jars"
    return any(jar.name.startswith("spark-sql-kafka") for jar in jars.glob("*.jar"))


@pytest.mark.skipif(not _connector_on_classpath(),
                    reason="the spark-sql-kafka connector jar is not installed, and Maven Central (where it "
                           "lives) is not reachable from our machines; the option mapping is unit-tested")
def test_jvm_engine_reads_the_same_records_as_the_python_engine(spark, kafka_bootstrap, new_topic, tmp_path):
    from trident_spark import TridentTopology
    from trident_spark.local.kafka import produce
    from trident_spark.spout import KafkaSpout

    topic = new_topic(partitions=2)
    produce(kafka_bootstrap, topic, [(None, f"r{i}".encode(), i % 2) for i in range(100)])
    results = {}
    for engine in ("python", "jvm"):
        topology = TridentTopology()
        spout = KafkaSpout(kafka_bootstrap, [topic], max_fetch_bytes=200, engine=engine)
        sink = topology.newStream(f"engine-{engine}", spout).collect()
        handle = topology.run(checkpoint_location=tmp_path / engine, trigger="available_now", spark=spark)
        handle.awaitTermination(120)
        handle.stop()
        results[engine] = sorted((t["partition"], t["offset"], t["value"]) for t in sink.tuples)
    assert results["jvm"] == results["python"]
