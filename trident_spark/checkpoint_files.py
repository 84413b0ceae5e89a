"""The files trident-spark keeps beside a checkpoint, on any filesystem Spark checkpoints to.

A checkpoint location is what ``run(checkpoint_location=...)`` was given: a plain path
(``/data/ck``, ``ck``), a ``file://`` URI, or a URI of another filesystem (``hdfs://nn/ck``,
``s3a://bucket/ck``, ``s3://``, ``gs://``, ``abfs://``). Spark keeps its offsets and commits
there; trident-spark keeps its own small files beside them (``trident-run.json``, each
stream's ``trident-progress.jsonl``, the writes marker, the state commit records, a wait
record, a user spout's pickled spout and replay metadata, the adaptive spout's feedback).
Every one of them is read and written through this module, in every layer (the driver,
Spark's data source processes and the executors: no JVM is needed).

* A plain path or a ``file:`` URI is the local filesystem: ``os`` and ``pathlib``, no new
  dependency; a write is atomic (a temporary file made with ``O_EXCL`` in the same directory,
  then a rename, which replaces a link planted there instead of writing through it); an append
  refuses a symbolic link, a hard-linked file and anything but a regular file (``O_NOFOLLOW``).
  Files are created owner-only (0600) and the directories this module makes owner-only (0700),
  whatever the umask; what exists already keeps its mode. Spark's own files (``offsets/``,
  ``commits/``, ``metadata``) get the umask's mode, which trident-spark cannot change: they are
  private when the checkpoint's directory is one trident-spark made (``run()`` writes
  ``trident-run.json`` there before Spark starts).
* Any other scheme goes through ``pyarrow.fs`` (``FileSystem.from_uri``; ``s3a://`` and
  ``s3n://`` are S3 to it), with the credentials pyarrow finds in the environment. A write is
  atomic: a temporary file then a rename where the filesystem renames (HDFS), a single put
  on an object store (S3, GCS, Azure), where a reader sees the old object or the new one.
  An object store has no append: :func:`append_text` rewrites the file (callers keep such
  files small: the progress log rotates them).

A location is passed around as a string (a URI) or a ``Path`` (a plain local path), never as
``Path(uri)``, which would turn ``s3a://bucket`` into ``s3a:/bucket``: :func:`join` adds names.

Examples
--------
>>> import tempfile
>>> root = "file://" + tempfile.mkdtemp()
>>> write_text(join(root, "words", "note.json"), '{"a": 1}')
>>> read_text(join(root, "words", "note.json"))
'{"a": 1}'
>>> list_names(root)
['words']
>>> str(join("s3a://bucket/ck", "words"))
's3a://bucket/ck/words'
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import stat
import tempfile
import threading
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from trident_spark.errors import TridentSparkError
from trident_spark.state.redaction import redact_text, redact_url

#: Where checkpoint files are: a plain local path, or a URI (``file://``, ``hdfs://``, ``s3a://`` ...).
Location = str | os.PathLike[str]

# A URI's scheme: two letters or more (``C:\\x`` is a Windows path, not a scheme), then ``:/``.
_SCHEME = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]+):/")
#: Schemes pyarrow knows by another name.
_ALIASES = {"s3a": "s3", "s3n": "s3", "gcs": "gs"}
#: What to install or configure to reach a scheme, said when it cannot be reached.
_HINTS = {
    "hdfs": ("HDFS is reached through pyarrow.fs.HadoopFileSystem, which needs Hadoop's libhdfs: set "
             "HADOOP_HOME (or ARROW_LIBHDFS_DIR to the directory of libhdfs.so), JAVA_HOME, and "
             "CLASSPATH=$(hadoop classpath --glob)"),
    "s3": ("S3 is reached through pyarrow.fs.S3FileSystem with the credentials it finds in the "
           "environment (AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY, AWS_PROFILE, ~/.aws, an instance "
           "role) and AWS_REGION; a URI may name ?region=...&endpoint_override=..."),
    "gs": ("GCS is reached through pyarrow.fs.GcsFileSystem with the credentials it finds in the "
           "environment (GOOGLE_APPLICATION_CREDENTIALS, or the machine's service account)"),
    "abfs": ("Azure is reached through pyarrow.fs.AzureFileSystem with the credentials it finds in "
             "the environment (AZURE_STORAGE_ACCOUNT_KEY, or the default Azure credential chain)"),
}
_HINTS["abfss"] = _HINTS["abfs"]
_HINTS["viewfs"] = _HINTS["hdfs"]
_OTHER_HINT = ("trident-spark reaches a checkpoint's own files through pyarrow.fs, which knows file://, "
               "hdfs://, s3:// (s3a://, s3n://), gs:// and abfs(s)://; give one of these")


class CheckpointFilesError(TridentSparkError, OSError):
    """A file beside a checkpoint could not be read or written: names the location (its secrets
    shown as ``***``), what failed, and what to install or configure.

    An ``OSError``, as a failed local read or write is: callers that tolerate a missing or
    unreadable file catch ``OSError`` for both.

    Examples
    --------
    >>> str(CheckpointFilesError("read", "s3a://KEY:SECRET@bucket/ck", "denied", "check the role"))
    'cannot read s3a://KEY:***@bucket/ck (beside the checkpoint): denied; check the role'
    """

    def __init__(self, doing: str, location: str, reason: str, hint: str = "") -> None:
        self.location = describe(location)
        lines = redact_text(reason).strip().splitlines() or [""]
        # The first line: pyarrow's libhdfs error goes on to list the 80 paths it tried.
        said = lines[0][:400] + (" ..." if len(lines) > 1 or len(lines[0]) > 400 else "")
        message = f"cannot {doing} {self.location} (beside the checkpoint): {said}"
        super().__init__(message + (f"; {hint}" if hint else ""))


# --- locations ------------------------------------------------------------------------------------
def scheme_of(location: Location) -> str | None:
    """The URI scheme of ``location`` in lower case, or None for a plain path.

    Examples
    --------
    >>> scheme_of("s3a://bucket/ck"), scheme_of("/tmp/ck"), scheme_of(Path("ck"))
    ('s3a', None, None)
    """
    if isinstance(location, os.PathLike):
        return None
    found = _SCHEME.match(location)
    return found.group(1).lower() if found else None


def checkpoint_location(value: str | os.PathLike[str]) -> Path | str:
    """What ``run(checkpoint_location=...)`` was given, as the runtime keeps it: a ``Path`` for a
    plain path, the URI string (a trailing ``/`` dropped) for a URI, ``file://`` included (Spark
    gets it unchanged: a plain path would be resolved on Spark's default filesystem).

    Examples
    --------
    >>> checkpoint_location("ck/words"), checkpoint_location("hdfs://nn:8020/ck/")
    (PosixPath('ck/words'), 'hdfs://nn:8020/ck')
    """
    if isinstance(value, os.PathLike) or scheme_of(value) is None:
        return Path(value)
    stripped = value.rstrip("/")
    return stripped if not stripped.endswith(":") else value  # "file:///" stays whole


def qualify(location: Location, default_fs: str | None) -> Path | str:
    """Where Spark puts a checkpoint given as ``location`` when its default filesystem
    (``fs.defaultFS``) is ``default_fs``, so that trident-spark's files go to the same place: a
    URI stays as it is; a plain path becomes absolute (against this process's working directory)
    when the default filesystem is local, or a URI on the default filesystem otherwise.

    Raises ``ValueError`` for a relative path on a default filesystem that is not local (Spark
    would resolve it against that filesystem's home directory, unknown here).

    Examples
    --------
    >>> qualify("/ck/wc", "hdfs://nn:8020"), qualify("s3a://b/ck", "hdfs://nn:8020")
    ('hdfs://nn:8020/ck/wc', 's3a://b/ck')
    >>> qualify("/ck/wc", "file:///")
    PosixPath('/ck/wc')
    """
    if scheme_of(location) is not None:
        return str(location)
    path = Path(location)
    if default_fs is None or scheme_of(default_fs) in (None, "file"):
        return path.absolute()
    if not path.is_absolute():
        raise ValueError(
            f"checkpoint_location {str(location)!r} is a relative path, and Spark's default filesystem "
            f"is {describe(default_fs)}: give a full URI ({describe(default_fs).rstrip('/')}/user/NAME/"
            f"{location}), an absolute path, or file:///... for the driver's local disk")
    return default_fs.rstrip("/") + path.as_posix()


def local_path(location: Location) -> Path | None:
    """The local path of a plain path or a ``file:`` URI; None for another filesystem.

    Examples
    --------
    >>> local_path("file:///tmp/ck"), local_path("file:/tmp/ck"), local_path("gs://b/ck")
    (PosixPath('/tmp/ck'), PosixPath('/tmp/ck'), None)
    """
    scheme = scheme_of(location)
    if scheme is None:
        return Path(location)
    if scheme != "file":
        return None
    parts = urllib.parse.urlsplit(str(location))
    return Path(urllib.parse.unquote(parts.path) or "/")


def is_local(location: Location) -> bool:
    """Whether ``location`` is on the local filesystem (a plain path or a ``file:`` URI)."""
    return local_path(location) is not None


def join(location: Location, *names: str) -> Path | str:
    """``location`` with ``names`` added, keeping a URI's ``//`` (a ``Path`` stays a ``Path``).

    Examples
    --------
    >>> join(Path("/tmp/ck"), "words", "offsets"), join("s3a://bucket/ck/", "words")
    (PosixPath('/tmp/ck/words/offsets'), 's3a://bucket/ck/words')
    """
    if scheme_of(location) is None:
        return Path(location).joinpath(*names)
    text = str(location)
    if not names:
        return text
    base = text if text.endswith("//") else text.rstrip("/")  # "file:///" + "x": "file:///x"
    return base + ("" if base.endswith("/") else "/") + "/".join(names)


def name_of(location: Location) -> str:
    """The last name of ``location`` (``words`` of ``s3a://bucket/ck/words``)."""
    if scheme_of(location) is None:
        return Path(location).name
    return str(location).rstrip("/").rsplit("/", 1)[-1]


def parent_of(location: Location) -> Path | str:
    """``location`` without its last name (a URI keeps its scheme and authority)."""
    if scheme_of(location) is None:
        return Path(location).parent
    text = str(location).rstrip("/")
    head, _, _ = text.rpartition("/")
    return head if not head.endswith("/") else head + "/"


def describe(location: Location) -> str:
    """``location`` as messages show it: a URI's password and secret-named parameters as ``***``."""
    return redact_url(str(location)) if scheme_of(location) else str(location)


# --- remote filesystems ---------------------------------------------------------------------------
@dataclass(frozen=True)
class _Remote:
    filesystem: Any  # a pyarrow.fs.FileSystem
    prefix: str  # the path of the URI's root in it ("bucket" for s3://bucket/..., "" for hdfs)
    renames: bool  # False on an object store: no rename, no append; a put replaces atomically


_cache: dict[tuple[str, str, str], _Remote] = {}
_cache_lock = threading.Lock()
#: Filesystems registered for a scheme (:func:`register_filesystem`): scheme -> (factory, renames).
_registered: dict[str, tuple[Callable[[str], Any], bool]] = {}


def register_filesystem(scheme: str, factory: Callable[[str], Any], *, renames: bool = False) -> None:
    """Reach ``scheme://`` URIs through the ``pyarrow.fs`` filesystem ``factory(uri)`` returns, in
    this process: a URI's authority and path are the path in it. For a filesystem pyarrow does not
    know by URI, and for tests (a ``SubTreeFileSystem`` standing in for an object store).

    Examples
    --------
    >>> import tempfile, pyarrow.fs as pafs
    >>> base = tempfile.mkdtemp()
    >>> register_filesystem("memtest", lambda uri: pafs.SubTreeFileSystem(base, pafs.LocalFileSystem()))
    >>> write_text("memtest://bucket/ck/note", "hi"); read_text("memtest://bucket/ck/note")
    'hi'
    >>> unregister_filesystem("memtest")
    """
    _registered[scheme.lower()] = (factory, renames)
    with _cache_lock:
        for key in [k for k in _cache if k[0] == scheme.lower()]:
            del _cache[key]


def unregister_filesystem(scheme: str) -> None:
    """Undo :func:`register_filesystem`."""
    _registered.pop(scheme.lower(), None)
    with _cache_lock:
        for key in [k for k in _cache if k[0] == scheme.lower()]:
            del _cache[key]


def _hint(scheme: str) -> str:
    return _HINTS.get(_ALIASES.get(scheme, scheme), _OTHER_HINT)


def _remote(uri: str) -> tuple[_Remote, str]:
    """The filesystem of ``uri`` (made once per scheme, authority and options) and ``uri``'s path in it."""
    scheme = scheme_of(uri) or ""
    parts = urllib.parse.urlsplit(uri)
    key = (scheme, parts.netloc, parts.query)
    with _cache_lock:
        found = _cache.get(key)
    if found is None:
        found = _connect(scheme, parts, uri)
        with _cache_lock:
            _cache[key] = found
    path = urllib.parse.unquote(parts.path).strip("/")
    if not found.prefix:  # HDFS: paths from its root
        return found, "/" + path
    return found, f"{found.prefix}/{path}" if path else found.prefix


def _connect(scheme: str, parts: urllib.parse.SplitResult, uri: str) -> _Remote:
    if scheme in _registered:
        factory, renames = _registered[scheme]
        try:
            return _Remote(factory(uri), parts.netloc.strip("/"), renames)
        except Exception as exc:
            raise CheckpointFilesError("reach", uri, f"{type(exc).__name__}: {exc}") from None
    try:
        import pyarrow.fs as pafs
    except ImportError as exc:  # a dependency: only a broken install lacks it
        raise CheckpointFilesError("reach", uri, f"pyarrow is not importable ({exc})",
                                   "pip install pyarrow") from None
    pa_scheme = _ALIASES.get(scheme, scheme)
    root = urllib.parse.urlunsplit((pa_scheme, parts.netloc, "/", parts.query, ""))
    try:
        filesystem, prefix = pafs.FileSystem.from_uri(root)
    except Exception as exc:  # ArrowInvalid (unknown scheme), OSError (libhdfs missing) ...
        raise CheckpointFilesError("reach", uri, f"{type(exc).__name__}: {exc}", _hint(scheme)) from None
    renames = filesystem.type_name in ("hdfs", "local")
    return _Remote(filesystem, "" if filesystem.type_name == "hdfs" else prefix.rstrip("/"), renames)


def _failed(doing: str, location: Location, exc: BaseException) -> OSError:
    if isinstance(exc, FileNotFoundError | CheckpointFilesError):
        return exc
    scheme = scheme_of(location) or ""
    return CheckpointFilesError(doing, str(location), f"{type(exc).__name__}: {exc}",
                                _hint(scheme) if scheme else "")


def _is_missing(filesystem: Any, path: str) -> bool:
    import pyarrow.fs as pafs

    return bool(filesystem.get_file_info(path).type == pafs.FileType.NotFound)


# --- local files: owner-only, never through a link -----------------------------------------------
#: The mode of the files trident-spark creates beside a checkpoint, and of the directories it makes.
FILE_MODE = 0o600
DIRECTORY_MODE = 0o700


def _make_dirs(path: Path) -> None:
    """Make ``path`` and its missing parents, each one owner-only (0700); existing ones are left
    as they are (``Path.mkdir(parents=True)`` would give the parents the umask's mode)."""
    missing = []
    for directory in (path, *path.parents):
        if directory.is_dir():
            break
        missing.append(directory)
    for directory in reversed(missing):
        try:
            directory.mkdir(mode=DIRECTORY_MODE)
        except FileExistsError:
            if not directory.is_dir():
                raise
            continue  # made meanwhile by another process: its mode is its maker's
        os.chmod(directory, DIRECTORY_MODE)  # mkdir's mode passes through the umask; 0700 is wanted


def _not_regular(doing: str, path: Path) -> CheckpointFilesError:
    return CheckpointFilesError(doing, str(path), "it is not a regular file",
                                "remove it (trident-spark keeps regular files there), then restart")


def _refused(doing: str, path: Path, exc: OSError) -> OSError:
    """Why opening ``path`` failed, said plainly when something was planted there: a symbolic
    link (``O_NOFOLLOW``'s ``ELOOP``) or not a regular file (a FIFO without reader: ``ENXIO``)."""
    if exc.errno not in (errno.ELOOP, errno.ENXIO):
        return exc
    if not path.is_symlink():
        return _not_regular(doing, path) if path.exists() else exc
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return CheckpointFilesError(
        doing, str(path), f"it is a symbolic link{target}, and trident-spark never writes through a link "
        "beside a checkpoint", "remove the link (another account may have planted it; check who can write "
        "in that directory), then restart")


def open_append(location: Location) -> BinaryIO:
    """The local file at ``location`` opened for appending (made owner-only if missing), refusing
    what would let a write land elsewhere: a symbolic link (``O_NOFOLLOW``), a file with other
    hard links, or anything but a regular file (a FIFO, a device).

    Raises
    ------
    CheckpointFilesError
        Naming the path, what is there, and what to do.

    Examples
    --------
    >>> import tempfile
    >>> path = Path(tempfile.mkdtemp()) / "log.jsonl"
    >>> with open_append(path) as out:
    ...     _ = out.write(b"one\\n")
    >>> oct(path.stat().st_mode & 0o777), path.read_text()
    ('0o600', 'one\\n')
    """
    path = local_path(location)
    if path is None:
        raise ValueError(f"open_append: {describe(location)} is not a local path")
    flags = os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags, FILE_MODE)
    except OSError as exc:
        raise _refused("append to", path, exc) from None
    try:
        found = os.fstat(descriptor)
        if not stat.S_ISREG(found.st_mode):
            raise _not_regular("append to", path)
        if found.st_nlink != 1:
            raise CheckpointFilesError(
                "append to", str(path), f"the file has {found.st_nlink} hard links, so a write would change "
                "another file too", "remove it (another account may have linked it there), then restart")
        os.set_blocking(descriptor, True)
        return os.fdopen(descriptor, "ab")
    except BaseException:
        os.close(descriptor)
        raise


def _write_local(path: Path, data: bytes, sync: bool) -> None:
    """Atomically replace ``path``: a new owner-only temporary file (``O_EXCL``: never one planted
    there) in the same directory, then a rename, which replaces a link at ``path`` itself."""
    _make_dirs(path.parent)
    descriptor, partial = tempfile.mkstemp(prefix=f"{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with open(descriptor, "wb") as out:
            out.write(data)
            if sync:
                out.flush()
                os.fsync(out.fileno())
        os.replace(partial, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(partial)
        raise


# --- operations -----------------------------------------------------------------------------------
def read_bytes(location: Location) -> bytes:
    """The content of the file at ``location``; ``FileNotFoundError`` when there is none."""
    path = local_path(location)
    if path is not None:
        return path.read_bytes()
    try:
        remote, key = _remote(str(location))
        with remote.filesystem.open_input_stream(key) as source:
            return bytes(source.read())
    except Exception as exc:
        raise _failed("read", location, exc) from None


def read_text(location: Location) -> str:
    """The UTF-8 text of the file at ``location``; ``FileNotFoundError`` when there is none."""
    return read_bytes(location).decode("utf-8")


def write_bytes(location: Location, data: bytes, *, private: bool = False, sync: bool = False) -> None:
    """Write ``data`` to ``location`` atomically, making its directory: a reader sees the old file
    or the new one, never a part. A local file is created owner-only (0600) in a fresh temporary
    file, then renamed over ``location`` (a link planted there is replaced, its target untouched);
    directories made are 0700. ``private``: owner-only, as every local file now is (kept for the
    callers that ask); ``sync``: on disk before it replaces the old file (local files: ``fsync``;
    a remote write is durable once it returns)."""
    del private  # every local file is owner-only; a remote filesystem has its own permissions
    path = local_path(location)
    if path is not None:
        _write_local(path, data, sync)
        return
    try:
        remote, key = _remote(str(location))
        filesystem = remote.filesystem
        if not remote.renames:  # an object store: one put replaces the object whole
            try:
                stream = filesystem.open_output_stream(key)
            except FileNotFoundError:  # a store with directories after all: make them
                filesystem.create_dir(key.rsplit("/", 1)[0], recursive=True)
                stream = filesystem.open_output_stream(key)
            with stream as out:
                out.write(data)
            return
        filesystem.create_dir(key.rsplit("/", 1)[0], recursive=True)
        temporary = f"{key}.{os.getpid()}.{threading.get_ident()}.tmp"
        with filesystem.open_output_stream(temporary) as out:
            out.write(data)
        try:
            filesystem.move(temporary, key)
        except OSError:  # HDFS's rename does not replace: remove the old file, then rename
            filesystem.delete_file(key)
            filesystem.move(temporary, key)
    except Exception as exc:
        raise _failed("write", location, exc) from None


def write_text(location: Location, text: str, *, private: bool = False, sync: bool = False) -> None:
    """Write ``text`` (UTF-8) to ``location`` atomically (:func:`write_bytes`)."""
    write_bytes(location, text.encode("utf-8"), private=private, sync=sync)


def append_text(location: Location, text: str) -> None:
    """Add ``text`` at the end of the file at ``location`` (made if missing).

    Locally one ``write`` of an append-mode file (a reader never sees part of it), opened by
    :func:`open_append` (owner-only, never through a link or into another file). A remote
    filesystem is not appended to (an object store cannot; HDFS's appends need its own
    settings): the file is read and written again whole, atomically, so keep such files small.
    """
    path = local_path(location)
    if path is not None:
        with open_append(path) as out:
            out.write(text.encode("utf-8"))
        return
    try:
        before = read_bytes(location)
    except FileNotFoundError:
        before = b""
    write_bytes(location, before + text.encode("utf-8"))


def exists(location: Location) -> bool:
    """Whether a file or directory is at ``location``; a filesystem that cannot be reached raises
    :class:`CheckpointFilesError` (it is not taken for a missing file)."""
    path = local_path(location)
    if path is not None:
        return path.exists()
    try:
        remote, key = _remote(str(location))
        return not _is_missing(remote.filesystem, key)
    except FileNotFoundError:
        return False
    except Exception as exc:
        raise _failed("look for", location, exc) from None


def is_dir(location: Location) -> bool:
    """Whether ``location`` is a directory (on an object store: a prefix with objects under it)."""
    path = local_path(location)
    if path is not None:
        return path.is_dir()
    try:
        import pyarrow.fs as pafs

        remote, key = _remote(str(location))
        return bool(remote.filesystem.get_file_info(key).type == pafs.FileType.Directory)
    except FileNotFoundError:
        return False
    except Exception as exc:
        raise _failed("look for", location, exc) from None


def list_names(location: Location) -> list[str]:
    """The names in the directory at ``location``, sorted; ``[]`` when it is missing."""
    path = local_path(location)
    if path is not None:
        try:
            return sorted(os.listdir(path))
        except (FileNotFoundError, NotADirectoryError):
            return []
    try:
        import pyarrow.fs as pafs

        remote, key = _remote(str(location))
        infos = remote.filesystem.get_file_info(pafs.FileSelector(key, allow_not_found=True))
        return sorted(info.base_name for info in infos)
    except Exception as exc:
        raise _failed("list", location, exc) from None


def delete(location: Location) -> None:
    """Remove the file at ``location``; nothing when there is none."""
    path = local_path(location)
    if path is not None:
        path.unlink(missing_ok=True)
        return
    try:
        remote, key = _remote(str(location))
        if not _is_missing(remote.filesystem, key):
            remote.filesystem.delete_file(key)
    except Exception as exc:
        raise _failed("delete", location, exc) from None


def mkdirs(location: Location) -> None:
    """Make the directory at ``location`` and its parents (an object store needs none: nothing);
    locally, those made are owner-only (0700), those there already keep their mode."""
    path = local_path(location)
    if path is not None:
        _make_dirs(path)
        return
    try:
        remote, key = _remote(str(location))
        if remote.renames:
            remote.filesystem.create_dir(key, recursive=True)
    except Exception as exc:
        raise _failed("make the directory", location, exc) from None


__all__ = ["DIRECTORY_MODE", "FILE_MODE", "CheckpointFilesError", "Location", "append_text",
           "checkpoint_location", "delete", "describe", "exists", "is_dir", "is_local", "join", "list_names",
           "local_path", "mkdirs", "name_of", "open_append", "parent_of", "qualify", "read_bytes",
           "read_text", "register_filesystem", "scheme_of", "unregister_filesystem", "write_bytes",
           "write_text"]
