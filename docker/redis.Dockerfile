# Redis from Debian (bookworm's redis-server 7.0) on the local Debian base. Built by docker/images.sh.
ARG BASE=trident-base:bookworm
FROM ${BASE}
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends redis-server redis-tools \
 && rm -rf /var/lib/apt/lists/* \
 && mkdir -p /data
WORKDIR /data
CMD ["redis-server", "--bind", "127.0.0.1", "--port", "6379", "--save", "", "--appendonly", "no"]
