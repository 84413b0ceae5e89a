"""PostgresState against a real PostgreSQL: the rules, the one-statement conditional write, races,
failures, secrets and URLs."""

from __future__ import annotations

import pickle
import socket
import threading
import time
import uuid

import psycopg
import pytest
from state_backends import add, reused_rule_tests
from state_races import (  # noqa: F401  (collected here, run on this backend)
    test_a_non_transactional_writer_that_loses_applies_on_the_newer_value,
    test_a_stale_cache_entry_loses_and_the_key_is_recomputed,
    test_a_writer_that_loses_rereads_and_recomputes,
    test_another_process_opens_the_pickled_factory_and_writes,
    test_duplicate_tasks_of_the_same_batches_racing_end_exact,
    test_two_states_incrementing_one_key_count_exactly,
)

from trident_spark.local.process import free_port
from trident_spark.state import (
    OpaqueValue,
    PostgresState,
    StateError,
    StateType,
    StateUnavailableError,
    open_state,
    parse_state_url,
)
from trident_spark.state.keys import encode_key
from trident_spark.state.postgres import PostgresBackingMap

pytestmark = pytest.mark.integration

TX, OPAQUE, NON_TX = StateType.TRANSACTIONAL, StateType.OPAQUE, StateType.NON_TRANSACTIONAL


def unique_table() -> str:
    return f"t_{uuid.uuid4().hex[:12]}"


class PostgresBackend:
    """Factories over one table of the session's PostgreSQL, and raw access to its rows."""

    def __init__(self, dsn: str) -> None:
        self.dsn = dsn
        self.table = unique_table()
        self.db = psycopg.connect(dsn, autocommit=True)

    def spec(self, state_type=OPAQUE, **settings) -> PostgresState:
        settings.setdefault("table", self.table)
        return PostgresState(dsn=self.dsn, state_type=StateType(state_type), **settings)

    def raw_put(self, key, data: bytes) -> None:
        with self.spec().open_backing_map() as backing:
            backing.raw_put(key, data)

    def stored(self, state_type, key):
        with self.spec(state_type).open_backing_map() as backing:
            return backing.multiGet([key])[0]

    def rows(self) -> dict[str, bytes]:
        return {k: bytes(v) for k, v in self.db.execute(f'SELECT k, v FROM "{self.table}"')}

    def sql(self, statement: str, params=()):
        return self.db.execute(statement, params)

    def drop(self) -> None:
        self.db.execute(f'DROP TABLE IF EXISTS "{self.table}"')
        self.db.close()


@pytest.fixture
def backend(postgres_dsn):
    made = PostgresBackend(postgres_dsn)
    yield made
    made.drop()


# Every rule, API, batching and scan test of tests/unit/state, on PostgreSQL.
globals().update(reused_rule_tests())


# -- layout ----------------------------------------------------------------------------------------

@pytest.mark.parametrize("cache_size", [1000, 0])
def test_rows_written_by_earlier_versions_update_in_place(backend, cache_size):
    earlier = [(["cat"], "cat"), (["~cat"], "%7Ecat"), (["a|b"], "a%7Cb"), (["us", 2024], "us|~i2024"),
               ([(1, "x")], '~j{"~tuple":[1,"x"]}'), ([], "~global")]      # literal, not through keys.py
    state = backend.spec(OPAQUE, cache_size=cache_size).open()
    assert state.multiGet([["dog"]]) == [None]                             # the table, as ever created
    for _, stored in earlier:
        backend.sql(f'INSERT INTO "{backend.table}" (k, v, version) VALUES (%s, %s, 1)',
                    (stored, b"[4,10,7]"))
    keys = [key for key, _ in earlier] + [["dog"]]
    assert state.multiUpdate(5, keys, [add(1)] * len(keys)) == [11] * len(earlier) + [1]
    assert backend.rows() == {stored: b"[5,11,10]" for _, stored in earlier} | {"dog": b"[5,1,null]"}


