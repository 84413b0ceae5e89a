"""``trident-spark query STATE_URL KEY...``: read a state's current values, DRPC-style, outside Spark."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import TridentSparkError

HELP = "read current values of a state (Trident's DRPC-style reads)"
DESCRIPTION = """\
Read the current values of keys of a state, as Trident's DRPC queries did:
`curr` of an opaque state, `val` of a transactional one, the value of a
non-transactional one; a key that is not in the state is shown as (missing)
(null with --format json). Nothing is written or created: a SQLite file or
table, or an Elasticsearch index, that does not exist is an error (the
topology that writes a state creates it).

STATE_URL is what open_state() takes: memory://NAME, sqlite:///path.db?table=T,
redis://host:6379/0?prefix=P, es://host:9200/INDEX; add type=transactional or
type=non_transactional to read a state of that kind (default: opaque).

KEY is one key, written as the group values of the state's groupBy fields:
  cat              one group value, the string "cat"
  cat,en           a compound key (two group fields): "cat" and "en"
  '["cat", "en"]'  the same as a JSON list; JSON gives typed values: '["us", 2024]'
                   is "us" and the integer 2024
Keys compare as Python values do: 1, 1.0 and true are one key, "1" is another;
without JSON every group value is a string. With --json-keys every KEY is one
JSON value (a list for a compound key): 42, true, '"42"', '[1, 2]'. A string
with a comma, or one that starts with "[", is written as JSON: '["a,b"]'. A
group value JSON lacks is written in the state's tagged form (docs/state.md):
'[{"~tuple": [1, 2]}]' is the tuple (1, 2), '[{"~bytes": "aGk="}]' b"hi",
'[{"~date": "2024-05-01"}]' a date.

Values are shown as JSON; a value JSON lacks (a tuple, bytes, a datetime, a
user object) is shown as its Python repr in the table, and with --format json
in the tagged form the state stores, plus "value_repr": its Python repr.
"""
EPILOG = """examples:
  trident-spark query "sqlite:///tmp/wc.db?table=counts" cat dog
      the counts of "cat" and "dog" in an opaque SQLite state
  trident-spark query "redis://127.0.0.1:6379/0?prefix=wc&type=transactional" cat,en '["dog", "fr"]'
      two compound keys (word, language) of a transactional Redis state
  trident-spark query es://127.0.0.1:9200/clicks --json-keys 2024 '["us", 7]'
      typed keys: the integer 2024, and "us" with the integer 7
  trident-spark query "sqlite:///tmp/total.db" --global --format json
      the value of an ungrouped persistentAggregate, as JSON

output: a table, or with --format json one line per key: {"key": [...], "value": ...}
        (and "value_repr" for a value JSON lacks)
