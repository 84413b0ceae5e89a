"""SqliteState: WAL file, conditional writes racing across connections and processes, clear errors."""

from __future__ import annotations

import multiprocessing
import os
import pickle
import sqlite3
import threading

import pytest

from trident_spark.state import OpaqueValue, SqliteState, StateConfigError, StateType, StateUnavailableError


def add(n):
    return lambda old: (old or 0) + n


def test_the_file_is_in_wal_mode_with_one_row_per_key(tmp_path):
    path = tmp_path / "wc.db"
    with SqliteState.opaque(path=path, table="counts").open() as state:
        state.multiUpdate(0, [["cat"], ["us", 2024]], [add(1), add(2)])
    with SqliteState.opaque(path=path, table="counts").open_backing_map() as backing:
        assert backing.journal_mode == "wal"
    db = sqlite3.connect(path)
    assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
    rows = db.execute("SELECT k, v FROM counts ORDER BY k").fetchall()
    assert rows == [("cat", b"[0,1,null]"), ("us|~i2024", b"[0,2,null]")]
    db.close()


def test_several_tables_in_one_file(tmp_path):
    path = tmp_path / "wc.db"
    SqliteState.opaque(path=path, table="a").open().multiUpdate(0, [["cat"]], [add(1)])
    SqliteState.opaque(path=path, table="b").open().multiUpdate(0, [["cat"]], [add(5)])
    assert SqliteState.opaque(path=path, table="a").open().multiGet([["cat"]]) == [1]
    assert SqliteState.opaque(path=path, table="b").open().multiGet([["cat"]]) == [5]


