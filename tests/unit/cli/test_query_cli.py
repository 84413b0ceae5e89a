"""`trident-spark query STATE_URL KEY...`: current values of a state, read outside Spark."""

from __future__ import annotations

import base64
import datetime
import json
import pickle
import socket
import sqlite3
import threading
import uuid
from decimal import Decimal

import pytest

from trident_spark.cli.main import build_parser, main
from trident_spark.cli.query import parse_key
from trident_spark.state import GLOBAL_KEY, MemoryState, SqliteState


@pytest.fixture(autouse=True)
def plain_terminal(monkeypatch):
    """Rich draws the same table on every machine: no forced colours, a fixed width."""
    for name in ("FORCE_COLOR", "TTY_COMPATIBLE", "TTY_INTERACTIVE", "NO_COLOR"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("COLUMNS", "100")


@pytest.fixture
def counts(tmp_path):
    """An opaque SQLite state after two batches, and its URL."""
    path = tmp_path / "wc.db"
    with SqliteState.opaque(path=str(path), table="counts").open() as state:
        state.multiUpdate(0, [["cat"], ["dog"], ["us", 2024], ["1"], [1], [False], ["a,b"]],
                          [lambda old, v=v: v for v in (2, 5, 9, "string one", "int one", "false", {"n": 1})])
        state.multiUpdate(1, [["cat"]], [lambda old: old + 1])
    return f"sqlite://{path}?table=counts"


def run(capsys, *argv):
    code = main(["query", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_table_of_current_values_with_missing_keys(counts, capsys):
    code, out, err = run(capsys, counts, "cat", "dog", "bird", "us,2024", '["us", 2024]', '["a,b"]')
    assert (code, err) == (0, "")
    path = counts.removeprefix("sqlite://").removesuffix("?table=counts")
    assert out == (
        f"sqlite://{path}?table=counts (opaque)\n"
        "┏━━━━━━━━━━━━━━┳━━━━━━━━━━━┓\n"
        "┃ key          ┃ value     ┃\n"
        "┡━━━━━━━━━━━━━━╇━━━━━━━━━━━┩\n"
        "│ cat          │ 3         │\n"
        "│ dog          │ 5         │\n"
        "│ bird         │ (missing) │\n"
        "│ us,2024      │ (missing) │\n"
        "│ [\"us\", 2024] │ 9         │\n"
        "│ [\"a,b\"]      │ {\"n\": 1}  │\n"
        "└──────────────┴───────────┘\n")


def test_json_lines_keys_compare_as_python_values(counts, capsys):
    code, out, err = run(capsys, counts, "--format", "json", "--json-keys", "1", '"1"', "true", "1.0",
                         "[1.0]", "0.0", '["us", 2024.0]', "[2]", "null")
    assert (code, err) == (0, "")
    assert [json.loads(line) for line in out.splitlines()] == [
        {"key": [1], "value": "int one"},
        {"key": ["1"], "value": "string one"},
        {"key": [True], "value": "int one"},          # True == 1 == 1.0: one key, as a Python dict has it
        {"key": [1.0], "value": "int one"},
        {"key": [1.0], "value": "int one"},
        {"key": [0.0], "value": "false"},
        {"key": ["us", 2024.0], "value": 9},
        {"key": [2], "value": None},
        {"key": [None], "value": None},
    ]
    assert out.splitlines()[1] == '{"key": ["1"], "value": "string one"}'


def test_without_json_keys_every_group_value_is_a_string(counts, capsys):
    code, out, _ = run(capsys, counts, "1", "true", "cat,", "", "--format", "json")
    assert code == 0
    assert out == ('{"key": ["1"], "value": "string one"}\n'
                   '{"key": ["true"], "value": null}\n'
                   '{"key": ["cat", ""], "value": null}\n'
                   '{"key": [""], "value": null}\n')


def test_transactional_state_answers_val(tmp_path, capsys):
    path = tmp_path / "tx.db"
    with SqliteState.transactional(path=str(path)).open() as state:
        state.multiUpdate(4, [["cat"]], [lambda old: 7])
    code, out, err = run(capsys, f"sqlite://{path}?type=transactional", "cat", "--format", "json")
    assert (code, out, err) == (0, '{"key": ["cat"], "value": 7}\n', "")


def test_global_key_of_an_ungrouped_state(tmp_path, capsys):
    path = tmp_path / "total.db"
    with SqliteState.opaque(path=str(path)).open() as state:
        state.multiUpdate(0, [GLOBAL_KEY], [lambda old: 42])
    code, out, err = run(capsys, f"sqlite://{path}", "--global", "--format", "json")
    assert (code, out, err) == (0, '{"key": [], "value": 42}\n', "")
    code, out, _ = run(capsys, f"sqlite://{path}", "--global")
    assert out.splitlines()[4] == "│ (global) │ 42    │"


def test_memory_state_of_this_process(capsys):
    name = f"query-{uuid.uuid4().hex[:8]}"
    try:
        with MemoryState.opaque(name=name).open() as state:
            state.multiUpdate(0, [["cat"]], [lambda old: 3])
        code, out, err = run(capsys, f"memory://{name}", "cat", "dog", "--format", "json")
        assert (code, err) == (0, "")
        assert out == '{"key": ["cat"], "value": 3}\n{"key": ["dog"], "value": null}\n'
    finally:
        MemoryState.drop(name)


def test_an_empty_memory_state_says_where_memory_states_live(capsys):
    name = f"query-{uuid.uuid4().hex[:8]}"
    try:
        code, out, err = run(capsys, f"memory://{name}", "cat", "--format", "json")
    finally:
        MemoryState.drop(name)
    assert (code, out) == (0, '{"key": ["cat"], "value": null}\n')
    assert err == (f"note: memory://{name} is empty in this process: a memory state lives in the process "
                   f"that writes it; query a sqlite://, redis:// or es:// state from another process\n")


# -- errors: one line on stderr, exit 1 (the state) or 2 (the arguments), no traceback ----------

def test_bad_state_url(capsys):
    assert run(capsys, "sqlite://", "cat") == (
        1, "", "error: sqlite state URL 'sqlite://' needs a file path: sqlite:///absolute/path.db or "
               "sqlite://relative/path.db\n")
    code, out, err = run(capsys, "memory://wc?tpye=opaque", "cat")
    assert (code, out) == (1, "")
    assert err.startswith(
        "error: state URL memory://wc?tpye=***: unknown parameter tpye; memory URLs take ")


def test_missing_sqlite_file_is_an_error_and_is_not_created(tmp_path, capsys):
    path = tmp_path / "typo" / "wc.db"
    assert run(capsys, f"sqlite://{path}", "cat") == (
        1, "", f"error: cannot use the state store at {path}: no such file (and no directory {path.parent}); "
               f"nothing was created. Check the path: the topology that writes a state creates it with its "
               f"first batch (a program that writes one itself opens it with open_state(url, create=True))\n")
    assert not path.parent.exists()
    path.parent.mkdir()
    code, _, err = run(capsys, f"sqlite://{path}", "cat")
    assert code == 1 and f"at {path}: no such file; nothing was created. Check the path: " in err
    assert list(path.parent.iterdir()) == []


def test_missing_sqlite_table_is_an_error_and_is_not_created(counts, capsys):
    path = counts.removeprefix("sqlite://").removesuffix("?table=counts")
    assert run(capsys, f"sqlite://{path}?table=count", "cat") == (
        1, "", f"error: cannot use the state store at {path}: no table 'count' in it (tables: counts); "
               f"name the state's table with ?table=NAME\n")
    with sqlite3.connect(path) as db:
        assert [r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")] == ["counts"]


def test_reading_a_state_as_the_wrong_type(counts, capsys):
    code, out, err = run(capsys, counts + "&type=transactional", "cat")
    assert (code, out) == (1, "")
    assert err == (
        f"error: {counts} key ['cat']: expected a transactional value, found [1, 3, 2], which looks like an "
        "opaque value [txid, curr, prev]; the state was written as another kind: open it with the type it "
        "was written with (?type=... or X.transactional()/X.opaque()/X.nonTransactional()), or write to a "
        "new state\n")


@pytest.mark.timeout(20)
def test_unreachable_redis_fails_fast_naming_the_address(capsys):
    code, out, err = run(capsys, "redis://127.0.0.1:1/0?prefix=wc", "cat")
    assert (code, out) == (1, "")
    assert err.startswith("error: cannot use the state store at redis://127.0.0.1:1/0?prefix=wc: "
                          "ConnectionError: Error 111 connecting to 127.0.0.1:1. Connection refused.")
    assert err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.timeout(20)
def test_a_redis_that_never_answers_fails_after_socket_timeout(capsys):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        accepted: list[socket.socket] = []
        thread = threading.Thread(target=lambda: accepted.append(server.accept()[0]), daemon=True)
        thread.start()
        code, out, err = run(capsys, f"redis://127.0.0.1:{port}/0?socket_timeout=1", "cat")
        for conn in accepted:
            conn.close()
    assert (code, out) == (1, "")
    assert err.startswith(f"error: cannot use the state store at redis://127.0.0.1:{port}/0?prefix=trident: "
                          f"TimeoutError: Timeout reading from socket")


@pytest.mark.timeout(20)
def test_an_elasticsearch_that_never_answers_fails_after_connect_timeout(capsys):
    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        code, out, err = run(capsys, f"es://127.0.0.1:{port}/wc?connect_timeout=1", "cat")
    assert (code, out) == (1, "")
    assert err.startswith(
        f"error: cannot use the state store at http://127.0.0.1:{port}/wc: ConnectionTimeout: ")


@pytest.mark.timeout(20)
def test_unreachable_elasticsearch_fails_fast_naming_the_address(capsys):
    code, out, err = run(capsys, "es://127.0.0.1:1/wc", "cat")
    assert (code, out) == (1, "")
    assert err.startswith("error: cannot use the state store at http://127.0.0.1:1/wc: ConnectionError: ")
    assert err.count("\n") == 1


@pytest.mark.parametrize(("argv", "message"), [
    ([], "give at least one KEY, or --global for the value of an ungrouped state"),
    (["[x"], "KEY '[x' is not valid JSON (Expecting value at character 1); a KEY that starts with '[' is a "
             "JSON list such as '[\"us\", 2024]'; to read the string '[x', write '[\"[x\"]'"),
    (["--json-keys", "cat"], "KEY 'cat' is not valid JSON (Expecting value at character 0); with "
                             "--json-keys every KEY is one JSON value: a string is quoted ('\"cat\"'), "
                             "a compound key is a list ('[\"us\", 2024]')"),
    (["[]"], "KEY '[]' has no group values; the key of an ungrouped state is --global"),
])
def test_bad_keys_are_usage_errors(argv, message, capsys):
    assert run(capsys, "memory://never-opened", *argv) == (2, "", f"error: {message}\n")


def test_a_key_value_of_a_type_keys_cannot_hold(counts, capsys):
    pickled = base64.b64encode(pickle.dumps(1 + 2j)).decode()
    code, out, err = run(capsys, counts, "--json-keys", f'{{"~py": "{pickled}"}}')
    assert (code, out) == (1, "")
    assert err.startswith("error: cannot use (1+2j) (complex) in a state key: group values of a state must "
                          "be str, numbers (int, float, Decimal, Fraction), bool, None, bytes, date, ")


def test_a_tagged_key_that_cannot_be_read_is_a_usage_error(capsys):
    assert run(capsys, "memory://never-opened", '[{"~bytes": "not base64!"}]') == (
        2, "", "error: KEY '[{\"~bytes\": \"not base64!\"}]': cannot read a ~bytes value from "
               "'not base64!': Error: Only base64 data is allowed\n")


@pytest.fixture
def any_values(tmp_path):
    """A non-transactional SQLite state whose keys and values are of types JSON lacks, and its URL."""
    path = tmp_path / "any.db"
    with SqliteState.nonTransactional(path=str(path)).open() as state:
        state.multiPut(0, [[(1, 2)], [b"hi"], [datetime.date(2024, 5, 1)], [{"n": [1, 0]}], [1.5], ["nan"]],
                       [{"~x": (3, 4)}, b"\x00\xff", datetime.datetime(2024, 5, 1, 10, 30),
                        Decimal("1.50"), {1.5, 2}, float("nan")])
    return f"sqlite://{path}?type=non_transactional"


def test_keys_and_values_of_types_json_lacks_in_a_table(any_values, capsys):
    code, out, err = run(capsys, any_values, '[{"~tuple": [1, 2]}]', '[{"~bytes": "aGk="}]',
                         '[{"~date": "2024-05-01"}]', '[{"n": [1.0, false]}]', "[1.5]", "nan")
    assert (code, err) == (0, "")
    assert out.splitlines()[4:11] == [
        '│ [{"~tuple": [1, 2]}]      │ {\'~x\': (3, 4)}                        │',
        '│ [{"~bytes": "aGk="}]      │ b\'\\x00\\xff\'                           │',
        '│ [{"~date": "2024-05-01"}] │ datetime.datetime(2024, 5, 1, 10, 30) │',
        '│ [{"n": [1.0, false]}]     │ Decimal(\'1.50\')                       │',
        '│ [1.5]                     │ {1.5, 2}                              │',
        '│ nan                       │ nan                                   │',
        '└───────────────────────────┴───────────────────────────────────────┘']


def test_keys_and_values_of_types_json_lacks_as_json_lines(any_values, capsys):
    code, out, err = run(capsys, any_values, "--format", "json", '[{"~tuple": [1, 2]}]',
                         '[{"~bytes": "aGk="}]', '[{"n": [true, 0.0]}]', "[1.5]")
    assert (code, err) == (0, "")
    assert out.splitlines() == [
        '{"key": [{"~tuple": [1, 2]}], "value": {"~dict": [["~x", {"~tuple": [3, 4]}]]}, '
        '"value_repr": "{\'~x\': (3, 4)}"}',
        '{"key": [{"~bytes": "aGk="}], "value": {"~bytes": "AP8="}, "value_repr": "b\'\\\\x00\\\\xff\'"}',
        '{"key": [{"n": [true, 0.0]}], "value": {"~decimal": "1.50"}, "value_repr": "Decimal(\'1.50\')"}',
        '{"key": [1.5], "value": {"~set": [1.5, 2]}, "value_repr": "{1.5, 2}"}']


# -- parsing ---------------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "json_keys", "key"), [
    ("cat", False, ["cat"]),
    ("cat,en", False, ["cat", "en"]),
    ("42", False, ["42"]),
    ('["cat", "en"]', False, ["cat", "en"]),
    (' ["us", 2024, true, null, 1.5]', False, ["us", 2024, True, None, 1.5]),
    ("42", True, [42]),
    ('"42"', True, ["42"]),
    ("false", True, [False]),
    ('["a,b"]', True, ["a,b"]),
    ('[{"~tuple": [1, 2]}, {"~date": "2024-05-01"}]', False, [(1, 2), datetime.date(2024, 5, 1)]),
    ('{"~set": [1]}', True, [{1}]),
    ('{"a": 1}', True, [{"a": 1}]),
])
def test_parse_key(text, json_keys, key):
    assert parse_key(text, json_keys=json_keys) == key


def test_options_may_come_between_keys():
    args = build_parser().parse_args(["query", "memory://wc", "cat", "--format", "json", "dog", "--global"])
    assert (args.url, args.keys, args.format, args.global_key, args.json_keys) == (
        "memory://wc", ["cat", "dog"], "json", True, False)

