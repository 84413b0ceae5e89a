"""open_state(url): memory and sqlite URLs, their parameters, and clear errors for bad URLs."""

from __future__ import annotations

import pytest

from trident_spark.state import (
    MemoryState,
    SqliteState,
    StateConfigError,
    StateType,
    StateUnavailableError,
    open_state,
    parse_state_url,
)


def add(n):
    return lambda old: (old or 0) + n


@pytest.fixture
def name():
    made = "test-url"
    yield made
    MemoryState.drop(made)


def test_memory_url(name):
    spec = parse_state_url(f"memory://{name}")
    assert isinstance(spec, MemoryState)
    assert (spec.name, spec.state_type) == (name, StateType.OPAQUE)


@pytest.mark.parametrize(("query", "kind"), [
    ("type=opaque", StateType.OPAQUE),
    ("type=transactional", StateType.TRANSACTIONAL),
    ("type=non_transactional", StateType.NON_TRANSACTIONAL),
    ("type=nonTransactional", StateType.NON_TRANSACTIONAL),
    ("type=non-transactional", StateType.NON_TRANSACTIONAL),
    ("type=OPAQUE", StateType.OPAQUE),
])
def test_type_parameter(query, kind):
    assert parse_state_url(f"memory://wc?{query}").state_type is kind


def test_common_settings_as_query_parameters():
    spec = parse_state_url("memory://wc?cache_size=0&max_multi_get_batch_size=50&max_multi_put_batch_size=none"
                           "&txid_offset=12&max_conflict_retries=3")
    assert (spec.cache_size, spec.max_multi_get_batch_size, spec.max_multi_put_batch_size) == (0, 50, None)
    assert (spec.txid_offset, spec.max_conflict_retries) == (12, 3)


def test_sqlite_absolute_path_and_table(tmp_path):
    spec = parse_state_url(f"sqlite://{tmp_path}/wc.db?table=counts&type=transactional&busy_timeout=2.5"
                           f"&synchronous=normal")
    assert isinstance(spec, SqliteState)
    assert (spec.path, spec.table) == (str(tmp_path / "wc.db"), "counts")
    assert spec.state_type is StateType.TRANSACTIONAL
    assert (spec.busy_timeout, spec.synchronous) == (2.5, "NORMAL")
    assert parse_state_url(spec.url) == spec


