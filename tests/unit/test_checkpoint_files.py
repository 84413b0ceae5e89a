"""checkpoint_files: the files beside a checkpoint, on a plain path, a file:// URI, and a
pyarrow filesystem registered for a test scheme (a SubTreeFileSystem over a temporary
directory, standing in for an object store and for HDFS: no real HDFS or S3 here)."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import pyarrow.fs as pafs
import pytest

from trident_spark import checkpoint_files as files
from trident_spark.checkpoint_files import CheckpointFilesError
from trident_spark.runtime.progress import PROGRESS_FILE, RUN_FILE
from trident_spark.runtime.progress_log import ProgressLog, WholeFileTail, progress_files, progress_tail


def _under(base: Path) -> pafs.FileSystem:
    return pafs.SubTreeFileSystem(str(base), pafs.LocalFileSystem())


@pytest.fixture
def objects(tmp_path):
    """``objtest://bucket/...``: an object store (no rename, no append) kept in tmp_path/store."""
    base = tmp_path / "store"
    base.mkdir()
    files.register_filesystem("objtest", lambda uri: _under(base), renames=False)
    yield base
    files.unregister_filesystem("objtest")


@pytest.fixture
def hdfs_like(tmp_path):
    """``dirtest://nn/...``: a remote filesystem with directories and rename, as HDFS."""
    base = tmp_path / "dirs"
    base.mkdir()
    files.register_filesystem("dirtest", lambda uri: _under(base), renames=True)
    yield base
    files.unregister_filesystem("dirtest")


def test_a_uri_keeps_its_double_slash_and_a_plain_path_becomes_a_path():
    assert files.checkpoint_location("s3a://bucket/ck/") == "s3a://bucket/ck"
    assert files.checkpoint_location("file:///tmp/ck") == "file:///tmp/ck"
    assert files.checkpoint_location("ck/words") == Path("ck/words")
    assert files.checkpoint_location(Path("/tmp/ck")) == Path("/tmp/ck")
    assert files.join("s3a://bucket/ck", "words", "offsets", "3") == "s3a://bucket/ck/words/offsets/3"
    assert files.join("file:///", "ck") == "file:///ck"
    assert files.join(Path("/tmp/ck"), "words") == Path("/tmp/ck/words")
    assert files.name_of("hdfs://nn:8020/ck/words") == "words"
    assert files.parent_of("hdfs://nn:8020/ck/words") == "hdfs://nn:8020/ck"
    assert files.scheme_of("C:\\ck") is None  # a Windows drive is no scheme


def test_file_uris_and_hadoop_style_file_uris_are_local_paths():
    assert files.local_path("file:///tmp/a%20b") == Path("/tmp/a b")
    assert files.local_path("file:/tmp/ck") == Path("/tmp/ck")
    assert files.local_path("/tmp/ck") == Path("/tmp/ck")
    assert files.local_path("gs://bucket/ck") is None
    assert not files.is_local("abfs://c@acct.dfs.core.windows.net/ck")


@pytest.mark.parametrize("form", ["path", "relative", "file_uri"])
def test_every_operation_on_the_local_filesystem(tmp_path, monkeypatch, form):
    monkeypatch.chdir(tmp_path)
    root = {"path": tmp_path / "ck", "relative": "ck", "file_uri": f"file://{tmp_path}/ck"}[form]
    target = files.join(root, "words", RUN_FILE)
    assert not files.exists(target)
    with pytest.raises(FileNotFoundError):
        files.read_text(target)
    files.write_text(target, '{"a": 1}')  # makes its directory
    assert files.read_text(target) == '{"a": 1}'
    files.append_text(files.join(root, "words", PROGRESS_FILE), "one\n")
    files.append_text(files.join(root, "words", PROGRESS_FILE), "two\n")
    assert files.read_text(files.join(root, "words", PROGRESS_FILE)) == "one\ntwo\n"
    assert files.list_names(files.join(root, "words")) == [PROGRESS_FILE, RUN_FILE]
    assert files.is_dir(files.join(root, "words")) and not files.is_dir(target)
    files.delete(target)
    files.delete(target)  # gone already: nothing
    assert not files.exists(target) and files.list_names(files.join(root, "nothing")) == []
    files.mkdirs(files.join(root, "other", "deep"))
    assert (tmp_path / "ck" / "other" / "deep").is_dir()
    assert not list(Path(tmp_path).glob("file:*"))  # nothing under a relative ./file:


def test_every_operation_on_an_object_store(objects):
    root = "objtest://bucket/ck"
    target = files.join(root, "words", "trident-writes.txt")
    assert not files.exists(target)
    with pytest.raises(FileNotFoundError):
        files.read_bytes(target)
    files.write_text(target, "7")
    files.write_text(target, "8")  # replaced whole
    assert files.read_text(target) == "8"
    assert (objects / "bucket" / "ck" / "words" / "trident-writes.txt").read_text() == "8"
    files.append_text(files.join(root, "words", "log"), "a\n")
    files.append_text(files.join(root, "words", "log"), "b\n")  # no append: read, then written whole
    assert files.read_text(files.join(root, "words", "log")) == "a\nb\n"
    assert files.list_names(files.join(root, "words")) == ["log", "trident-writes.txt"]
    assert files.list_names(files.join(root, "none")) == []
    files.delete(target)
    files.delete(target)
    assert not files.exists(target)
    assert not [p for p in objects.rglob("*.tmp")]


