"""`trident-spark query` in its own process against a real Redis and Elasticsearch-compatible server."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import uuid
from decimal import Decimal
from pathlib import Path

import pytest
import redis as redis_py

from trident_spark.state import ElasticsearchState, RedisState, StateUnavailableError, open_state

pytestmark = pytest.mark.integration

CLI = Path(sys.executable).with_name("trident-spark")


def query(*argv: str, extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run the console script as a user would, with a fixed-width plain terminal."""
    env = {k: v for k, v in os.environ.items() if k not in ("FORCE_COLOR", "TTY_COMPATIBLE", "NO_COLOR")}
    env["COLUMNS"] = "120"
    env.update(extra_env or {})
    return subprocess.run([str(CLI), "query", *argv], capture_output=True, text=True, timeout=60, env=env)


@pytest.fixture
def redis_prefix(redis_url):
    prefix = f"q-{uuid.uuid4().hex[:10]}"
    yield prefix
    client = redis_py.Redis.from_url(redis_url)
    names = list(client.scan_iter(match=f"{prefix}:*"))
    if names:
        client.delete(*names)
    client.close()


def test_reads_what_another_process_wrote_to_redis(redis_url, redis_prefix):
    spec = RedisState.opaque(url=redis_url, key_prefix=redis_prefix)
    with spec.open() as state:
        state.multiUpdate(0, [["cat", "en"], ["dog", "en"], ["us", 2024]],
                          [lambda o: 2, lambda o: 5, lambda o: 9])
        state.multiUpdate(1, [["cat", "en"]], [lambda o: o + 1])
    url = f"{redis_url}?prefix={redis_prefix}"

    done = query(url, "cat,en", "dog,en", "cat", '["us", 2024]', "us,2024")
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == (
        f"{url} (opaque)\n"
        "┏━━━━━━━━━━━━━━┳━━━━━━━━━━━┓\n"
        "┃ key          ┃ value     ┃\n"
        "┡━━━━━━━━━━━━━━╇━━━━━━━━━━━┩\n"
        "│ cat,en       │ 3         │\n"
        "│ dog,en       │ 5         │\n"
        "│ cat          │ (missing) │\n"
        "│ [\"us\", 2024] │ 9         │\n"
        "│ us,2024      │ (missing) │\n"
        "└──────────────┴───────────┘\n")

    done = query(url, "--format", "json", "--json-keys", '["cat", "en"]', '["us", "2024"]')
    assert (done.returncode, done.stderr) == (0, "")
    assert [json.loads(line) for line in done.stdout.splitlines()] == [
        {"key": ["cat", "en"], "value": 3}, {"key": ["us", "2024"], "value": None}]


def test_redis_state_of_another_kind_is_an_error(redis_url, redis_prefix):
    with RedisState.transactional(url=redis_url, key_prefix=redis_prefix).open() as state:
        state.multiUpdate(3, [["cat"]], [lambda o: 4])
    done = query(f"{redis_url}?prefix={redis_prefix}", "cat")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (
        f"error: {redis_url}?prefix={redis_prefix} key ['cat']: expected an opaque value, found [3, 4], "
        "which looks like a transactional value [txid, val]; the state was written as another kind: open it "
        "with the type it was written with (?type=... or X.transactional()/X.opaque()/"
        "X.nonTransactional()), or write to a new state\n")
    done = query(f"{redis_url}?prefix={redis_prefix}&type=transactional", "cat", "--format", "json")
    assert (done.returncode, done.stdout) == (0, '{"key": ["cat"], "value": 4}\n')


@pytest.fixture
def es_index(elasticsearch_url):
    index = f"q-{uuid.uuid4().hex[:10]}"
    yield index
    admin = ElasticsearchState.opaque(hosts=[elasticsearch_url], index=index).open_backing_map()
    admin.request("DELETE", f"/{index}")
    admin.close()


def test_reads_elasticsearch_and_never_creates_an_index(elasticsearch_url, es_index):
    url = f"{elasticsearch_url}/{es_index}"
    done = query(url, "cat")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == (f"error: cannot use the state store at {url}: no index '{es_index}'; nothing was "
                           f"created. Check the index name: the topology that writes a state creates it with "
                           f"its first batch (a program that writes one itself opens it with "
                           f"open_state(url, create=True))\n")
    with pytest.raises(StateUnavailableError, match=f"no index '{es_index}'; nothing was created"):
        open_state(url)
    admin = ElasticsearchState.opaque(hosts=[elasticsearch_url], index=es_index).open_backing_map()
    assert admin.request("HEAD", f"/{es_index}")[0] == 404
    admin.close()

    with ElasticsearchState.opaque(hosts=[elasticsearch_url], index=es_index).open() as state:
        state.multiUpdate(0, [["cat"], [7]], [lambda o: 2, lambda o: 3])
    done = query(url, "--format", "json", "--json-keys", '"cat"', "7", '"7"')
    assert (done.returncode, done.stderr) == (0, "")
    assert done.stdout == ('{"key": ["cat"], "value": 2}\n{"key": [7], "value": 3}\n'
                           '{"key": ["7"], "value": null}\n')


