"""host_ports: the ports a host-network container binds, chosen below the kernel's ephemeral range."""

from __future__ import annotations

import socket
from pathlib import Path

import pytest

from trident_spark.local import containers
from trident_spark.local.containers import host_ports


def test_ports_are_distinct_free_and_below_the_ephemeral_range() -> None:
    low = containers._ephemeral_low()
    ports = host_ports(10)
    assert len(set(ports)) == 10
    assert all(20000 <= port < low for port in ports)
    for port in ports:
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
            sock.bind(("127.0.0.1", port))  # free: binds


def test_a_port_in_use_is_never_chosen(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        port = host_ports(1)[0]
        taken.bind(("127.0.0.1", port))
        # 20 ports below the ephemeral range, one of them in use: the other 19 are chosen.
        range_file = tmp_path / "ip_local_port_range"
        range_file.write_text(f"{port + 10}\t60999\n")
        monkeypatch.setattr(containers, "_EPHEMERAL_RANGE", range_file)
        monkeypatch.setattr(containers, "_LOWEST_HOST_PORT", port - 10)
        chosen = host_ports(19)
        assert sorted(chosen) == [p for p in range(port - 10, port + 10) if p != port]
        with pytest.raises(OSError, match=rf"^no 20 free ports of 127.0.0.1 in {port - 10}-{port + 9}: "):
            host_ports(20)


def test_no_room_below_the_range_falls_back_to_ephemeral_ports(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
) -> None:
    range_file = tmp_path / "ip_local_port_range"
    range_file.write_text("20000\t65000\n")
    monkeypatch.setattr(containers, "_EPHEMERAL_RANGE", range_file)
    assert len(set(host_ports(4))) == 4


def test_an_unreadable_range_is_linux_default(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(containers, "_EPHEMERAL_RANGE", tmp_path / "missing")
    assert containers._ephemeral_low() == 32768