def test_the_factory_is_settings_only_and_resolves_the_path_where_it_is_made(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    spec = SqliteState.transactional(path="sub/wc.db", table="counts", cache_size=10)
    assert spec.path == str(tmp_path / "sub" / "wc.db")
    assert spec.url == f"sqlite://{tmp_path}/sub/wc.db?table=counts&type=transactional&cache_size=10"
    shipped = pickle.loads(pickle.dumps(spec))
    assert shipped == spec
    shipped.open().multiUpdate(0, [["cat"]], [add(1)])       # creates the directory and the file
    assert (tmp_path / "sub" / "wc.db").exists()
    assert spec.open().multiGet([["cat"]]) == [1]


def race_worker(path, kind, rounds, start, errors=None, each_round=None, stats=None):
    """One process (or thread) of the race: its own connection and its own cache."""
    try:
        start.wait()
        state = SqliteState(path=path, state_type=kind, cache_size=100, max_conflict_retries=10_000,
                            busy_timeout=60).open()
        for txid in range(rounds):
            state.multiUpdate(txid, [["cat"], ["dog"]], [add(1), add(2)])
            if each_round is not None:
                each_round.wait()           # batch txid+1 starts after every task of txid ended
        if stats is not None:
            stats.append(state.stats)
        state.close()
    except BaseException as exc:
        if each_round is not None:
            each_round.abort()              # never leave the other worker waiting
        if errors is None:
            raise
        errors.append(exc)


def run_threads(path, kind, rounds, lockstep=False):
    start = threading.Barrier(2, timeout=60)
    each_round = threading.Barrier(2, timeout=60) if lockstep else None
    errors, stats = [], []
    threads = [threading.Thread(target=race_worker,
                                args=(path, kind, rounds, start, errors, each_round, stats))
               for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    return stats


def test_two_connections_racing_on_one_key_count_exactly(tmp_path):
    path = str(tmp_path / "race.db")
    run_threads(path, "non_transactional", 200)
    assert SqliteState.nonTransactional(path=path).open().multiGet([["cat"], ["dog"]]) == [400, 800]


def test_two_processes_racing_on_one_key_count_exactly(tmp_path):
    path = str(tmp_path / "race.db")
    context = multiprocessing.get_context("fork")
    start = context.Barrier(2, timeout=60)
    workers = [context.Process(target=race_worker, args=(path, "non_transactional", 150, start))
               for _ in range(2)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=120)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert SqliteState.nonTransactional(path=path).open().multiGet([["cat"], ["dog"]]) == [300, 600]


def open_at_once(path, start, errors):
    try:
        start.wait()
        SqliteState.opaque(path=path).open().close()
    except BaseException as exc:
        errors.append(exc)


def test_many_connections_creating_one_new_file_at_once(tmp_path):
    """Switching to WAL and creating the table race too: SQLite answers "locked" without waiting."""
    for attempt in range(12):
        start, errors = threading.Barrier(8, timeout=60), []
        threads = [threading.Thread(target=open_at_once, args=(tmp_path / f"new-{attempt}.db", start, errors))
                   for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []


@pytest.mark.parametrize("kind", ["opaque", "transactional"])
def test_duplicate_tasks_of_the_same_batches_racing_end_exact(tmp_path, kind):
    """Two connections apply the same batches (a speculative duplicate of every task): applied once."""
    path = str(tmp_path / "dup.db")
    stats = run_threads(path, kind, 100, lockstep=True)
    assert sum(s.write_conflicts for s in stats) >= 100     # every batch, one of the two lost and re-read
    with SqliteState(path=path, state_type=kind).open() as state:
        assert state.multiGet([["cat"], ["dog"]]) == [100, 200]
    with SqliteState(path=path, state_type=kind).open_backing_map() as backing:
        stored = backing.multiGet([["cat"]])[0]
        assert stored.txid == 99
        if kind == "opaque":
            assert stored == OpaqueValue(99, 100, 99)


def test_a_path_whose_directory_cannot_be_created_is_named(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a directory")
    path = blocker / "state.db"
    with pytest.raises(StateUnavailableError) as caught:
        SqliteState.opaque(path=path).open()
    message = str(caught.value)
    assert message.startswith(f"cannot use the state store at {path}: cannot create its directory {blocker}")
    assert "choose a path in a writable directory" in message
    assert caught.value.address == str(path)


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only directories, so this cannot fail")
def test_a_read_only_directory_is_named(tmp_path):
    directory = tmp_path / "ro"
    directory.mkdir()
    directory.chmod(0o555)
    try:
        with pytest.raises(StateUnavailableError, match=f"directory {directory} is not writable"):
            SqliteState.opaque(path=directory / "state.db").open()
    finally:
        directory.chmod(0o755)


def test_a_file_that_is_not_a_database_is_named(tmp_path):
    path = tmp_path / "notes.db"
    path.write_bytes(b"these are not the pages you are looking for" * 100)
    with pytest.raises(StateUnavailableError) as caught:
        SqliteState.opaque(path=path).open()
    assert str(caught.value).startswith(
        f"cannot use the state store at {path}: DatabaseError: file is not a database")


def test_a_directory_as_the_path_is_named(tmp_path):
    with pytest.raises(StateUnavailableError, match=f"cannot use the state store at {tmp_path}: "):
        SqliteState.opaque(path=tmp_path).open()


def test_a_table_of_another_layout_is_refused(tmp_path):
    path = tmp_path / "app.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE users (id INTEGER PRIMARY KEY, name TEXT)")
    expected = (r"table 'users' exists with columns \['id', 'name'\], "
                r"not a state table \(k, v, version\); choose another table=")
    with pytest.raises(StateUnavailableError, match=expected):
        SqliteState.opaque(path=path, table="users").open()


def test_a_writer_holding_the_lock_too_long_fails_with_the_timeout_named(tmp_path):
    path = tmp_path / "locked.db"
    state = SqliteState.opaque(path=path, busy_timeout=0.2).open()
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(StateUnavailableError) as caught:
            state.multiUpdate(0, [["cat"]], [add(1)])
        assert "database is locked" in str(caught.value)
        assert "another process held the write lock for more than busy_timeout=0.2s" in str(caught.value)
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    state.multiUpdate(0, [["cat"]], [add(1)])                 # and it works once the lock is free
    assert state.multiGet([["cat"]]) == [1]


def test_readers_do_not_wait_for_a_writer(tmp_path):
    path = tmp_path / "wal.db"
    state = SqliteState.opaque(path=path, busy_timeout=0.2, cache_size=0).open()
    state.multiUpdate(0, [["cat"]], [add(1)])
    holder = sqlite3.connect(path, isolation_level=None)
    holder.execute("BEGIN IMMEDIATE")
    try:
        assert state.multiGet([["cat"]]) == [1]
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def test_many_keys_beyond_one_statements_parameter_limit(tmp_path):
    keys = [[f"w{i}"] for i in range(2500)]
    state = SqliteState.opaque(path=tmp_path / "big.db", cache_size=0, max_multi_get_batch_size=None,
                               max_multi_put_batch_size=None).open()
    state.multiUpdate(0, keys, [add(1)] * len(keys))
    assert state.multiGet(keys) == [1] * len(keys)
    state.backing.multiRemove(keys[:2000])
    assert state.multiGet(keys[1995:2005]) == [None] * 5 + [1] * 5


def test_a_removed_and_recreated_key_gets_a_new_version(tmp_path):
    backing = SqliteState.nonTransactional(path=tmp_path / "v.db").open_backing_map()
    [first] = backing.multiPutIfVersion([["cat"]], [1], [None])
    [second] = backing.multiPutIfVersion([["cat"]], [2], [first])
    assert second == first + 1
    backing.multiRemove([["cat"]])
    [recreated] = backing.multiPutIfVersion([["cat"]], [3], [None])
    assert recreated not in (first, second)
    assert backing.multiPutIfVersion([["cat"]], [4], [second]) == [None]     # a stale reader loses


@pytest.mark.parametrize(("settings", "message"), [
    ({"table": "counts; DROP TABLE x"}, "SQLite table name 'counts; DROP TABLE x' is not allowed"),
    ({"table": "1st"}, "SQLite table name '1st' is not allowed"),
    ({"busy_timeout": -1}, "busy_timeout must be a number of seconds >= 0, got -1"),
    ({"synchronous": "SOMETIMES"}, "synchronous must be one of OFF, NORMAL, FULL, EXTRA, got 'SOMETIMES'"),
    ({"path": ""}, "SqliteState needs a file path, got ''"),
])
def test_bad_settings_are_named(tmp_path, settings, message):
    with pytest.raises(StateConfigError) as caught:
        SqliteState(**{"path": tmp_path / "x.db", **settings})
    assert str(caught.value).startswith(message)


def test_synchronous_setting_reaches_sqlite(tmp_path):
    state = SqliteState(path=tmp_path / "s.db", state_type=StateType.OPAQUE, synchronous="normal").open()
    assert state.backing.delegate.delegate._connection.execute("PRAGMA synchronous").fetchone() == (1,)


def test_the_state_file_and_its_wal_and_shm_are_owner_only_whatever_the_umask(tmp_path):
    """The attack: another local account reads the counts (or the keys: user ids, e-mails) from a
    state file left world-readable. A file trident-spark creates is 0600, so are SQLite's -wal
    and -shm (SQLite gives them the database file's mode)."""
    path = tmp_path / "wc.db"
    old = os.umask(0o000)  # the loosest umask: the mode must not come from it
    try:
        state = SqliteState.opaque(path=str(path)).open()
        state.multiUpdate(0, [["cat"]], [lambda old: 1])
        modes = {p.name: oct(p.stat().st_mode & 0o777) for p in tmp_path.iterdir()}
        state.close()
    finally:
        os.umask(old)
    assert modes == {"wc.db": "0o600", "wc.db-wal": "0o600", "wc.db-shm": "0o600"}


def test_an_existing_state_files_mode_is_left_as_its_owner_set_it(tmp_path):
    path = tmp_path / "shared.db"
    sqlite3.connect(path).close()
    path.chmod(0o640)  # the owner's choice: a group that reads the counts
    state = SqliteState.opaque(path=str(path)).open()
    state.multiUpdate(0, [["cat"]], [lambda old: 1])
    assert oct(path.stat().st_mode & 0o777) == "0o640"
    assert state.multiGet([["cat"]]) == [1]
    state.close()