def test_after_a_run_query_reads_its_counts_and_a_reset_checkpoint_is_refused(spark, tmp_path):
    from trident_spark import TridentTopology
    from trident_spark.builtin import Count
    from trident_spark.errors import StateAheadError
    from trident_spark.spout import FeederBatchSpout
    from trident_spark.state import SqliteState

    state = SqliteState.opaque(path=str(tmp_path / "wc.db"), table="counts")
    url = f"sqlite://{tmp_path}/wc.db?table=counts"

    def run(batches, checkpoint):
        spout = FeederBatchSpout(["word"])
        for batch in batches:
            spout.feed([[word] for word in batch])
        topology = TridentTopology()
        topology.newStream("words", spout).groupBy(["word"]).persistentAggregate(state, Count(), ["count"])
        handle = topology.run(checkpoint_location=str(tmp_path / checkpoint), trigger="available_now",
                              spark=spark)
        try:
            handle.awaitTermination(120)
        finally:
            handle.stop()

    run([["cat", "dog", "cat"], ["cat"]], "first")            # txids 0 and 1
    expected = (0, '{"key": ["cat"], "value": 3}\n{"key": ["dog"], "value": 1}\n'
                   '{"key": ["bird"], "value": null}\n', "")
    done = query(url, "cat", "dog", "bird", "--format", "json")
    assert (done.returncode, done.stdout, done.stderr) == expected

    # A new checkpoint starts again at batch 0: the state holds txid 1 for "cat".
    with pytest.raises(StateAheadError) as raised:
        run([["cat"]], "reset")
    error = raised.value
    assert (error.address, error.key, error.stored_txid, error.batch_txid, error.txid_offset) == (
        url, ["cat"], 1, 0, 0)
    assert str(error).startswith(f"state is ahead of the stream: {url} key ['cat'] stored txid 1 > batch "
                                 f"txid 0; the checkpoint was reset or two queries write this state;")
    assert str(error).endswith("never let two queries write one state (stream 'words')")
    done = query(url, "cat", "dog", "bird", "--format", "json")
    assert (done.returncode, done.stdout, done.stderr) == expected  # nothing was overwritten


SHAPES = """
class Point:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __eq__(self, other):
        return type(other) is Point and (other.x, other.y) == (self.x, self.y)

    def __repr__(self):
        return f"Point({self.x}, {self.y})"
"""


@pytest.mark.parametrize("store", ["redis", "elasticsearch"])
def test_keys_and_values_of_any_type_read_back_in_another_process(store, redis_url, redis_prefix,
                                                                     elasticsearch_url, es_index, tmp_path,
                                                                     monkeypatch):
    (tmp_path / "shapes_for_query.py").write_text(SHAPES)
    monkeypatch.syspath_prepend(str(tmp_path))
    import shapes_for_query

    if store == "redis":
        spec = RedisState.opaque(url=redis_url, key_prefix=redis_prefix)
    else:
        spec = ElasticsearchState.opaque(hosts=[elasticsearch_url], index=es_index)
    values = [(1, "a"), b"\x00hi", datetime.date(2024, 5, 1), {1: "one"}, Decimal("1.50"),
              shapes_for_query.Point(1, 2), 2.5]
    with spec.open() as state:
        state.multiUpdate(0, [[1], [(2, "x")], [1.5], ["cat", 2024], [[1, 2]], ["p"], [True, "sum"]],
                          [lambda o, v=v: v for v in values])
        address = state.address
    url = spec.url
    done = query(url, "--json-keys", "true", '[{"~tuple": [2.0, "x"]}]', "1.5", '["cat", 2024.0]', "[[1, 2]]",
                 '"p"', '[1.0, "sum"]', extra_env={"PYTHONPATH": str(tmp_path)})
    assert (done.returncode, done.stderr) == (0, "")
    cells = [line.split("│")[1:3] for line in done.stdout.splitlines()[4:11]]
    assert [(key.strip(), value.strip()) for key, value in cells] == [
        ("true", "(1, 'a')"),
        ('[{"~tuple": [2.0, "x"]}]', "b'\\x00hi'"),
        ("1.5", "datetime.date(2024, 5, 1)"),
        ('["cat", 2024.0]', "{1: 'one'}"),
        ("[[1, 2]]", "Decimal('1.50')"),
        ('"p"', "Point(1, 2)"),
        ('[1.0, "sum"]', "2.5"),
    ]

    done = query(url, "--format", "json", "--json-keys", "1", '"p"', extra_env={"PYTHONPATH": str(tmp_path)})
    assert (done.returncode, done.stderr) == (0, "")
    lines = [json.loads(line) for line in done.stdout.splitlines()]
    assert lines[0] == {"key": [1], "value": {"~tuple": [1, "a"]}, "value_repr": "(1, 'a')"}
    assert lines[1]["key"] == ["p"] and lines[1]["value_repr"] == "Point(1, 2)"
    assert list(lines[1]["value"]) == ["~py"]

    # Where the class of a stored object cannot be imported, the error says so, and what to do.
    done = query(url, "--json-keys", '"p"')
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr.startswith(f"error: cannot read the stored value of key ['p'] in {address}: "
                                  f"ValueError: a pickled value (~py) cannot be unpickled here: "
                                  f"ModuleNotFoundError: No module named 'shapes_for_query'; the module that "
                                  f"defines its class must be importable where the state is read")