def test_one_row_per_key_with_storms_json_in_bytea(backend):
    backend.spec(OPAQUE).open().multiUpdate(3, [["cat"], ["us", 2024]], [add(2), add(5)])
    backend.spec(OPAQUE).open().update(3, add(9))
    assert backend.rows() == {"cat": b"[3,2,null]", "us|~i2024": b"[3,5,null]", "~global": b"[3,9,null]"}
    columns = backend.sql("SELECT column_name, data_type FROM information_schema.columns "
                          "WHERE table_name = %s ORDER BY ordinal_position", (backend.table,)).fetchall()
    assert columns == [("k", "text"), ("v", "bytea"), ("version", "bigint")]
    [(collation,)] = backend.sql("SELECT collation_name FROM information_schema.columns "
                                 "WHERE table_name = %s AND column_name = 'k'", (backend.table,)).fetchall()
    assert collation == "C"


def test_a_value_written_by_another_program_reads_back(backend):
    backend.spec().open().multiGet([["warm-up"]])               # creates the table
    backend.sql(f'INSERT INTO "{backend.table}" VALUES (%s, %s, 1)', ("dog", b'[12,{"n":4},{"n":3}]'))
    assert backend.stored(OPAQUE, ["dog"]) == OpaqueValue(12, {"n": 4}, {"n": 3})
    assert backend.spec(OPAQUE).open().multiGet([["dog"]]) == [{"n": 4}]


def test_an_existing_table_of_another_layout_is_refused(backend):
    backend.sql(f'CREATE TABLE "{backend.table}" (id int, name text)')
    with pytest.raises(StateUnavailableError,
                       match=r"exists with columns \['id', 'name'\].*choose another table"):
        backend.spec().open().multiGet([["cat"]])


def test_many_tasks_creating_the_table_at_once_all_succeed(backend):
    errors: list[BaseException] = []
    start = threading.Barrier(6, timeout=60)

    def work(n: int) -> None:
        try:
            with backend.spec(NON_TX).open() as state:
                start.wait()
                state.multiPut(0, [[f"k{n}"]], [n])
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    assert errors == []
    assert backend.spec(NON_TX).open().multiGet([[f"k{n}"] for n in range(6)]) == list(range(6))


# -- versions and the conditional write ------------------------------------------------------------

