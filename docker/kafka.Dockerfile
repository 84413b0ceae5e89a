# Apache Kafka (KRaft, one node: broker and controller) from the jar cache, on the local Debian base
# with Debian's Java 17. docker/images.sh builds it with a context of its own: the jars of
# trident_spark.local.maven.KAFKA_BROKER, their classpath, the local broker's JVM options and log4j
# files (docker/service_context.py) and docker/kafka/start.sh. Run it with --network host; the
# command is the client and controller ports on 127.0.0.1 (default 9092 9093).
ARG BASE=trident-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
# (The layer above is the same in the Kafka and OpenSearch images: built once.)
RUN useradd --system --home-dir /var/lib/kafka --shell /usr/sbin/nologin kafka \
 && mkdir -p /var/lib/kafka && chown kafka:kafka /var/lib/kafka
COPY jars /opt/service/jars
COPY classpath jvm.options log4j.properties log4j2.properties start.sh /opt/service/
USER kafka
ENTRYPOINT ["/opt/service/start.sh"]
CMD ["9092", "9093"]
