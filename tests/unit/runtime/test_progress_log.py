"""A stream's progress file: rotated by size, older files kept and deleted in order, followed by
readers that see every line once, whole, oldest first, even while it rotates under them."""

from __future__ import annotations

import json
import threading

from trident_spark.runtime.progress import PROGRESS_FILE
from trident_spark.runtime.progress_log import (
    PROGRESS_FILE_BYTES,
    PROGRESS_FILES_KEPT,
    ProgressLog,
    ProgressTail,
    progress_files,
    rotated_files,
)


def line(txid: int, pad: int = 80) -> str:
    return json.dumps({"txid": txid, "rows": 10, "pad": "x" * pad})


def txids(path) -> list[int]:
    return [json.loads(x)["txid"] for x in path.read_text().splitlines()]


def test_the_defaults_bound_a_stream_to_80_mib():
    assert (PROGRESS_FILE_BYTES, PROGRESS_FILES_KEPT) == (16 * 2**20, 4)


def test_a_file_is_rotated_before_a_line_would_take_it_past_the_size(tmp_path):
    size = len(line(0)) + 1
    log = ProgressLog(tmp_path, max_bytes=3 * size, keep=2)
    for txid in range(10):
        log.append(line(txid))

    assert [p.name for p in progress_files(tmp_path)] == [
        f"{PROGRESS_FILE}.2", f"{PROGRESS_FILE}.3", PROGRESS_FILE]  # .1 deleted: 2 kept
    assert [txids(p) for p in progress_files(tmp_path)] == [[3, 4, 5], [6, 7, 8], [9]]


def test_a_line_longer_than_the_size_gets_a_file_of_its_own(tmp_path):
    log = ProgressLog(tmp_path, max_bytes=10, keep=5)
    for txid in range(3):
        log.append(line(txid))
    assert [len(p.read_text().splitlines()) for p in progress_files(tmp_path)] == [1, 1, 1]


def test_a_new_run_goes_on_numbering_after_the_files_it_finds(tmp_path):
    size = len(line(10)) + 1
    for run in range(2):  # two runs of the topology on one checkpoint
        log = ProgressLog(tmp_path, max_bytes=2 * size, keep=2)
        for txid in range(10 * run, 10 * run + 4):
            log.append(line(txid))
    assert [(n, txids(p)) for n, p in rotated_files(tmp_path)] == [(2, [2, 3]), (3, [10, 11])]
    assert (tmp_path / PROGRESS_FILE).read_text().count("\n") == 2


def test_the_tail_reads_rotated_files_oldest_first_and_each_line_once(tmp_path):
    size = len(line(0)) + 1
    log = ProgressLog(tmp_path, max_bytes=2 * size, keep=10)
    tail = ProgressTail(tmp_path / PROGRESS_FILE)
    for txid in range(3):
        log.append(line(txid))
    assert [b["txid"] for b in tail.read()] == [0, 1, 2]
    for txid in range(3, 9):  # three rotations between two reads
        log.append(line(txid))
    assert [b["txid"] for b in tail.read()] == [3, 4, 5, 6, 7, 8]
    assert tail.read() == []
    assert not tail.dropped


def test_the_tail_says_when_files_were_deleted_before_it_read_them(tmp_path):
    size = len(line(0)) + 1
    log = ProgressLog(tmp_path, max_bytes=size, keep=2)
    tail = ProgressTail(tmp_path / PROGRESS_FILE)
    log.append(line(0))
    assert [b["txid"] for b in tail.read()] == [0]
    for txid in range(1, 8):
        log.append(line(txid))
    assert [b["txid"] for b in tail.read()] == [5, 6, 7]  # what is kept, once
    assert tail.dropped
    fresh = ProgressTail(tmp_path / PROGRESS_FILE)
    assert [b["txid"] for b in fresh.read()] == [5, 6, 7] and fresh.dropped


def test_a_reader_following_a_writer_that_rotates_sees_every_line_once_whole_and_in_order(tmp_path):
    log = ProgressLog(tmp_path, max_bytes=4096, keep=1000)
    tail = ProgressTail(tmp_path / PROGRESS_FILE)
    total = 5000
    done = threading.Event()

    def write() -> None:
        for txid in range(total):
            log.append(line(txid, pad=txid % 300))
        done.set()

    writer = threading.Thread(target=write)
    writer.start()
    seen: list[int] = []
    while not done.is_set():
        seen += [b["txid"] for b in tail.read()]
    writer.join()
    seen += [b["txid"] for b in tail.read()]

    assert seen == list(range(total))
    assert tail.bad_lines == 0
    assert len(rotated_files(tmp_path)) > 100  # it did rotate, many times, under the reader
