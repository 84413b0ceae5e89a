"""Apache Kafka from Maven Central's jars (start_kafka(kind="apache")): a KRaft node on 127.0.0.1 whose
restart keeps its address, topics, records and transactions; its data gone after stop() unless kept.

Real services: Apache Kafka 4.1 (its own nodes, not the session's), Tansu for the refusal."""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from trident_spark.local import consume, create_topic, produce, start_kafka
from trident_spark.local.apache_kafka import start_apache_kafka
from trident_spark.local.service_handle import ServiceRestartError
from trident_spark.local.services import choose_provider

pytestmark = [pytest.mark.integration,
              pytest.mark.skipif(choose_provider("kafka") != "local",
                                 reason="KAFKA_BOOTSTRAP_SERVERS or a container provides Kafka here: these "
                                        "tests start local brokers of each kind")]


def _listening(pid: int) -> set[str]:
    """The addresses ``pid``'s TCP sockets listen on ("127.0.0.1:PORT"), from /proc."""
    inodes = set()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            target = os.readlink(fd)
        except OSError:
            continue
        if target.startswith("socket:["):
            inodes.add(target[8:-1])
    found = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            if fields[3] != "0A" or fields[9] not in inodes:      # 0A: LISTEN
                continue
            host, port = fields[1].split(":")
            if host.startswith("0000000000000000FFFF0000"):     # an IPv4-mapped IPv6 socket (Java's)
                host = host[-8:]
            if len(host) == 8:                                  # 32 bits, little-endian
                address = ".".join(str(int(host[i:i + 2], 16)) for i in (6, 4, 2, 0))
            else:
                address = f"[{host}]"
            found.add(f"{address}:{int(port, 16)}")
    return found


def _read(bootstrap: str, topic: str, isolation: str, expect: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex}",
                         "isolation.level": isolation, "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    try:
        while len(values) < expect and time.monotonic() < deadline:
            for message in consumer.consume(100, timeout=0.5):
                assert message.error() is None, message.error()
                values.append(message.value() or b"")
        for message in consumer.consume(100, timeout=1.0):   # nothing beyond what is expected
            values.append(message.value() or b"")
    finally:
        consumer.close()
    return values


def test_a_restart_keeps_the_address_topics_records_and_transactions() -> None:
    with start_kafka(kind="apache") as kafka:
        assert kafka.provider == "local" and kafka.restartable
        assert kafka.pid is not None
        assert kafka.address.startswith("127.0.0.1:")
        listening = _listening(kafka.pid)
        assert kafka.address in listening and len(listening) == 2      # clients and the controller
        assert all(address.startswith("127.0.0.1:") for address in listening), listening

        create_topic(kafka.address, "words", 3)
        produce(kafka.address, "words", [(None, f"w{i}", i % 3) for i in range(300)])
        producer = Producer({"bootstrap.servers": kafka.address, "transactional.id": "t-restart"})
        producer.init_transactions(30)
        producer.begin_transaction()
        producer.produce("tx", b"aborted")
        producer.flush(30)
        producer.abort_transaction(30)
        producer.begin_transaction()
        producer.produce("tx", b"committed")                        # auto-created topic
        producer.commit_transaction(30)
        assert _read(kafka.address, "tx", "read_uncommitted", 2) == [b"aborted", b"committed"]
        old_pid, address = kafka.pid, kafka.address

        kafka.restart()

        assert kafka.address == address and kafka.pid != old_pid
        assert _listening(kafka.pid) == listening
        assert sorted(r.value for r in consume(kafka.address, "words", count=300)) == sorted(
            f"w{i}".encode() for i in range(300))
        assert _read(kafka.address, "tx", "read_committed", 1) == [b"committed"]
        assert _read(kafka.address, "tx", "read_uncommitted", 2) == [b"aborted", b"committed"]
        log_path = kafka.log_path
        assert log_path is not None
    assert not log_path.exists()                                    # a clean stop removes the log


def test_data_dir_is_kept_and_a_node_started_on_it_comes_back_with_its_data(tmp_path: Path) -> None:
    data = tmp_path / "kafka"
    with start_apache_kafka(data_dir=data) as kafka:
        create_topic(kafka.address, "kept", 2)
        produce(kafka.address, "kept", [(None, "a", 0), (None, "b", 1)])
        address = kafka.address
    assert (data / "logs" / "meta.properties").is_file()
    with start_apache_kafka(data_dir=data) as again:
        assert again.address == address
        assert sorted(r.value for r in consume(again.address, "kept", count=2)) == [b"a", b"b"]


def test_without_a_data_dir_stop_removes_the_data() -> None:
    kafka = start_apache_kafka()
    assert kafka.pid is not None
    properties = Path(f"/proc/{kafka.pid}/cmdline").read_bytes().split(b"\0")[-2].decode()
    data = Path(properties).parent
    assert (data / "logs" / "meta.properties").is_file()
    kafka.stop()
    assert not data.exists()


def test_tansu_keeps_nothing_to_restart_with() -> None:
    with start_kafka(kind="tansu") as kafka:
        assert not kafka.restartable
        with pytest.raises(ServiceRestartError, match=r"kafka at 127\.0\.0\.1:\d+ cannot be restarted"):
            kafka.restart()