def test_versions_are_random_on_create_and_count_up_on_write(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        [created] = backing.multiPutIfVersion([["k"]], [1], [None])
        assert isinstance(created, int) and 0 <= created < 2**62
        assert backing.multiPutIfVersion([["k"]], [2], [created]) == [created + 1]
        [(stored,)] = backend.sql(f'SELECT version FROM "{backend.table}"').fetchall()
        assert stored == created + 1
        assert [v.version for v in backing.multiGetVersioned([["k"]])] == [created + 1]


def test_a_write_lands_only_over_the_expected_version(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        [first] = backing.multiPutIfVersion([["k"]], [7], [None])
        assert backing.multiPutIfVersion([["k"]], [8], [None]) == [None]           # exists: create loses
        backend.sql(f'UPDATE "{backend.table}" SET v = %s, version = version + 1', (b'"changed"',))
        assert backing.multiPutIfVersion([["k"]], ["mine"], [first]) == [None]     # another writer
        assert backing.multiGet([["k"]]) == ["changed"]
        [current] = backing.multiGetVersioned([["k"]])
        assert backing.multiPutIfVersion([["k"]], ["mine"], [current.version]) == [current.version + 1]
        backend.sql(f'DELETE FROM "{backend.table}"')                              # removed meanwhile
        assert backing.multiPutIfVersion([["k"]], ["again"], [current.version + 1]) == [None]


def test_keys_of_one_batch_win_or_lose_independently(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["a"], ["b"], ["d"]], [1, 2, 4])
        read = backing.multiGetVersioned([["a"], ["b"], ["c"], ["d"]])
        backend.sql(f'UPDATE "{backend.table}" SET v = %s, version = version + 1 WHERE k = %s', (b"20", "b"))
        backend.sql(f'INSERT INTO "{backend.table}" VALUES (%s, %s, 5)', ("e", b"50"))
        outcomes = backing.multiPutIfVersion([["a"], ["b"], ["c"], ["d"], ["e"]], [10, 30, 40, 44, 55],
                                             [read[0].version, read[1].version, None, read[3].version, None])
        assert [o is not None for o in outcomes] == [True, False, True, True, False]
        assert backing.multiGet([["a"], ["b"], ["c"], ["d"], ["e"]]) == [10, 20, 40, 44, 50]


def test_a_batch_is_one_transaction_all_or_nothing(backend):
    with backend.spec(NON_TX).open_backing_map() as backing:
        backing.multiPut([["a"]], [1])
        [a] = backing.multiGetVersioned([["a"]])
        backend.sql(f"ALTER TABLE \"{backend.table}\" ADD CONSTRAINT no_bad CHECK (k <> 'bad')")
        with pytest.raises(StateError, match=r"CheckViolation.*conditional write of 3 keys"):
            backing.multiPutIfVersion([["a"], ["bad"], ["c"]], [2, 3, 4], [a.version, None, None])
        assert backing.multiGet([["a"], ["bad"], ["c"]]) == [1, None, None]       # nothing of it stayed


def test_one_statement_per_batch_read_and_write(backend, monkeypatch):
    statements = []
    original = PostgresBackingMap._run

    def counting(self, doing, sql, params):
        statements.append(sql.split()[0])
        return original(self, doing, sql, params)

    monkeypatch.setattr(PostgresBackingMap, "_run", counting)
    state = backend.spec(OPAQUE, cache_size=0, max_multi_get_batch_size=3, max_multi_put_batch_size=4).open()
    state.multiGet([["warm-up"]])               # connects and creates the table
    state.stats.reset()
    statements.clear()
    state.multiUpdate(0, [[f"w{i}"] for i in range(10)], [add(1)] * 10)
    assert statements == ["SELECT"] * 4 + ["WITH"] * 3
    assert (state.stats.store_reads, state.stats.store_writes) == (4, 3)
    assert (state.stats.keys_read, state.stats.keys_written) == (10, 10)


def test_overlapping_batches_written_in_opposite_orders_do_not_deadlock(backend):
    keys = [[f"k{i:03d}"] for i in range(200)]
    backend.spec(NON_TX).open().multiPut(0, keys, [0] * len(keys))
    errors: list[BaseException] = []
    start = threading.Barrier(2, timeout=60)

    def work(order) -> None:
        try:
            with backend.spec(NON_TX, cache_size=0, max_conflict_retries=10_000).open() as state:
                start.wait()
                for txid in range(10):
                    state.multiUpdate(txid, order, [add(1)] * len(order))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(order,)) for order in (keys, keys[::-1])]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert errors == []
    assert backend.spec(NON_TX).open().multiGet(keys) == [20] * len(keys)


def test_a_connection_killed_by_the_server_fails_then_the_next_call_reconnects(backend):
    state = backend.spec(NON_TX, cache_size=0).open()
    state.multiPut(0, [["cat"]], [1])
    backend.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid <> pg_backend_pid() "
                "AND backend_type = 'client backend' AND query LIKE %s", (f"%{backend.table}%",))
    with pytest.raises(StateUnavailableError, match=r"cannot use the state store at postgresql://"):
        state.multiGet([["cat"]])
    assert state.multiGet([["cat"]]) == [1]


# -- the commit record -----------------------------------------------------------------------------

def test_the_commit_record_lives_in_its_reserved_row_and_is_not_listed(backend):
    spec = backend.spec(TX)
    log = spec.open_commit_log()
    assert log.read() is None
    log.begin(0, "sentences")
    log.complete(0, {"sentences": {"offsets": {"t": {"0": 9}}}})
    spec.open().multiUpdate(0, [["cat"]], [add(1)])
    assert set(backend.rows()) == {"~commit", "cat"}
    assert spec.committed_offsets() == {"t": {"0": 9}}
    assert list(spec.open().getTuples()) == [["cat", 1]]