def test_sqlite_relative_and_sqlalchemy_absolute_forms(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert parse_state_url("sqlite://data/wc.db").path == str(tmp_path / "data" / "wc.db")
    assert parse_state_url("sqlite:////var/tmp/wc.db").path == "/var/tmp/wc.db"
    assert parse_state_url("sqlite:///var/tmp/wc.db").path == "/var/tmp/wc.db"
    assert parse_state_url("sqlite:///var/tmp/my%20state.db").path == "/var/tmp/my state.db"
    assert parse_state_url("sqlite:///var/tmp/wc.db").table == "trident_state"


def test_open_state_answers_current_values_outside_spark(name, tmp_path):
    MemoryState.opaque(name=name).open().multiUpdate(0, [["cat"]], [add(2)])
    MemoryState.opaque(name=name).open().multiUpdate(1, [["cat"]], [add(3)])
    with open_state(f"memory://{name}") as state:
        assert state.multiGet([["cat"], ["dog"]]) == [5, None]          # curr, not prev
    path = tmp_path / "wc.db"
    with SqliteState.transactional(path=path, table="t").open() as state:
        state.multiUpdate(4, [["cat"], [""]], [add(7), add(1)])
    with open_state(f"sqlite://{path}?table=t&type=transactional") as state:
        assert state.multiGet([["cat"], [""], ["dog"]]) == [7, 1, None]  # val
    assert open_state(SqliteState.transactional(path=path, table="t")).multiGet([["cat"]]) == [7]


SUPPORTED = "supported: es, http, https, memory, postgres, postgresql, redis, rediss, sqlite"
BAD_URLS = [
    ("ftp://127.0.0.1/wc", f"unknown state URL scheme 'ftp' in ftp://127.0.0.1/wc; {SUPPORTED}"),
    ("ftp://user:hunter2@files.example/wc",
     f"unknown state URL scheme 'ftp' in ftp://user:***@files.example/wc; {SUPPORTED}"),
    ("wordcount", "'wordcount' is not a state URL; examples: memory://wordcount, "
                  "sqlite:///var/lib/app/state.db?table=counts"),
    ("memory://", "memory state URL 'memory://' needs one name: memory://NAME"),
    ("memory://wc/extra", "memory state URL 'memory://wc/extra' needs one name: memory://NAME"),
    ("sqlite://", "sqlite state URL 'sqlite://' needs a file path: sqlite:///absolute/path.db or "
                  "sqlite://relative/path.db"),
    ("memory://wc?type=exactly_once",
     "state URL memory://wc?type=exactly_once: type='exactly_once' is not a state type; "
     "use type=opaque, type=transactional or type=non_transactional"),
    ("memory://wc?cache_size=big",
     "state URL memory://wc?cache_size=big: cache_size='big' is not an integer"),
    ("memory://wc?cache_size=-3", "cache_size must be an int >= 0, got -3"),
    ("memory://wc?table=t", "state URL memory://wc?table=***: unknown parameter table; memory URLs take "
                            "type, cache_size, txid_offset, max_conflict_retries, max_multi_get_batch_size, "
                            "max_multi_put_batch_size"),
    ("sqlite:///x.db?tabel=t&prefix=p",
     "state URL sqlite:///x.db?tabel=***&prefix=***: unknown parameters prefix, tabel; "
     "sqlite URLs take table, busy_timeout, synchronous, type"),
    ("memory://wc?type=opaque&type=transactional", "parameter 'type' given twice"),
    ("memory://wc?type", "state URL memory://wc?type cannot be parsed: a query field has no '=' "
                         "(each parameter is NAME=VALUE, joined by '&')"),
    ("sqlite:///x.db?table=bad-name", "SQLite table name 'bad-name' is not allowed"),
    ("sqlite:///x.db?busy_timeout=soon", "busy_timeout='soon' is not a number of seconds"),
]


@pytest.mark.parametrize(("url", "message"), BAD_URLS)
def test_bad_urls_get_clear_errors(url, message):
    with pytest.raises(StateConfigError) as caught:
        parse_state_url(url)
    assert message in str(caught.value)


def test_a_password_never_appears_in_errors():
    with pytest.raises(StateConfigError) as caught:
        parse_state_url("redis://:s3cret@host:6379/0?prefx=p")
    assert "s3cret" not in str(caught.value)


def test_not_a_string():
    with pytest.raises(StateConfigError, match="is not a state URL"):
        parse_state_url(None)


# -- reading creates nothing ---------------------------------------------------------------------

CREATED_BY = ("the topology that writes a state creates it with its first batch (a program that writes one "
              "itself opens it with open_state(url, create=True))")


def test_reading_a_mistyped_sqlite_path_fails_naming_it_and_creates_nothing(tmp_path):
    path = tmp_path / "mistyped" / "dir" / "x.db"
    with pytest.raises(StateUnavailableError) as info:
        open_state(f"sqlite://{path}")
    assert str(info.value) == (f"cannot use the state store at {path}: no such file (and no directory "
                               f"{path.parent}); nothing was created. Check the path: {CREATED_BY}")
    assert info.value.address == str(path)
    assert list(tmp_path.iterdir()) == []


def test_a_missing_file_in_an_existing_directory_and_a_factory_are_refused_too(tmp_path):
    path = tmp_path / "wc.db"
    for target in (f"sqlite://{path}?table=counts", SqliteState.opaque(path=path, table="counts")):
        with pytest.raises(StateUnavailableError) as info:
            open_state(target)
        assert str(info.value) == (f"cannot use the state store at {path}: no such file; nothing was "
                                   f"created. Check the path: {CREATED_BY}")
    assert list(tmp_path.iterdir()) == []


def test_a_missing_table_is_refused_and_not_created(tmp_path):
    path = tmp_path / "wc.db"
    with SqliteState.opaque(path=path, table="counts").open() as state:
        state.multiUpdate(0, [["cat"]], [add(1)])
    with pytest.raises(StateUnavailableError) as info:
        open_state(f"sqlite://{path}?table=count")
    assert str(info.value) == (f"cannot use the state store at {path}: no table 'count' in it "
                               f"(tables: counts); name the state's table with ?table=NAME")
    assert open_state(f"sqlite://{path}?table=counts").multiGet([["cat"]]) == [1]
    with pytest.raises(StateUnavailableError, match="no table 'count'"):
        open_state(f"sqlite://{path}?table=count")        # still not created by the failed read


def test_create_true_opens_as_a_topology_does(tmp_path):
    path = tmp_path / "new" / "prices.db"
    with open_state(f"sqlite://{path}?table=prices&type=transactional", create=True) as state:
        state.multiPut(0, [["apple"]], [0.5])
    assert open_state(f"sqlite://{path}?table=prices&type=transactional").multiGet([["apple"]]) == [0.5]
