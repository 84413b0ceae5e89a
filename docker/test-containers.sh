#!/usr/bin/env bash
# `make test-containers`, run by docker/dockerd.sh run (which sets DOCKER_HOST, or
# TRIDENT_DOCKER_UNAVAILABLE when Docker cannot be had):
#   1. builds the local images (docker/images.sh; cached);
#   2. the compose cluster and fault tests (tests/integration/containers, marked `containers`);
#   3. one integration module with the fixtures' testcontainers provider on the local images.
# Without Docker, step 2 skips its tests saying why, and steps 1 and 3 are left out.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PY:-$ROOT/.venv/bin/python}"
cd "$ROOT"

if [ -n "${DOCKER_HOST:-}" ]; then
    docker/images.sh
fi
# testcontainers' reaper image comes from a registry; the fixtures stop their containers themselves
# (test_service_images.py starts the local images through the testcontainers provider).
export TESTCONTAINERS_RYUK_DISABLED=true
"$PY" -m pytest tests/integration/containers -m containers "$@"

if [ -z "${DOCKER_HOST:-}" ]; then
    echo "testcontainers module skipped: ${TRIDENT_DOCKER_UNAVAILABLE:-no Docker engine}" >&2
    exit 0
fi
export TRIDENT_KAFKA_IMAGE=trident-kafka:local TRIDENT_REDIS_IMAGE=trident-redis:local \
       TRIDENT_ELASTICSEARCH_IMAGE=trident-elasticsearch:local
unset KAFKA_BOOTSTRAP_SERVERS REDIS_URL ELASTICSEARCH_URL
"$PY" -c '
import sys
from trident_spark.local.services import SERVICE_NAMES, describe_provider
chosen = {name: describe_provider(name) for name in SERVICE_NAMES}
if any(not provider.startswith("testcontainers") for provider in chosen.values()):
    sys.exit(f"the fixtures would not use testcontainers: {chosen}")
'
"$PY" -m pytest tests/integration/exactly_once/test_wordcount_exact.py "$@"