exit status: 0 values read (missing keys included), 1 the state cannot be read, 2 bad arguments
"""
MISSING = "(missing)"
GLOBAL = "(global)"


class KeySyntaxError(TridentSparkError, ValueError):
    """A KEY argument cannot be read."""


@dataclass(frozen=True)
class Query:
    """One key to read: the group values, and how the user wrote it (shown in the table)."""

    key: list[Any]
    shown: str


def register(commands: Any) -> None:
    parser = commands.add_parser("query", help=HELP, description=DESCRIPTION, epilog=EPILOG,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("url", metavar="STATE_URL", help="the state, as open_state() takes it")
    parser.add_argument("keys", metavar="KEY", nargs="*",
                        help="a key: cat, cat,en (compound) or a JSON list '[\"us\", 2024]'")
    parser.add_argument("--global", dest="global_key", action="store_true",
                        help="read the single value of an ungrouped state (Trident's global key)")
    parser.add_argument("--json-keys", action="store_true",
                        help="read every KEY as one JSON value (typed: 42, true, '\"42\"', '[\"us\", 7]')")
    parser.add_argument("--format", choices=("table", "json"), default="table",
                        help="table (default), or json: one JSON object per key per line")
    parser.set_defaults(handler=main)


def parse_key(text: str, *, json_keys: bool = False) -> list[Any]:
    """The group values a KEY argument names.

    Examples
    --------
    >>> parse_key("cat"), parse_key("cat,en"), parse_key('["us", 2024]')
    (['cat'], ['cat', 'en'], ['us', 2024])
    >>> parse_key("1"), parse_key("1", json_keys=True), parse_key('"1"', json_keys=True)
    (['1'], [1], ['1'])
    >>> parse_key('[{"~tuple": [1, 2]}, {"~bytes": "aGk="}]')
    [(1, 2), b'hi']
    """
    from trident_spark.state.pyvalues import decode_object

    if not json_keys and not text.lstrip().startswith("["):
        return text.split(",")
    try:
        value = json.loads(text, object_hook=decode_object)
    except ValueError as exc:
        if not isinstance(exc, json.JSONDecodeError):
            raise KeySyntaxError(f"KEY {text!r}: {exc}") from None
        if json_keys:
            hint = ("with --json-keys every KEY is one JSON value: a string is quoted ('\"cat\"'), "
                    "a compound key is a list ('[\"us\", 2024]')")
        else:
            hint = (f"a KEY that starts with '[' is a JSON list such as '[\"us\", 2024]'; "
                    f"to read the string {text!r}, write {json.dumps([text])!r}")
        raise KeySyntaxError(f"KEY {text!r} is not valid JSON ({exc.msg} at character {exc.pos}); "
                             f"{hint}") from None
    if not isinstance(value, list):
        return [value]
    if not value:
        raise KeySyntaxError(f"KEY {text!r} has no group values; the key of an ungrouped state is --global")
    return value


def queries(args: argparse.Namespace) -> list[Query]:
    """The keys to read, in the order given (the global key first)."""
    found = [Query([], GLOBAL)] if args.global_key else []
    found += [Query(parse_key(text, json_keys=args.json_keys), text) for text in args.keys]
    if not found:
        raise KeySyntaxError("give at least one KEY, or --global for the value of an ungrouped state")
    return found


def read(url: str, wanted: list[Query]) -> tuple[str, str, list[Any]]:
    """``(address, state type, values)`` of the keys, read from the state at ``url``."""
    from trident_spark.state import MemoryState, open_state, parse_state_url
    from trident_spark.state.redaction import redact_url

    factory = parse_state_url(url)
    if isinstance(factory, MemoryState) and len(MemoryState.store(factory.name)) == 0:
        print(f"note: {redact_url(url)} is empty in this process: a memory state lives in the process "
              f"that writes it; "
              f"query a sqlite://, redis:// or es:// state from another process", file=sys.stderr)
    with open_state(factory) as state:  # a missing file, table or index is an error, not an empty state
        values = state.multiGet([q.key for q in wanted])
        return state.address, state.state_type.value, values


def as_json(value: Any) -> str:
    """JSON text of a value, with the state's tags for values JSON lacks.

    Examples
    --------
    >>> as_json({"n": [1, 2.5]}), as_json((1, b"hi"))
    ('{"n": [1, 2.5]}', '{"~tuple": [1, {"~bytes": "aGk="}]}')
    """
    from trident_spark.state.pyvalues import to_json

    return json.dumps(to_json(value), ensure_ascii=False)


def shown(value: Any) -> str:
    """A value as the table shows it: JSON text if it is JSON, else its Python repr.

    Examples
    --------
    >>> shown({"n": 1}), shown((1, 2)), shown(b"hi")
    ('{"n": 1}', '(1, 2)', "b'hi'")
    """
    from trident_spark.state.pyvalues import is_plain_json

    return as_json(value) if is_plain_json(value) else repr(value)


def json_line(key: list[Any], value: Any) -> str:
    """The --format json line of one key: key and value as JSON (tagged), and the repr of a non-JSON value.

    Examples
    --------
    >>> json_line(["cat"], 3)
    '{"key": ["cat"], "value": 3}'
    >>> json_line([(1, 2)], {1.5})
    '{"key": [{"~tuple": [1, 2]}], "value": {"~set": [1.5]}, "value_repr": "{1.5}"}'
    """
    from trident_spark.state.pyvalues import is_plain_json, to_json

    line = {"key": to_json(key), "value": to_json(value)}
    if not is_plain_json(value):
        line["value_repr"] = repr(value)
    return json.dumps(line, ensure_ascii=False)


def main(args: argparse.Namespace) -> int:
    try:
        wanted = queries(args)
    except KeySyntaxError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    address, kind, values = read(args.url, wanted)  # an error: `error: ...`, status 1 (cli/failure.py)
    if args.format == "json":
        for q, value in zip(wanted, values, strict=True):
            print(json_line(q.key, value))
        return 0
    from rich.console import Console
    from rich.table import Table
    from rich.text import Text

    console = Console(highlight=False)
    console.print(Text(f"{address} ({kind})"), soft_wrap=True)  # a long URL stays one line
    table = Table()
    table.add_column("key")
    table.add_column("value")
    for q, value in zip(wanted, values, strict=True):
        table.add_row(Text(q.shown), Text(MISSING, style="dim") if value is None else Text(shown(value)))
    console.print(table)
    return 0
