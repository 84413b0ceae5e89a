#!/usr/bin/env bash
# Build the local images from Debian and PyPI alone (no container registry needed), with cached layers:
#
#   trident-base:bookworm           Debian bookworm minbase (mmdebstrap, then `docker import`)
#   trident-spark:local             docker/Dockerfile FROM the base: Debian's python3, Java 17,
#                                   trident-spark and its dependencies from wheels built on the host
#   trident-kafka:local             Apache Kafka (KRaft, one node), the jars of the jar cache, Debian's Java 17
#   trident-redis:local             Debian's redis-server
#   trident-elasticsearch:local     OpenSearch (one node, no security plugin), the jars of the jar cache
#                                   and the launcher class trident_spark.local.opensearch compiles
#
# The Kafka and OpenSearch jars are the sets `make setup` caches (trident_spark/local/maven.py), the
# same ones the local services start from; docker/service_context.py copies them into each build
# context. Nothing in a build is fetched except Debian's packages.
# Needs a Docker engine in DOCKER_HOST (docker/dockerd.sh start) and the project's .venv (make setup).
# The first run takes a few minutes; a second one, with nothing changed, seconds: the base tar, the
# host wheels and docker's layer cache are kept in $DOCKER_STATE (default .docker-state/).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${DOCKER_STATE:-$ROOT/.docker-state}"
PY="${PY:-$ROOT/.venv/bin/python}"
DOCKER="${DOCKER:-/usr/bin/docker}"
WHEELS="$ROOT/docker/wheels"
BASE_IMAGE="trident-base:bookworm"
# The legacy builder (docker.io 20.10's default); every build uses the host's network: there is no bridge.
BUILD=("$DOCKER" build --network host)
cd "$ROOT"

[ -n "${DOCKER_HOST:-}" ] || { echo "no Docker engine: ${TRIDENT_DOCKER_UNAVAILABLE:-DOCKER_HOST is not set (docker/dockerd.sh run $0)}" >&2; exit 2; }
has_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }
step() { printf '%s %s\n' "$(date -u +%T)" "$*" >&2; }

# 1. The Debian base: mmdebstrap's tar is kept, so re-importing after a `docker system prune` is quick.
if ! has_image "$BASE_IMAGE"; then
    mkdir -p "$STATE"
    if [ ! -f "$STATE/base.tar" ]; then
        step "mmdebstrap bookworm (minbase) -> $STATE/base.tar"
        rm -rf "$STATE/base-tmp.tar"
        mmdebstrap --quiet --variant=minbase bookworm "$STATE/base-tmp.tar"
        mv "$STATE/base-tmp.tar" "$STATE/base.tar"
    fi
    step "docker import $STATE/base.tar $BASE_IMAGE"
    "$DOCKER" import "$STATE/base.tar" "$BASE_IMAGE" >/dev/null
fi

# 2. Wheels for the app image, built on the host (pip inside a build cannot verify PyPI's TLS here).
#    Rebuilt only when pyproject.toml's requirements change.
requirements="$("$PY" docker/requirements.py)"
stamp="$(printf '%s\n' "$requirements" async-timeout | md5sum | cut -c1-32)"
if [ "$(cat "$WHEELS/.stamp" 2>/dev/null)" != "$stamp" ]; then
    step "pip wheel the app's dependencies -> docker/wheels/"
    printf '%s\n' "$requirements" >"$STATE/requirements.txt"
    # Bookworm's python3 is 3.11.2: redis then also needs async-timeout (python_full_version < 3.11.3),
    # which the host's newer Python would not fetch. setuptools and wheel build trident-spark itself.
    "$PY" -m pip wheel --quiet --wheel-dir "$WHEELS" -r "$STATE/requirements.txt" \
        "async-timeout>=4.0.3" "setuptools>=68" wheel
    echo "$stamp" >"$WHEELS/.stamp"
fi

step "build trident-spark:local (docker/Dockerfile, BASE=$BASE_IMAGE)"
"${BUILD[@]}" -q -f docker/Dockerfile -t trident-spark:local \
    --build-arg BASE="$BASE_IMAGE" --build-arg PIP_OPTIONS="--no-index --find-links /wheels" . >/dev/null

# 3. The services: small contexts of their own, so the app's sources never invalidate them.
for service in kafka redis elasticsearch; do
    context="$STATE/context-$service"
    mkdir -p "$context"
    case "$service" in
        kafka)
            "$PY" docker/service_context.py kafka "$context"
            cp -p docker/kafka/start.sh "$context/" ;;
        elasticsearch)
            "$PY" docker/service_context.py opensearch "$context"
            cp -p docker/opensearch/start.sh "$context/" ;;
    esac
    step "build trident-$service:local"
    "${BUILD[@]}" -q -f "docker/$service.Dockerfile" -t "trident-$service:local" \
        --build-arg BASE="$BASE_IMAGE" "$context" >/dev/null
done
step "images ready"
"$DOCKER" image ls --format '{{.Repository}}:{{.Tag}}\t{{.Size}}' | grep '^trident-' >&2
