# The Elasticsearch/OpenSearch REST API: osmem-server (in memory), the static binary of its PyPI wheel,
# on the local Debian base. Built by docker/images.sh with a context holding only the binary.
ARG BASE=trident-base:bookworm
FROM ${BASE}
COPY osmem-server /usr/local/bin/osmem-server
ENTRYPOINT ["/usr/local/bin/osmem-server", "--no-ja", "--no-stdin-watch"]
CMD ["--addr", "127.0.0.1:9200"]
