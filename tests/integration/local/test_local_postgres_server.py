"""The session PostgreSQL (a throwaway local server) answers SQL; a local server leaves nothing behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

psycopg = pytest.importorskip("psycopg", reason="the PostgreSQL client is in the [postgres] extra")

pytestmark = pytest.mark.integration


def test_sql_round_trip(postgres_dsn: str) -> None:
    with psycopg.connect(postgres_dsn, autocommit=True) as db:
        assert db.execute("SELECT 1 + 1").fetchone() == (2,)
        [(listen,)] = db.execute("SHOW listen_addresses").fetchall()
        if not os.environ.get("POSTGRES_URL"):
            assert listen == "127.0.0.1"


def test_a_local_server_is_stopped_and_its_data_removed() -> None:
    from trident_spark.local.launchers import ServiceNotInstalledError, start_local_postgres
    from trident_spark.local.probes import postgres_answers
    from trident_spark.local.process import pid_alive

    try:
        server = start_local_postgres()
    except ServiceNotInstalledError as missing:
        pytest.skip(str(missing))
    with server:
        with psycopg.connect(server.address, autocommit=True) as db:
            [(data,)] = db.execute("SHOW data_directory").fetchall()
            db.execute("CREATE TABLE kept (n int)")
        held = psycopg.connect(server.address)           # an open session does not delay the stop
        assert server.pid is not None and postgres_answers(server.address)
    held.close()
    assert not pid_alive(server.pid)
    assert not postgres_answers(server.address)
    assert not Path(data).exists()


def test_the_probe_says_no_to_what_is_not_postgres(redis_url: str) -> None:
    from urllib.parse import urlsplit

    from trident_spark.local.probes import postgres_answers

    port = urlsplit(redis_url).port
    assert not postgres_answers(f"postgresql://postgres@127.0.0.1:{port}/postgres")
