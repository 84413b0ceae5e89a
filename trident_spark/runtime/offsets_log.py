"""Spark's offsets log as trident-spark reads it: one batch's file, parsed, and checked before a restart.

Spark logs each batch's offsets before it runs the batch, in ``<checkpoint>/<stream>/offsets/<batch>``:
a version line (``v1``), the batch's metadata (JSON: ``batchTimestampMs``, ``conf``), then one
line per source, the source's end offset as JSON (``-`` for a source without one). At a restart
Spark reads the latest file (and the one before it), and hands each source's line to the source;
a file cut short or overwritten then fails inside Spark's Python data source with a bare
``JSONDecodeError`` that names no file. :func:`check_offsets_log` reads those files first, on the
driver, and names the one that is malformed, its checkpoint, and what to do.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from trident_spark import checkpoint_files as files
from trident_spark.checkpoint_files import Location
from trident_spark.errors import TridentSparkError

#: The directory of Spark's offsets log in a stream's checkpoint directory.
OFFSETS_DIR = "offsets"
#: What Spark writes for a source without an offset in a batch.
VOID_OFFSET = "-"

_VERSION = re.compile(r"v[0-9]+")


class MalformedOffsetsError(TridentSparkError, ValueError):
    """A file of Spark's offsets log cannot be read as one: names the file, the batch, the stream's
    checkpoint directory, what is wrong, and what to do.

    Examples
    --------
    >>> print(MalformedOffsetsError("/ck/words/offsets/3", 3, "/ck/words", "it is empty"))
    ... # doctest: +NORMALIZE_WHITESPACE
    Spark's offsets file /ck/words/offsets/3 (batch 3 of the checkpoint /ck/words) is malformed: it is
    empty. Spark cannot start the stream from this checkpoint. What to do: restore the checkpoint
    directory from a backup; or run the stream with a new checkpoint directory, adopting its states
    there with txid_offset and the spout's starting offsets (docs/state.md, "StateAheadError: the
    checkpoint was reset")
    """

    def __init__(self, path: Location, batch_id: int, checkpoint: Location, reason: str) -> None:
        self.path = files.describe(path)
        self.batch_id = batch_id
        self.checkpoint = files.describe(checkpoint)
        super().__init__(
            f"Spark's offsets file {self.path} (batch {batch_id} of the checkpoint {self.checkpoint}) is "
            f"malformed: {reason}. Spark cannot start the stream from this checkpoint. What to do: restore "
            "the checkpoint directory from a backup; or run the stream with a new checkpoint directory, "
            "adopting its states there with txid_offset and the spout's starting offsets (docs/state.md, "
            "\"StateAheadError: the checkpoint was reset\")")


@dataclass(frozen=True)
class BatchOffsets:
    """One batch's file of Spark's offsets log.

    Attributes
    ----------
    metadata : dict
        The batch's metadata (``batchTimestampMs``, ``batchWatermarkMs``, ``conf``).
    sources : list
        Each source's end offset (parsed JSON), in the order the query reads its sources; None
        for a source Spark logged without one.
    """

    metadata: dict[str, Any]
    sources: list[Any]


def offsets_file(checkpoint: Location, batch_id: int) -> Location:
    """The file of batch ``batch_id`` in the stream checkpoint directory ``checkpoint``.

    Examples
    --------
    >>> from pathlib import Path
    >>> offsets_file(Path("/ck/words"), 3), offsets_file("s3a://b/ck/words", 3)
    (PosixPath('/ck/words/offsets/3'), 's3a://b/ck/words/offsets/3')
    """
    return files.join(checkpoint, OFFSETS_DIR, str(batch_id))


def parse_offsets(text: str, path: Location, batch_id: int, checkpoint: Location) -> BatchOffsets:
    """One file's text as Spark wrote it; :class:`MalformedOffsetsError` names what is wrong.

    Examples
    --------
    >>> parse_offsets('v1\\n{"batchTimestampMs": 5}\\n{"t": {"0": 9}}\\n-\\n', "/ck/w/offsets/0", 0, "/ck/w")
    BatchOffsets(metadata={'batchTimestampMs': 5}, sources=[{'t': {'0': 9}}, None])
    """
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()

    def malformed(reason: str) -> MalformedOffsetsError:
        return MalformedOffsetsError(path, batch_id, checkpoint, reason)

    if not lines or not text.strip():
        raise malformed("it is empty")
    if not _VERSION.fullmatch(lines[0].strip()):
        raise malformed(f"its first line is not Spark's version line (v1), it is {_shown(lines[0])}")
    if len(lines) < 2:
        raise malformed("it ends after the version line, without the batch's metadata")
    try:
        metadata = json.loads(lines[1])
    except ValueError as exc:
        raise malformed(f"line 2 (the batch's metadata) is not JSON: {exc}") from None
    if not isinstance(metadata, dict):
        raise malformed(f"line 2 (the batch's metadata) is not a JSON object, it is {_shown(lines[1])}")
    sources: list[Any] = []
    for number, line in enumerate(lines[2:], start=3):
        if line.strip() == VOID_OFFSET:
            sources.append(None)
            continue
        try:
            sources.append(json.loads(line))
        except ValueError as exc:
            raise malformed(f"line {number} (source {number - 2}'s offset) is not JSON: {exc}") from None
    return BatchOffsets(metadata, sources)


def read_offsets(checkpoint: Location, batch_id: int) -> BatchOffsets | None:
    """Batch ``batch_id``'s file of Spark's offsets log, parsed; None when there is none.

    Raises
    ------
    MalformedOffsetsError
        The file is there but is not one Spark wrote whole (named, with what to do).

    Examples
    --------
    >>> import tempfile
    >>> read_offsets(tempfile.mkdtemp(), 0) is None
    True
    """
    path = offsets_file(checkpoint, batch_id)
    try:
        data = files.read_bytes(path)
    except FileNotFoundError:
        return None
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise MalformedOffsetsError(path, batch_id, checkpoint, f"it is not UTF-8 text ({exc.reason} at "
                                                                f"byte {exc.start})") from None
    return parse_offsets(text, path, batch_id, checkpoint)


def logged_batches(checkpoint: Location) -> list[int]:
    """The batch ids with a file in the offsets log, in order (Spark's temporary and ``.crc``
    files are not batches)."""
    names = files.list_names(files.join(checkpoint, OFFSETS_DIR))
    return sorted(int(name) for name in names if name.isdigit())


def check_offsets_log(checkpoint: Location) -> None:
    """Before Spark restarts a stream from ``checkpoint``: the files it will read first (the
    latest batch's and the one before) must be whole, or :class:`MalformedOffsetsError` names the
    file (on the driver, before any query starts). A new checkpoint has none: nothing to check.

    Examples
    --------
    >>> import tempfile
    >>> check_offsets_log(tempfile.mkdtemp())
    """
    for batch_id in logged_batches(checkpoint)[-2:]:
        read_offsets(checkpoint, batch_id)


def _shown(line: str) -> str:
    return repr(line[:60] + ("..." if len(line) > 60 else ""))


__all__ = ["OFFSETS_DIR", "VOID_OFFSET", "BatchOffsets", "MalformedOffsetsError", "check_offsets_log",
           "logged_batches", "offsets_file", "parse_offsets", "read_offsets"]
