"""Decoding keys and values into Arrow: bytes, UTF-8 text, JSON objects; naming bad records."""

from __future__ import annotations

import pyarrow as pa
import pytest

from trident_spark.spout.formats.decode import decode_column

USER = pa.struct([("user", pa.string()), ("clicks", pa.int32())])


def decode(raw, arrow_type, what="str"):
    errors = [None] * len(raw)
    column = decode_column(raw, arrow_type, what, errors)
    return column, errors


def test_bytes_pass_through_unchanged():
    raw = [b"\x00\xff", b"", None, "héllo".encode()]
    column, errors = decode(raw, pa.binary(), "bytes")
    assert column.type == pa.binary()
    assert column.to_pylist() == raw
    assert errors == [None] * 4


def test_utf8_text():
    raw = [b"the cat", "naïve — ☃".encode(), b""]
    column, errors = decode(raw, pa.string())
    assert column.type == pa.string()
    assert column.to_pylist() == ["the cat", "naïve — ☃", ""]
    assert errors == [None, None, None]


def test_tombstones_stay_null():
    column, errors = decode([b"a", None, b"b"], pa.string())
    assert column.to_pylist() == ["a", None, "b"]
    assert errors == [None, None, None]


def test_invalid_utf8_value_is_null_and_noted():
    column, errors = decode([b"ok", b"\xff\xfe", None, b"fine"], pa.string())
    assert column.type == pa.string()
    assert column.to_pylist() == ["ok", None, None, "fine"]
    assert errors == [None, "value is not valid UTF-8", None, None]


def test_invalid_utf8_key_says_key():
    _, errors = decode([b"\xc3"], pa.string(), "key")
    assert errors == ["key is not valid UTF-8"]


def test_first_error_of_a_record_is_kept():
    errors = ["key is not valid UTF-8", None]
    column = decode_column([b"\xff", b"\xff"], pa.string(), "str", errors)
    assert column.to_pylist() == [None, None]
    assert errors == ["key is not valid UTF-8", "value is not valid UTF-8"]


def test_json_objects_parse_into_the_struct():
    raw = [b'{"user": "ann", "clicks": 3}', b'{"clicks": 7, "user": "bob", "extra": [1, 2]}',
           b'{"user": "cy"}']
    column, errors = decode(raw, USER, "json")
    assert column.type == USER
    assert column.to_pylist() == [{"user": "ann", "clicks": 3}, {"user": "bob", "clicks": 7},
                                  {"user": "cy", "clicks": None}]
    assert errors == [None, None, None]


def test_json_with_null_records_keeps_them_null_in_place():
    raw = [None, b'{"user": "ann", "clicks": 1}', None, b'{"user": "bob", "clicks": 2}']
    column, errors = decode(raw, USER, "json")
    assert column.type == USER
    assert column.to_pylist() == [None, {"user": "ann", "clicks": 1}, None, {"user": "bob", "clicks": 2}]
    assert errors == [None] * 4


def test_json_all_null():
    column, errors = decode([None, None], USER, "json")
    assert column.type == USER
    assert column.to_pylist() == [None, None]
    assert errors == [None, None]


def test_pretty_printed_json_still_parses():
    raw = [b'{\n  "user": "ann",\n  "clicks": 3\n}', b'{"user": "bob", "clicks": 4}']
    column, errors = decode(raw, USER, "json")
    assert column.type == USER
    assert column.to_pylist() == [{"user": "ann", "clicks": 3}, {"user": "bob", "clicks": 4}]
    assert errors == [None, None]


def test_malformed_json_is_null_and_noted():
    raw = [b'{"user": "ann", "clicks": 1}', b"{not json", b'{"user": "bob", "clicks": 2}']
    column, errors = decode(raw, USER, "json")
    assert column.to_pylist() == [{"user": "ann", "clicks": 1}, None, {"user": "bob", "clicks": 2}]
    assert errors[0] is None and errors[2] is None
    assert errors[1].startswith("value is not JSON matching value_schema (")


@pytest.mark.parametrize(("raw", "kind"), [(b"[1, 2]", "list"), (b'"text"', "str"), (b"42", "int")])
def test_json_that_is_not_an_object(raw, kind):
    column, errors = decode([raw, b'{"user": "ok", "clicks": 0}'], USER, "json")
    assert column.to_pylist() == [None, {"user": "ok", "clicks": 0}]
    assert errors[0] == f"value is not JSON matching value_schema (a JSON object was expected, got {kind})"
    assert errors[1] is None


def test_json_field_of_the_wrong_type():
    raw = [b'{"user": "ann", "clicks": "many"}', b'{"user": "bob", "clicks": 2}']
    column, errors = decode(raw, USER, "json")
    assert column.to_pylist() == [None, {"user": "bob", "clicks": 2}]
    assert errors[0].startswith("value is not JSON matching value_schema (")
    assert errors[1] is None


def test_json_invalid_utf8_is_noted():
    column, errors = decode([b'{"user": "\xff"}'], USER, "json")
    assert column.to_pylist() == [None]
    assert errors[0].startswith("value is not JSON matching value_schema")


def test_unsupported_arrow_type():
    with pytest.raises(TypeError, match="no decoder for Arrow type int64"):
        decode([b"1"], pa.int64())


def test_json_nested_100000_deep_is_one_malformed_record():
    deep = b"[" * 100_000 + b"]" * 100_000  # json.loads raises RecursionError on it
    column, errors = decode([b'{"user": "a", "clicks": 1}', deep, b'{"user": "b"}'], USER, "json")
    assert column.to_pylist() == [{"user": "a", "clicks": 1}, None, {"user": "b", "clicks": None}]
    assert errors == [None, "value is not JSON matching value_schema (nested deeper than Python's JSON "
                            "reader goes: RecursionError)", None]


def test_a_record_slower_than_the_decode_bound_is_malformed(monkeypatch):
    from trident_spark.spout.formats import decode as kafka_decode

    clock = iter([0.0, 0.5, 15.5, 15.6])  # the second record takes 15 s
    monkeypatch.setattr(kafka_decode.time, "perf_counter", lambda: next(clock))
    errors = [None, None, None]
    raw = [b'{"user": "a"}', b'{"user": "b"}', b"[3]"]  # the third sends the column record by record
    column = decode_column(raw, USER, "json", errors, decode_timeout_s=10)
    assert column.to_pylist() == [{"user": "a", "clicks": None}, None, None]
    assert errors[1] == ("value took 15.0 s to decode, more than the 10 s a record may take "
                         "(KafkaSpoutConfig.decode_timeout_s)")
    assert errors[2] == "value is not JSON matching value_schema (a JSON object was expected, got list)"
