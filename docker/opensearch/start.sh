#!/bin/bash
# OpenSearch, one node (single-node discovery, no security plugin), on 127.0.0.1 (run the container
# with --network host), as the user opensearch.
#   start.sh [HTTP_PORT [TRANSPORT_PORT]]      defaults 9200 and 9300
# The node's data is in /usr/share/opensearch/data: a restarted container comes back with its indices.
set -euo pipefail
http="${1:-9200}"
transport="${2:-9300}"
home=/usr/share/opensearch
cat >"$home/config/opensearch.yml" <<YAML
cluster.name: trident-docker
node.name: node-0
network.host: 127.0.0.1
http.port: $http
transport.port: $transport
path.data: $home/data
path.logs: $home/logs
discovery.type: single-node
cluster.routing.allocation.disk.threshold_enabled: false
cluster.max_shards_per_node: 10000
YAML
mapfile -t options </opt/service/jvm.options
exec java -Xms512m -Xmx512m "${options[@]}" -Djava.io.tmpdir="$home/tmp" \
    -Dopensearch.path.home="$home" -Dopensearch.path.conf="$home/config" \
    -cp "/opt/service/launcher:$(cat /opt/service/classpath)" TridentOpenSearchNode
