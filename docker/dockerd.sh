#!/usr/bin/env bash
# A private Docker engine for the container tests and `make images`: its own data root, exec root
# and socket under $DOCKER_STATE (default .docker-state/ in the repository), no bridge, no iptables,
# so it touches nothing of the host's networking and no other Docker engine.
#
#   docker/dockerd.sh install   # root only: apt-get install docker.io docker-compose mmdebstrap if missing
#   docker/dockerd.sh start     # starts dockerd (if not running), prints: export DOCKER_HOST=unix://...
#   docker/dockerd.sh env       # prints the export line of a running engine
#   docker/dockerd.sh stop      # stops the dockerd this script started (by its PID file)
#   docker/dockerd.sh status    # exit 0 when the engine answers
#   docker/dockerd.sh run CMD.. # install and start when needed, run CMD with DOCKER_HOST set, then stop
#                               # the engine if this call started it; when Docker cannot be had, CMD
#                               # runs without DOCKER_HOST and with TRIDENT_DOCKER_UNAVAILABLE=<why>
#
# Containers on this engine have host networking only (--network host): there is no bridge.
# Exits 3 with a one-line reason on stderr when Docker cannot be had (not root, no apt-get, ...).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
STATE="${DOCKER_STATE:-$ROOT/.docker-state}"
# The socket path must stay short (unix sockets allow ~108 bytes): keep it under /run or /tmp.
RUNDIR="${DOCKER_RUNDIR:-/tmp/trident-dockerd-$(printf %s "$STATE" | md5sum | cut -c1-8)}"
SOCK="$RUNDIR/docker.sock"
PIDFILE="$RUNDIR/dockerd.pid"
LOG="$STATE/dockerd.log"
# Debian's client, not any other `docker` earlier on PATH: it matches the engine's API.
DOCKER="${DOCKER:-/usr/bin/docker}"

unavailable() { echo "docker unavailable: $*" >&2; exit 3; }

answers() { [ -S "$SOCK" ] && DOCKER_HOST="unix://$SOCK" "$DOCKER" version >/dev/null 2>&1; }

install() {
    local missing=()
    command -v dockerd >/dev/null || [ -x /usr/sbin/dockerd ] || missing+=(docker.io)
    [ -x /usr/bin/docker ] || missing+=(docker.io)
    command -v docker-compose >/dev/null || missing+=(docker-compose)
    command -v mmdebstrap >/dev/null || missing+=(mmdebstrap)
    [ ${#missing[@]} -eq 0 ] && return 0
    [ "$(id -u)" = 0 ] || unavailable "not root, and missing: ${missing[*]} (apt-get install ${missing[*]})"
    command -v apt-get >/dev/null || unavailable "no apt-get to install ${missing[*]}"
    echo "installing ${missing[*]} with apt-get" >&2
    apt-get update -qq
    # Debian's docker.io starts the system-wide engine on install; we never use or stop it.
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
        $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
}

start() {
    if answers; then
        echo "export DOCKER_HOST=unix://$SOCK"
        return 0
    fi
    [ "$(id -u)" = 0 ] || unavailable "dockerd needs root"
    local dockerd
    dockerd="$(command -v dockerd || echo /usr/sbin/dockerd)"
    [ -x "$dockerd" ] || unavailable "dockerd is not installed (docker/dockerd.sh install)"
    mkdir -p "$STATE/data" "$RUNDIR/exec"
    # setsid: the engine outlives this script (make runs it in a recipe line); stop() ends it by PID.
    setsid "$dockerd" \
        --data-root "$STATE/data" --exec-root "$RUNDIR/exec" --pidfile "$PIDFILE" \
        -H "unix://$SOCK" --bridge=none --iptables=false --ip6tables=false \
        >"$LOG" 2>&1 </dev/null &
    local pid=$! i
    for i in $(seq 1 60); do
        if answers; then
            echo "dockerd pid $pid, log $LOG" >&2
            echo "export DOCKER_HOST=unix://$SOCK"
            return 0
        fi
        kill -0 "$pid" 2>/dev/null || { tail -20 "$LOG" >&2; unavailable "dockerd exited (log $LOG)"; }
        sleep 0.5
    done
    tail -20 "$LOG" >&2
    unavailable "dockerd did not answer within 30 s (log $LOG)"
}

stop() {
    [ -f "$PIDFILE" ] || return 0
    local pid i
    pid="$(cat "$PIDFILE")"
    if kill -0 "$pid" 2>/dev/null; then
        # Stop our containers first so their shims do not linger after the engine.
        if answers; then
            local running
            running="$(DOCKER_HOST="unix://$SOCK" "$DOCKER" ps -q)"
            [ -z "$running" ] || DOCKER_HOST="unix://$SOCK" "$DOCKER" stop -t 5 $running >/dev/null || true
        fi
        kill -TERM "$pid"
        for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || break; sleep 0.5; done
        kill -0 "$pid" 2>/dev/null && kill -KILL "$pid"
    fi
    rm -f "$PIDFILE"
    echo "dockerd stopped" >&2
}

run() {
    local line reason rc=0 started=0
    if [ -n "${DOCKER_HOST:-}" ] && "$DOCKER" version >/dev/null 2>&1; then
        echo "using the engine at DOCKER_HOST=$DOCKER_HOST" >&2
    elif reason="$( (install) 2>&1 >/dev/null)" && { answers || started=1; } \
         && line="$( (start) 2>"$RUNDIR.err")"; then
        eval "$line"
        export DOCKER_HOST
    else
        [ -n "${reason:-}" ] || reason="$(cat "$RUNDIR.err" 2>/dev/null)"
        started=0
        unset DOCKER_HOST
        export TRIDENT_DOCKER_UNAVAILABLE="${reason:-dockerd did not start}"
        echo "$TRIDENT_DOCKER_UNAVAILABLE" >&2
    fi
    rm -f "$RUNDIR.err"
    "$@" || rc=$?
    [ "$started" = 0 ] || stop
    return "$rc"
}

case "${1:-}" in
    install) install ;;
    start) start ;;
    stop) stop ;;
    env) answers || unavailable "no engine answers at $SOCK (docker/dockerd.sh start)"; echo "export DOCKER_HOST=unix://$SOCK" ;;
    status) answers ;;
    run) shift; run "$@" ;;
    *) echo "usage: $0 install|start|env|stop|status|run CMD..." >&2; exit 2 ;;
esac
