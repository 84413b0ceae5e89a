#!/bin/bash
# Apache Kafka, one KRaft node (broker and controller), on 127.0.0.1 (run the container with --network host).
#   start.sh [PORT [CONTROLLER_PORT]]      defaults 9092 and 9093
# The log directory (/var/lib/kafka/logs) is formatted at the first start; a restarted container
# keeps it, with every topic, offset and transaction.
set -euo pipefail
port="${1:-9092}"
controller="${2:-9093}"
data=/var/lib/kafka
conf="$data/server.properties"
cat >"$conf" <<PROPERTIES
process.roles=broker,controller
node.id=1
controller.quorum.bootstrap.servers=127.0.0.1:$controller
listeners=PLAINTEXT://127.0.0.1:$port,CONTROLLER://127.0.0.1:$controller
advertised.listeners=PLAINTEXT://127.0.0.1:$port
controller.listener.names=CONTROLLER
inter.broker.listener.name=PLAINTEXT
listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT
log.dirs=$data/logs
auto.create.topics.enable=true
num.partitions=1
offsets.topic.replication.factor=1
offsets.topic.num.partitions=4
transaction.state.log.replication.factor=1
transaction.state.log.min.isr=1
transaction.state.log.num.partitions=4
share.coordinator.state.topic.replication.factor=1
share.coordinator.state.topic.min.isr=1
group.initial.rebalance.delay.ms=0
PROPERTIES
mapfile -t options </opt/service/jvm.options
jvm=(java "${options[@]}" -Dlog4j.configuration=file:/opt/service/log4j.properties
     -Dlog4j2.configurationFile=/opt/service/log4j2.properties -cp "$(cat /opt/service/classpath)")
if [ ! -f "$data/logs/meta.properties" ]; then
    # A KRaft cluster id: 16 random bytes, URL-safe base64 without padding.
    cluster_id="$(head -c 16 /dev/urandom | base64 | tr '+/' '-_' | cut -c1-22)"
    "${jvm[@]}" kafka.tools.StorageTool format -t "$cluster_id" -c "$conf" --standalone --ignore-formatted
fi
exec "${jvm[@]}" kafka.Kafka "$conf"
