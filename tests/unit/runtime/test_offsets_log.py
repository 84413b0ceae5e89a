"""Spark's offsets log read by trident-spark: a corrupted file is named, with its checkpoint and
what to do, before Spark would fail on it with a bare JSONDecodeError."""

from __future__ import annotations

import doctest
import importlib

import pytest

from trident_spark.runtime.offsets_log import (
    BatchOffsets,
    MalformedOffsetsError,
    check_offsets_log,
    read_offsets,
)
from trident_spark.runtime.state_commits import batch_offsets

GOOD = 'v1\n{"batchWatermarkMs":0,"batchTimestampMs":17}\n{"offsets":{"t":{"0":5}}}\n-\n'
WHAT_TO_DO = ("Spark cannot start the stream from this checkpoint. What to do: restore the checkpoint "
              "directory from a backup; or run the stream with a new checkpoint directory, adopting its "
              "states there with txid_offset and the spout's starting offsets (docs/state.md, "
              "\"StateAheadError: the checkpoint was reset\")")


def _log(stream_dir, files: dict[int, str | bytes]) -> None:
    offsets = stream_dir / "offsets"
    offsets.mkdir(parents=True)
    for batch, content in files.items():
        target = offsets / str(batch)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content)
    (offsets / ".0.crc").write_bytes(b"\x00crc")             # Spark's checksum files: not batches


def test_a_whole_file_is_read_with_a_void_source(tmp_path):
    _log(tmp_path, {0: GOOD})
    assert read_offsets(tmp_path, 0) == BatchOffsets(
        {"batchWatermarkMs": 0, "batchTimestampMs": 17}, [{"offsets": {"t": {"0": 5}}}, None])
    assert read_offsets(tmp_path, 1) is None


@pytest.mark.parametrize(("content", "reason"), [
    ('v1\n{"batchWatermarkMs":0}\n{not json\n',
     "line 3 (source 1's offset) is not JSON: Expecting property name enclosed in double quotes: "
     "line 1 column 2 (char 1)"),
    ("", "it is empty"),
    ("\x00" * 40, "its first line is not Spark's version line (v1), it is '" + "\\x00" * 40 + "'"),
    ("v1\n", "it ends after the version line, without the batch's metadata"),
    ('v1\n{"batchWatermarkMs":0', "line 2 (the batch's metadata) is not JSON: Expecting ',' delimiter: "
                                  "line 1 column 22 (char 21)"),
    ("v1\n[1]\n", "line 2 (the batch's metadata) is not a JSON object, it is '[1]'"),
    (b'v1\n{}\n{"t":"\xff"}\n', "it is not UTF-8 text (invalid start byte at byte 12)"),
])
def test_a_corrupted_latest_file_is_named_with_its_checkpoint_and_what_to_do(tmp_path, content, reason):
    """The attack (or a full disk): the latest offsets file cut short or overwritten. Spark would
    fail on it inside its Python data source with a JSONDecodeError naming no file."""
    stream_dir = tmp_path / "ck" / "words"
    _log(stream_dir, {0: GOOD, 1: GOOD, 2: content})
    with pytest.raises(MalformedOffsetsError) as bad:
        check_offsets_log(stream_dir)
    assert str(bad.value) == (f"Spark's offsets file {stream_dir}/offsets/2 (batch 2 of the checkpoint "
                              f"{stream_dir}) is malformed: {reason}. {WHAT_TO_DO}")
    assert (bad.value.path, bad.value.batch_id) == (str(stream_dir / "offsets" / "2"), 2)


def test_the_one_before_the_latest_is_checked_too_and_older_ones_are_not_read(tmp_path):
    stream_dir = tmp_path / "words"
    _log(stream_dir, {0: "garbage", 1: "v1\n{}\n{bad\n", 2: GOOD})
    with pytest.raises(MalformedOffsetsError, match=r"offsets/1 \(batch 1 of"):
        check_offsets_log(stream_dir)      # Spark reads batch 1's end as batch 2's start
    (stream_dir / "offsets" / "1").write_text(GOOD)
    check_offsets_log(stream_dir)          # batch 0's file: Spark no longer reads it at a restart


def test_a_new_checkpoint_has_nothing_to_check(tmp_path):
    check_offsets_log(tmp_path / "new")
    check_offsets_log(tmp_path)


def test_the_state_commits_read_of_a_batchs_offsets_names_a_corrupted_file(tmp_path):
    _log(tmp_path, {0: GOOD, 1: 'v1\n{}\n{"offsets":{"t":\n'})
    assert batch_offsets(tmp_path, 0, ["a", "b"]) == {"a": {"offsets": {"t": {"0": 5}}}, "b": None}
    assert batch_offsets(tmp_path, 7, ["a"]) == {}
    expected = (r"offsets/1 \(batch 1 of the checkpoint .*\) is malformed: "
                r"line 3 \(source 1's offset\) is not JSON")
    with pytest.raises(MalformedOffsetsError, match=expected):
        batch_offsets(tmp_path, 1, ["a"])


@pytest.mark.parametrize("module", ["trident_spark.runtime.offsets_log",
                                    "trident_spark.runtime.state_commits", "trident_spark.checkpoint_files"])
def test_docstring_examples_run(module):
    result = doctest.testmod(importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE)
    assert result.failed == 0 and result.attempted > 0
