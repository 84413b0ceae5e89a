"""The FeederBatchSpout's batches on disk: one Arrow IPC file per fed batch.

``<directory>/batch-00000000.arrow`` is the first batch fed,
``batch-00000001.arrow`` the second, and so on. A file appears whole or not
at all (written to a temporary name, then linked into place), and is never
rewritten: a batch that Spark replays after a driver restart reads exactly the
rows it read the first time.

Both sides use this module: ``feed()`` on the driver writes, the data source
(in the Python processes Spark starts) counts and reads. It needs only the
directory's path, never the spout object.
"""

from __future__ import annotations

import contextlib
import os
import re
import uuid
from collections.abc import Sequence

import pyarrow as pa

_NAME = "batch-{:08d}.arrow"
_PATTERN = re.compile(r"batch-(\d{8})\.arrow")


def batch_path(directory: str, index: int) -> str:
    """Where batch ``index`` (0 for the first fed) lives."""
    return os.path.join(directory, _NAME.format(index))


def count_batches(directory: str) -> int:
    """How many batches were fed: the files ``0, 1, ...`` present without a gap.

    Raises
    ------
    FileNotFoundError
        When ``directory`` does not exist (deleted, or on another machine).
    """
    present = {int(m.group(1)) for name in os.listdir(directory) if (m := _PATTERN.fullmatch(name))}
    count = 0
    while count in present:
        count += 1
    return count


def write_batch(directory: str, index: int, table: pa.Table) -> str:
    """Store ``table`` as batch ``index``, atomically; fail if that batch already exists.

    Raises
    ------
    FileExistsError
        When batch ``index`` is already there (another spout feeds the same directory).
    """
    final = batch_path(directory, index)
    temporary = os.path.join(directory, f".{os.path.basename(final)}.{uuid.uuid4().hex}.tmp")
    try:
        with pa.OSFile(temporary, "wb") as sink, pa.ipc.new_file(sink, table.schema) as writer:
            writer.write_table(table)
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        try:
            os.link(temporary, final)  # never replaces an existing batch, unlike rename
        except FileExistsError:
            raise FileExistsError(
                f"FeederBatchSpout: batch {index} already exists in {directory}; is another spout "
                f"feeding this directory? Give each spout its own directory.") from None
        except OSError:  # a file system without hard links
            if os.path.exists(final):
                raise
            os.replace(temporary, final)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
    _sync_directory(directory)
    return final


def _sync_directory(directory: str) -> None:
    with contextlib.suppress(OSError):  # not every platform can open a directory
        descriptor = os.open(directory, os.O_RDONLY)
        try:
            os.fsync(descriptor)
        finally:
            os.close(descriptor)


def read_batch(directory: str, index: int) -> pa.Table:
    """The rows of batch ``index``, as fed (in the Arrow types it was written with)."""
    path = batch_path(directory, index)
    try:
        with pa.OSFile(path, "rb") as source:
            return pa.ipc.open_file(source).read_all()
    except FileNotFoundError:
        raise FileNotFoundError(
            f"FeederBatchSpout: batch {index} is missing from {directory} ({path}); the stream's "
            f"checkpoint expects it. Was the directory deleted, or is it not visible on this "
            f"executor? Feeder batches live on the driver's file system.") from None


def chunk_bounds(rows: int, parts: int, index: int) -> tuple[int, int]:
    """Rows ``[start, stop)`` of partition ``index`` when ``rows`` are cut into ``parts`` chunks.

    Chunks are contiguous and in order; the first ``rows % parts`` chunks have one
    row more than the others (7 rows in 3 parts: 3, 2, 2).

    Examples
    --------
    >>> [chunk_bounds(7, 3, i) for i in range(3)]
    [(0, 3), (3, 5), (5, 7)]
    """
    size, extra = divmod(rows, parts)
    start = index * size + min(index, extra)
    return start, start + size + (1 if index < extra else 0)


def chunk_sizes(rows: int, parts: int) -> Sequence[int]:
    """The row counts of the ``parts`` partitions of a batch of ``rows`` rows."""
    return [stop - start for start, stop in (chunk_bounds(rows, parts, i) for i in range(parts))]
