"""A stream's progress file on disk: one JSON line per finished batch, rotated by size, followed by readers.

The handle appends to ``CHECKPOINT/<stream>/trident-progress.jsonl`` (created owner-only; a
symbolic link, a hard-linked file or a FIFO planted there is refused, never written through:
:func:`trident_spark.checkpoint_files.open_append`). When the next line
would take that file past :data:`PROGRESS_FILE_BYTES`, the file is renamed to
``trident-progress.jsonl.<n>`` (``n`` counts up: the highest number is the newest rotated
file) and a new one is started; of the rotated files, the newest
:data:`PROGRESS_FILES_KEPT` are kept. A rotated file never changes again, and every line is
written whole by one ``write``, so a reader following the files (``trident-spark status
--follow``, :class:`ProgressTail`) never sees a torn line.

On a filesystem that is not local (``hdfs://``, ``s3a://``, ``gs://`` ..., see
:mod:`trident_spark.checkpoint_files`) there is no append: the handle keeps the current
file's lines and writes it again whole after each batch, so the file rotates at
:data:`REMOTE_PROGRESS_FILE_BYTES`, with as many rotated files kept as make the same history;
the names are the same, and :func:`progress_tail` reads them either way.

Imports nothing of pyspark: ``status`` reads these files without Spark.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
from pathlib import Path
from typing import Any, BinaryIO

from trident_spark import checkpoint_files as files
from trident_spark.checkpoint_files import Location
from trident_spark.runtime.progress import PROGRESS_FILE

log = logging.getLogger(__name__)

#: The size past which the progress file is rotated: 16 MiB is about 2,000 batches of a
#: stream with a few stages and Kafka partitions (a line is about 8 KiB), over 2 hours at a
#: 1 s trigger.
PROGRESS_FILE_BYTES = 16 * 1024 * 1024
#: Rotated progress files kept besides the current one: with the current file, at most
#: 80 MiB a stream, the last 10,000 batches or so (about 11 hours at a 1 s trigger).
PROGRESS_FILES_KEPT = 4
#: Where the progress file rotates on a filesystem without append (written whole after each
#: batch): 1 MiB, about 120 batches a file.
REMOTE_PROGRESS_FILE_BYTES = 1024 * 1024


def rotated_files(directory: Location, name: str = PROGRESS_FILE) -> list[tuple[int, Any]]:
    """The rotated files of ``name`` in ``directory`` as ``(number, path)``, oldest first.

    Examples
    --------
    >>> rotated_files(Path("/nonexistent"))
    []
    """
    found = []
    try:
        names = files.list_names(directory)
    except OSError:
        return []
    prefix = name + "."
    for entry in names:
        number = entry[len(prefix):] if entry.startswith(prefix) else ""
        if number.isdigit():
            found.append((int(number), files.join(directory, entry)))
    return sorted(found)


def progress_files(directory: Location, name: str = PROGRESS_FILE) -> list[Any]:
    """Every progress file of a stream's directory, oldest first: the rotated ones, then the
    current one (when it exists).

    Examples
    --------
    >>> progress_files(Path("/nonexistent"))
    []
    """
    rotated = [path for _, path in rotated_files(directory, name)]
    current = files.join(directory, name)
    return [*rotated, current] if files.exists(current) else rotated


def has_progress(directory: Location) -> bool:
    """Whether a stream's directory holds any progress file (current or rotated)."""
    return bool(progress_files(directory))