# -- opening ---------------------------------------------------------------------------------------

def test_open_state_refuses_a_missing_table_and_create_makes_it(backend, postgres_dsn):
    url = f"{postgres_dsn}?table={backend.table}&type=transactional"
    with pytest.raises(StateUnavailableError,
                       match=f"no table '{backend.table}' in the database; nothing was"):
        open_state(url)
    assert backend.sql("SELECT to_regclass(%s)", (backend.table,)).fetchone() == (None,)
    with open_state(url, create=True) as state:
        state.multiPut(0, [["cat"]], [5])
    with open_state(url) as state:
        assert state.multiGet([["cat"], ["dog"]]) == [5, None]


@pytest.mark.parametrize("scheme", ["postgresql", "postgres"])
def test_open_state_urls_round_trip(backend, postgres_dsn, scheme):
    spec = backend.spec(TX, cache_size=0, connect_timeout=3, statement_timeout=None)
    spec.open().multiUpdate(0, [["cat"]], [add(4)])
    url = spec.url.replace("postgresql://", f"{scheme}://", 1)
    parsed = parse_state_url(url)
    assert isinstance(parsed, PostgresState)
    settings = (parsed.table, parsed.state_type, parsed.cache_size, parsed.connect_timeout,
                parsed.statement_timeout)
    assert settings == (backend.table, TX, 0, 3, None)
    with open_state(url) as state:
        assert state.multiGet([["cat"]]) == [4]


