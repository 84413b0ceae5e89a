"""Local services for tests, the demo and benchmarks.

Kafka, Redis and Elasticsearch come from the environment, a Docker container
or a local process (Kafka: Apache Kafka from Maven Central's jars by default,
:mod:`trident_spark.local.apache_kafka`; or Tansu), PostgreSQL from the environment or a local server
(:mod:`trident_spark.local.services`), a Redis Cluster of local redis-server nodes
(:func:`~trident_spark.local.redis_cluster.start_redis_cluster`); topics are created,
filled and read with :mod:`trident_spark.local.kafka`; a Spark standalone
cluster runs from the pyspark install (:mod:`trident_spark.local.cluster`).

Examples
--------
>>> from trident_spark.local import start_kafka, create_topic, produce
>>> with start_kafka() as kafka:  # doctest: +SKIP
...     create_topic(kafka.address, "words", 4)
...     produce(kafka.address, "words", ["the cat", "a dog"])
2
"""

from trident_spark.local.cluster import StandaloneCluster, spark_home
from trident_spark.local.java import JavaVersionError, java_major_version, require_java
from trident_spark.local.kafka import (
    ConsumedRecord,
    KafkaHelperError,
    consume,
    create_topic,
    produce,
    wait_for_partitions,
)
from trident_spark.local.launchers import ServiceNotInstalledError
from trident_spark.local.process import ServiceStartError
from trident_spark.local.redis_cluster import RedisClusterHandle, start_redis_cluster
from trident_spark.local.service_handle import Provider, ServiceHandle, ServiceName
from trident_spark.local.services import (
    ELASTICSEARCH_ENV,
    ENV_VARS,
    KAFKA_ENV,
    KAFKA_KINDS,
    POSTGRES_ENV,
    REDIS_ENV,
    choose_provider,
    describe_provider,
    start_elasticsearch,
    start_kafka,
    start_postgres,
    start_redis,
    start_service,
)

__all__ = [
    "ELASTICSEARCH_ENV",
    "ENV_VARS",
    "KAFKA_ENV",
    "KAFKA_KINDS",
    "POSTGRES_ENV",
    "REDIS_ENV",
    "ConsumedRecord",
    "JavaVersionError",
    "KafkaHelperError",
    "Provider",
    "RedisClusterHandle",
    "ServiceHandle",
    "ServiceName",
    "ServiceNotInstalledError",
    "ServiceStartError",
    "StandaloneCluster",
    "choose_provider",
    "consume",
    "create_topic",
    "describe_provider",
    "java_major_version",
    "produce",
    "require_java",
    "spark_home",
    "start_elasticsearch",
    "start_kafka",
    "start_postgres",
    "start_redis",
    "start_redis_cluster",
    "start_service",
    "wait_for_partitions",
]