class ProgressLog:
    """Appends a stream's finished batches to its progress file, rotating it by size.

    Parameters
    ----------
    directory : Path or str
        The stream's checkpoint directory: a local path, or a URI (see the module's note on
        filesystems without append).
    max_bytes : int
        Rotate before a line would take the current file past this size (a file holds at
        least one line, however long); at most :data:`REMOTE_PROGRESS_FILE_BYTES` on a
        filesystem that is not local.
    keep : int
        Rotated files kept; older ones are deleted as new ones are made (on a filesystem that is
        not local, as many more as keep the same bytes of history).

    Examples
    --------
    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> progress = ProgressLog(directory, max_bytes=20, keep=1)
    >>> for txid in range(3):
    ...     progress.append(f'{{"txid": {txid}}}')
    >>> [path.name for path in progress_files(directory)]
    ['trident-progress.jsonl.2', 'trident-progress.jsonl']
    """

    def __init__(self, directory: Location, max_bytes: int = PROGRESS_FILE_BYTES,
                 keep: int = PROGRESS_FILES_KEPT) -> None:
        local = files.local_path(directory)
        self.location = directory
        self.directory = local if local is not None else directory
        self.path = files.join(self.directory, PROGRESS_FILE)
        self.max_bytes = max_bytes
        self.keep = keep
        self._next: int | None = None  # the number the next rotated file gets
        self._whole: bytes | None = None  # remote: the current file's content, written whole
        if local is None and max_bytes > REMOTE_PROGRESS_FILE_BYTES:
            self.keep = keep * (max_bytes // REMOTE_PROGRESS_FILE_BYTES)
            self.max_bytes = REMOTE_PROGRESS_FILE_BYTES

    def append(self, line: str) -> None:
        """Write ``line`` and its newline in one ``write`` (called on the driver, one thread at a time)."""
        data = (line + "\n").encode("utf-8")
        if not isinstance(self.path, Path):
            self._append_whole(data)
            return
        # Owner-only, and never through a link planted where the file goes (files.open_append).
        with files.open_append(self.path) as out:
            size = out.tell()
            if size and size + len(data) > self.max_bytes:
                out.close()
                self._rotate()
                with files.open_append(self.path) as fresh:
                    fresh.write(data)
                return
            out.write(data)

    def _append_whole(self, data: bytes) -> None:
        """A filesystem without append: the current file is written again whole, with ``data``."""
        if self._whole is None:
            try:
                self._whole = files.read_bytes(self.path)
            except FileNotFoundError:
                self._whole = b""
        if self._whole and len(self._whole) + len(data) > self.max_bytes:
            # The lines go to the next rotated file before the current one starts again: a reader
            # may meet them twice for a moment (progress_tail reads each txid once), never lose them.
            self._rotate(self._whole)
            self._whole = b""
        files.write_bytes(self.path, self._whole + data)
        self._whole += data

    def _rotate(self, content: bytes | None = None) -> None:
        rotated = rotated_files(self.directory)
        if self._next is None:
            self._next = (rotated[-1][0] + 1) if rotated else 1
        target = files.join(self.directory, f"{PROGRESS_FILE}.{self._next}")
        if content is None:
            os.replace(self.path, target)  # atomic: a reader sees the old name or the new one
        else:
            files.write_bytes(target, content)
        self._next += 1
        rotated.append((self._next - 1, target))
        for _, old in rotated[:max(0, len(rotated) - self.keep)]:
            try:
                files.delete(old)
            except OSError as exc:
                log.warning("cannot remove the old progress file %s: %s", files.describe(old), exc)


class ProgressTail:
    """The batches appended to a stream's progress files since the last read, oldest first.

    Follows rotation: a file that was renamed since the last read is read to its end before the
    newer ones, and each line is returned once. A last line without its newline is kept for the
    next read unless it already parses (a writer may be half-way through it). Complete lines that
    are not a JSON object of a batch are counted in ``bad_lines``, not raised. ``dropped`` is
    True once rotated files were deleted before this reader saw them (the oldest kept file is
    not the first ever rotated), so totals cover only the kept history.

    Examples
    --------
    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> ProgressLog(directory).append('{"txid": 0, "rows": 5}')
    >>> ProgressTail(directory / PROGRESS_FILE).read()
    [{'txid': 0, 'rows': 5}]
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.bad_lines = 0
        self.dropped = False
        self._done: int | None = None  # the newest rotated file read to its end
        self._offsets: dict[tuple[int, int], int] = {}  # (device, inode) -> bytes read of the file

    @property
    def offset(self) -> int:
        """Bytes read of the current file."""
        try:
            st = os.stat(self.path)
        except OSError:
            return 0
        return self._offsets.get((st.st_dev, st.st_ino), 0)

    def read(self) -> list[dict[str, Any]]:
        """The batches written since the last read, oldest first (each line once)."""
        with contextlib.ExitStack() as stack:
            # The current file is opened first: if it is rotated while the older ones are read,
            # this handle still reads it, last, and the file after it is left for the next read.
            try:
                current: BinaryIO | None = stack.enter_context(open(self.path, "rb"))
            except OSError:
                current = None
            held = _identity(current) if current is not None else None
            return [*self._read_rotated(held), *(self._read_current(current) if current else [])]

    def _read_rotated(self, held: tuple[int, int] | None) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        rotated = [(n, p) for n, p in rotated_files(self.path.parent, self.path.name)
                   if self._done is None or n > self._done]
        expected = 1 if self._done is None else self._done + 1  # the next rotated file to read
        if rotated and rotated[0][0] > expected:
            # Deleted before this reader got to them, the file it followed among them: what it
            # read of that says nothing of the files now there (an inode may even be reused).
            self.dropped = True
            self._offsets = {}
        for number, path in rotated:
            try:
                with open(path, "rb") as old:
                    identity = _identity(old)
                    if identity == held:
                        break  # the current file, rotated just now: read through the held handle
                    found += self._read_from(old, self._offsets.pop(identity, 0), whole=True)[0]
            except OSError:
                continue  # deleted meanwhile
            self._done = number
        return found

    def _read_current(self, current: BinaryIO) -> list[dict[str, Any]]:
        held = _identity(current)
        found, offset = self._read_from(current, self._offsets.get(held, 0), whole=False)
        self._offsets = {held: offset}  # the files before it are read to their end
        return found

    def _read_from(self, source: BinaryIO, offset: int, *, whole: bool) -> tuple[list[dict[str, Any]], int]:
        if os.fstat(source.fileno()).st_size < offset:  # truncated: start over
            offset = 0
        source.seek(offset)
        data = source.read()
        end = len(data) if whole else data.rfind(b"\n") + 1  # through the last newline
        complete, partial = data[:end], data[end:]
        found = []
        for raw in complete.split(b"\n"):
            if raw.strip():
                batch = _parse(raw)
                if batch is None:
                    self.bad_lines += 1
                else:
                    found.append(batch)
        offset += end
        if partial.strip() and (batch := _parse(partial)) is not None:
            found.append(batch)
            offset += len(partial)
        return found, offset


class WholeFileTail:
    """:class:`ProgressTail` for a stream directory that is not local (``hdfs://``, ``s3a://`` ...):
    reads the rotated files once each and the current one whole at every read, and returns each
    batch once (the batches after the last txid returned).

    Examples
    --------
    >>> import tempfile
    >>> directory = Path(tempfile.mkdtemp())
    >>> ProgressLog(directory).append('{"txid": 0, "rows": 5}')
    >>> WholeFileTail(directory / PROGRESS_FILE).read()
    [{'txid': 0, 'rows': 5}]
    """

    def __init__(self, path: Location) -> None:
        self.path = path
        self.bad_lines = 0
        self.dropped = False
        self._done: int | None = None  # the newest rotated file read
        self._last: int | None = None  # the last txid returned
        self._rotated_bad = 0

    def read(self) -> list[dict[str, Any]]:
        """The batches written since the last read, oldest first (each txid once)."""
        directory, name = files.parent_of(self.path), files.name_of(self.path)
        rotated = [(n, p) for n, p in rotated_files(directory, name) if self._done is None or n > self._done]
        expected = 1 if self._done is None else self._done + 1
        if rotated and rotated[0][0] > expected:
            self.dropped = True
        found: list[dict[str, Any]] = []
        for number, path in rotated:
            try:
                batches, bad = _parse_all(files.read_bytes(path))
            except OSError:
                continue  # deleted meanwhile
            found += batches
            self._rotated_bad += bad
            self._done = number
        try:
            batches, bad = _parse_all(files.read_bytes(self.path))
        except OSError:
            batches, bad = [], 0
        self.bad_lines = self._rotated_bad + bad
        fresh = []
        for batch in [*found, *batches]:
            txid = batch.get("txid")
            if isinstance(txid, int) and self._last is not None and txid <= self._last:
                continue
            fresh.append(batch)
            if isinstance(txid, int):
                self._last = txid
        return fresh


def progress_tail(path: Location) -> ProgressTail | WholeFileTail:
    """The reader that follows the progress file at ``path``: a :class:`ProgressTail` for a local
    path (or ``file:`` URI), a :class:`WholeFileTail` for another filesystem.

    Examples
    --------
    >>> type(progress_tail("file:///tmp/ck/words/trident-progress.jsonl")).__name__
    'ProgressTail'
    """
    local = files.local_path(path)
    return ProgressTail(local) if local is not None else WholeFileTail(path)


def _parse_all(data: bytes) -> tuple[list[dict[str, Any]], int]:
    found, bad = [], 0
    for raw in data.split(b"\n"):
        if raw.strip():
            batch = _parse(raw)
            if batch is None:
                bad += 1
            else:
                found.append(batch)
    return found, bad


def _identity(source: BinaryIO) -> tuple[int, int]:
    st = os.fstat(source.fileno())
    return st.st_dev, st.st_ino


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        value = json.loads(raw)
    except ValueError:
        return None
    return value if isinstance(value, dict) and "txid" in value else None


__all__ = ["PROGRESS_FILES_KEPT", "PROGRESS_FILE_BYTES", "REMOTE_PROGRESS_FILE_BYTES", "ProgressLog",
           "ProgressTail", "WholeFileTail", "has_progress", "progress_files", "progress_tail",
           "rotated_files"]