def test_libpq_parameters_in_the_url_stay_in_the_dsn(backend, postgres_dsn):
    url = f"{postgres_dsn}?table={backend.table}&application_name=wc-test&sslmode=disable"
    parsed = parse_state_url(url)
    assert parsed.dsn == f"{postgres_dsn}?application_name=wc-test&sslmode=disable"
    with open_state(url, create=True) as state:
        state.multiPut(0, [["cat"]], [1])
        [(names,)] = backend.sql(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'wc-test'").fetchall()
        assert names == 1
    assert parse_state_url(parsed.url).dsn == parsed.dsn


# -- failures and secrets --------------------------------------------------------------------------

def test_an_unreachable_server_fails_fast_naming_the_address():
    port = free_port()
    started = time.monotonic()
    state = PostgresState.opaque(dsn=f"postgresql://app:s3cret-pw@127.0.0.1:{port}/wc", table="counts").open()
    with pytest.raises(StateUnavailableError) as caught:
        state.multiGet([["cat"]])
    assert time.monotonic() - started < 10
    message = str(caught.value)
    address = f"postgresql://app:***@127.0.0.1:{port}/wc?table=counts"
    assert message.startswith(f"cannot use the state store at {address}: ")
    assert "refused" in message and "check that PostgreSQL runs there" in message
    assert "s3cret-pw" not in message
    assert "s3cret-pw" not in repr(PostgresState.opaque(dsn=f"postgresql://app:s3cret-pw@127.0.0.1:{port}/wc"))


def test_a_server_that_never_answers_fails_within_the_connect_timeout():
    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        port = silent.getsockname()[1]
        state = PostgresState.opaque(dsn=f"postgresql://app@127.0.0.1:{port}/wc", connect_timeout=2).open()
        started = time.monotonic()
        with pytest.raises(StateUnavailableError) as caught:
            state.multiGet([["cat"]])
        assert time.monotonic() - started < 10
    assert f"postgresql://app@127.0.0.1:{port}/wc?table=trident_state" in str(caught.value)
    assert "connect_timeout=2s" in str(caught.value)


def test_a_missing_database_is_explained_without_the_password(postgres_dsn):
    dsn = postgres_dsn.replace("postgres@", "postgres:s3cret-pw@", 1).rsplit("/", 1)[0] + "/no_such_db"
    with pytest.raises(StateUnavailableError) as caught:
        PostgresState.opaque(dsn=dsn).open().multiGet([["cat"]])
    message = str(caught.value)
    assert "no_such_db" in message and "create the database or name another one" in message
    assert "s3cret-pw" not in message and "postgres:***@" in message


def test_the_password_is_kept_for_connecting_but_never_shown(postgres_dsn, backend):
    dsn = postgres_dsn.replace("postgres@", "postgres:s3cret-pw@", 1)     # trust auth: any password works
    spec = PostgresState.opaque(dsn=dsn, table=backend.table)
    spec.open().multiUpdate(0, [["cat"]], [add(1)])
    assert "s3cret-pw" in spec.url and "s3cret-pw" in pickle.loads(pickle.dumps(spec)).dsn
    shown = [repr(spec), spec.redacted_url, spec.open_backing_map().address]
    assert all("s3cret-pw" not in text and "***" in text for text in shown), shown
    with pytest.raises(StateError) as caught:
        open_state(spec.url.replace(backend.table, "missing_table"))
    assert "s3cret-pw" not in str(caught.value)


@pytest.fixture(scope="module")
def protected_postgres():
    """A PostgreSQL of its own that requires a password (SCRAM)."""
    from trident_spark.local.launchers import ServiceNotInstalledError, start_local_postgres

    try:
        server = start_local_postgres(password="s3cret-pw")
    except ServiceNotInstalledError as missing:
        pytest.skip(str(missing))
    with server:
        yield server.address


def test_a_wrong_password_is_explained_and_never_shown(protected_postgres):
    assert "postgres:s3cret-pw@" in protected_postgres
    PostgresState.opaque(dsn=protected_postgres, table="t").open().multiPut(0, [["cat"]], [1])   # it works
    wrong = protected_postgres.replace("s3cret-pw", "wrong-pw")
    for dsn in (wrong, protected_postgres.replace(":s3cret-pw", "")):
        with pytest.raises(StateUnavailableError) as caught:
            PostgresState.opaque(dsn=dsn, table="t").open().multiGet([["cat"]])
        message = str(caught.value)
        assert "give the user and password in the DSN" in message, message
        assert "wrong-pw" not in message and "s3cret-pw" not in message


def test_the_backing_map_is_lazy_and_closes(backend):
    backing = backend.spec().open_backing_map()
    assert isinstance(backing, PostgresBackingMap) and backing._connection is None
    backing.multiGet([["cat"]])
    assert backing._connection is not None
    backing.close()
    backing.close()
    with pytest.raises(StateError, match="closed"):
        backing.multiGet([["cat"]])


# -- listing every key (getTuples, TupleCollectionGet) ---------------------------------------------

def test_thousands_of_keys_are_listed_once_each_in_pages(backend, monkeypatch):
    state = backend.spec(NON_TX, cache_size=0).open()
    keys = [[f"w{i}", i] for i in range(2500)]
    state.multiPut(0, keys, list(range(2500)))
    pages = []
    original = PostgresBackingMap._run

    def counting(self, doing, sql, params):
        pages.append(doing)
        return original(self, doing, sql, params)

    monkeypatch.setattr(PostgresBackingMap, "_run", counting)
    listed = list(state.getTuples())
    assert len(listed) == 2500
    assert sorted(listed, key=lambda values: values[1]) == [[*key, i] for i, key in enumerate(keys)]
    assert pages == ["scanning the table"] * 3


def test_a_hashed_long_key_cannot_be_listed(backend):
    state = backend.spec(OPAQUE).open()
    state.multiUpdate(0, [["x" * 600], ["cat"]], [add(1), add(2)])
    assert encode_key(["x" * 600]) in backend.rows()
    with pytest.raises(StateError, match=r"cannot list key '~h.*stored hashed.*MapGet\(\)"):
        list(state.getTuples())
    assert state.multiGet([["x" * 600]]) == [1]