def test_writes_on_a_filesystem_with_rename_go_through_a_temporary_file(hdfs_like):
    target = "dirtest://nn/ck/words/trident-state-commits.json"
    files.write_text(target, "{}")
    files.write_text(target, '{"k": 1}')  # the rename replaces the old file
    assert json.loads(files.read_text(target)) == {"k": 1}
    kept = sorted(p.name for p in (hdfs_like / "nn" / "ck" / "words").iterdir())
    assert kept == ["trident-state-commits.json"]  # no temporary file left


def test_an_unknown_scheme_fails_naming_the_uri_without_its_password_and_what_to_use():
    with pytest.raises(CheckpointFilesError) as caught:
        files.write_text("nosuch://user:hunter2@host/ck/trident-run.json", "{}")
    message = str(caught.value)
    assert "hunter2" not in message
    assert "nosuch://user:***@host/ck/trident-run.json" in message
    assert "pyarrow.fs" in message and "s3a://" in message
    assert isinstance(caught.value, OSError)  # callers that tolerate a failed write catch OSError


def test_hdfs_without_libhdfs_says_what_to_install():
    with pytest.raises(CheckpointFilesError) as caught:
        files.read_text("hdfs://127.0.0.1:1/ck/trident-run.json")
    message = str(caught.value)
    assert "hdfs://127.0.0.1:1/ck/trident-run.json" in message
    assert "libhdfs" in message and "HADOOP_HOME" in message
    assert len(message) < 1200  # pyarrow's own list of the paths it tried is cut


def test_the_progress_log_rotates_on_an_object_store_and_the_tail_reads_each_batch_once(objects):
    stream = "objtest://bucket/ck/words"
    log = ProgressLog(stream, max_bytes=60, keep=2)
    tail = progress_tail(files.join(stream, PROGRESS_FILE))
    assert isinstance(tail, WholeFileTail)
    seen = []
    for txid in range(7):
        log.append(json.dumps({"txid": txid, "rows": 10 * txid}))
        if txid % 2:
            seen += [b["txid"] for b in tail.read()]
    seen += [b["txid"] for b in tail.read()]
    assert seen == list(range(7))
    assert tail.read() == []
    names = [files.name_of(p) for p in progress_files(stream)]
    assert names[-1] == PROGRESS_FILE and len(names) == 3  # two rotated files kept, then the current one
    assert not tail.dropped  # it read every rotated file before it was deleted
    late = progress_tail(files.join(stream, PROGRESS_FILE))
    fresh = late.read()  # a new reader: the kept files only
    assert late.dropped and [b["txid"] for b in fresh] == list(range(fresh[0]["txid"], 7))
    again = ProgressLog(stream, max_bytes=60, keep=2)  # a restarted driver goes on with the file
    again.append(json.dumps({"txid": 7}))
    assert [b["txid"] for b in tail.read()] == [7]


def test_status_reads_a_checkpoint_on_an_object_store(objects, capsys):
    import argparse

    from tests.unit.cli.test_status_cli import progress_line
    from trident_spark.cli import status

    root = "objtest://bucket/ck"
    run = {"started": "x", "stopped": "y", "streams": ["words"], "trigger": "1 second", "trigger_ms": 1000}
    files.write_text(files.join(root, RUN_FILE), json.dumps(run))
    for txid in range(3):
        files.write_text(files.join(root, "words", "offsets", str(txid)), "v1\n{}\n{}")
        files.write_text(files.join(root, "words", "commits", str(txid)), "v1\n{}")
    files.write_text(files.join(root, "words", "offsets", "3"), "v1\n{}\n{}")
    log = ProgressLog(files.join(root, "words"))
    for txid in range(3):
        log.append(progress_line("words", txid))
    args = argparse.Namespace(checkpoint=root + "/", stream=None, last=20, follow=False, format="json",
                              interval=1.0)
    assert status.main(args) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["checkpoint"] == root
    assert [s["stream"] for s in shown["streams"]] == ["words"]
    assert shown["streams"][0]["diagnosis"]["totals"]["batches"] == 3
    assert "batch 3 was interrupted" in shown["streams"][0]["pending"]


def test_status_on_an_unreachable_filesystem_says_why_not_that_it_is_missing(capsys):
    import argparse

    from trident_spark.cli import status

    args = argparse.Namespace(checkpoint="nosuch://user:hunter2@host/ck", stream=None, last=20,
                              follow=False, format="table", interval=1.0)
    assert status.main(args) == 2
    said = capsys.readouterr().err
    assert "cannot reach nosuch://user:***@host/ck" in said and "hunter2" not in said


