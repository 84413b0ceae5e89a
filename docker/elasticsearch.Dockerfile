# OpenSearch (one node, no security plugin) from the jar cache, on the local Debian base with
# Debian's Java 17, as the user opensearch. docker/images.sh builds it with a context of its own: the
# jars of trident_spark.local.maven.OPENSEARCH_NODE, their classpath, the launcher class that
# trident_spark.local.opensearch compiles (org.opensearch.node.Node with the netty4 transport), the
# local node's JVM options and log4j2 file (docker/service_context.py) and docker/opensearch/start.sh.
# Run it with --network host; the command is the HTTP and transport ports on 127.0.0.1 (default 9200 9300).
ARG BASE=trident-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends openjdk-17-jre-headless \
 && rm -rf /var/lib/apt/lists/*
# (The layer above is the same in the Kafka and OpenSearch images: built once.)
RUN useradd --system --home-dir /usr/share/opensearch --shell /usr/sbin/nologin opensearch \
 && mkdir -p /usr/share/opensearch/config /usr/share/opensearch/data /usr/share/opensearch/logs \
             /usr/share/opensearch/modules /usr/share/opensearch/plugins /usr/share/opensearch/tmp \
 && chown -R opensearch:opensearch /usr/share/opensearch
COPY jars /opt/service/jars
COPY launcher /opt/service/launcher
COPY classpath jvm.options start.sh /opt/service/
COPY --chown=opensearch:opensearch log4j2.properties /usr/share/opensearch/config/
USER opensearch
ENTRYPOINT ["/opt/service/start.sh"]
CMD ["9200", "9300"]