# -- the attacks: another account plants links where our files go -----------------------------------

PRECIOUS = "the victim's own file: must not change\n"


@pytest.fixture
def outside(tmp_path):
    """A file outside the checkpoint that a planted link points at (say, ~/.bashrc)."""
    target = tmp_path / "elsewhere" / "precious.txt"
    target.parent.mkdir()
    target.write_text(PRECIOUS)
    return target


def test_a_symlink_planted_where_the_progress_file_goes_is_refused_target_unchanged(tmp_path, outside):
    stream = tmp_path / "ck" / "words"
    stream.mkdir(parents=True)
    (stream / PROGRESS_FILE).symlink_to(outside)
    with pytest.raises(CheckpointFilesError) as refused:
        ProgressLog(stream).append('{"txid": 0}')
    assert str(refused.value) == (
        f"cannot append to {stream / PROGRESS_FILE} (beside the checkpoint): it is a symbolic link "
        f"(to {outside}), and trident-spark never writes through a link beside a checkpoint; remove the "
        "link (another account may have planted it; check who can write in that directory), then restart")
    assert outside.read_text() == PRECIOUS
    assert (stream / PROGRESS_FILE).is_symlink()        # left for the owner to look at


def test_a_dangling_symlink_creates_nothing_at_its_target(tmp_path):
    stream = tmp_path / "words"
    stream.mkdir()
    target = tmp_path / "elsewhere" / "new-file"
    (stream / PROGRESS_FILE).symlink_to(target)
    for append in (lambda: ProgressLog(stream).append('{"txid": 0}'),
                   lambda: files.append_text(stream / PROGRESS_FILE, "x\n")):
        with pytest.raises(CheckpointFilesError, match="it is a symbolic link"):
            append()
    assert not target.exists() and not target.parent.exists()


def test_a_hard_link_or_a_fifo_planted_there_is_refused(tmp_path, outside):
    stream = tmp_path / "words"
    stream.mkdir()
    os.link(outside, stream / PROGRESS_FILE)
    with pytest.raises(CheckpointFilesError, match="the file has 2 hard links, so a write would change"):
        ProgressLog(stream).append('{"txid": 0}')
    assert outside.read_text() == PRECIOUS
    (stream / PROGRESS_FILE).unlink()
    os.mkfifo(stream / PROGRESS_FILE)                   # would block a writer until someone reads
    with pytest.raises(CheckpointFilesError, match="it is not a regular file"):
        ProgressLog(stream).append('{"txid": 0}')


def test_an_atomic_write_replaces_a_planted_symlink_and_never_writes_through_it(tmp_path, outside):
    stream = tmp_path / "ck" / "words"
    stream.mkdir(parents=True)
    target = stream / "trident-state-commits.json"
    target.symlink_to(outside)
    files.write_text(target, '{"a": 1}')
    assert outside.read_text() == PRECIOUS
    assert not target.is_symlink() and target.read_text() == '{"a": 1}'
    assert oct(target.stat().st_mode & 0o777) == "0o600"


def test_a_planted_temporary_file_name_is_never_written_through(tmp_path, outside):
    """The temporary file's name used to be predictable (name.PID.THREAD.tmp) and opened without
    O_EXCL: a link planted under that name took the write. Now it is a fresh name made with O_EXCL."""
    stream = tmp_path / "words"
    stream.mkdir()
    planted = stream / f"trident-run.json.{os.getpid()}.{threading.get_ident()}.tmp"
    planted.symlink_to(outside)
    files.write_text(stream / "trident-run.json", "{}")
    assert outside.read_text() == PRECIOUS
    assert sorted(p.name for p in stream.iterdir()) == sorted([planted.name, "trident-run.json"])


def test_files_are_owner_only_and_directories_made_are_0700_whatever_the_umask(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o755)                                  # there already: its mode is its owner's
    old = os.umask(0o000)
    try:
        files.write_text(shared / "ck" / "words" / "trident-state-writes", "3")
        files.append_text(shared / "ck" / "words" / PROGRESS_FILE, "{}\n")
        files.mkdirs(shared / "ck" / "other")
        ProgressLog(shared / "ck" / "other").append('{"txid": 0}')
        files.write_bytes(f"file://{shared}/ck/{RUN_FILE}", b"{}")
    finally:
        os.umask(old)
    modes = {str(p.relative_to(shared)): oct(p.stat().st_mode & 0o777) for p in sorted(shared.rglob("*"))}
    assert modes == {
        "ck": "0o700", f"ck/{RUN_FILE}": "0o600",
        "ck/other": "0o700", f"ck/other/{PROGRESS_FILE}": "0o600",
        "ck/words": "0o700", f"ck/words/{PROGRESS_FILE}": "0o600", "ck/words/trident-state-writes": "0o600"}
    assert oct(shared.stat().st_mode & 0o777) == "0o755"
