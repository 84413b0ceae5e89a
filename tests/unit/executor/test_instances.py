"""Kept operation instances (executor.instances), without Spark: a stage run through a real instance
host process keeps its instance across batches, prepares it once, follows the txid, reports errors
back, re-raises the operation's error, and cleans up when the run's hosts are stopped."""

from __future__ import annotations

import doctest
import os
import sys
import tempfile
import uuid
from functools import partial
from pathlib import Path

import pyarrow as pa
import pytest
from pyspark import cloudpickle

from trident_spark.errors import FailedException
from trident_spark.executor import instances
from trident_spark.executor.instances import (
    InstanceHostError,
    InstanceScope,
    Recorder,
    TaskInstances,
    has_lifecycle,
    hosted,
    stop_hosts,
    task_instances,
)
from trident_spark.executor.python_stage import PythonStep, run_stage
from trident_spark.fields import Fields
from trident_spark.operation import BaseFilter, BaseFunction, OperationContext, TridentCollector

cloudpickle.register_pickle_by_value(sys.modules[__name__])  # the host imports no test module


class BatchCounter(BaseFunction):
    """Counts the batches its instance has seen; each prepare and cleanup appends a line to ``log``."""

    def __init__(self, log: str) -> None:
        self.log = log

    def prepare(self, conf, context):
        self.context, self.batches, self.seen = context, 0, None
        with open(self.log, "a") as out:
            out.write(f"prepare {context.getPartitionIndex()} {context.numPartitions()} {conf['k']}\n")

    def execute(self, tuple, collector):
        if self.seen != self.context.txid:
            self.seen, self.batches = self.context.txid, self.batches + 1
        if tuple[0] == "bad":
            collector.reportError(ValueError(f"no word in {tuple[0]!r}"))
            return
        if tuple[0] == "boom":
            raise FailedException("store down")
        collector.emit([self.batches, self.context.txid])

    def cleanup(self):
        with open(self.log, "a") as out:
            out.write("cleanup\n")


def _entry(steps, txid, metrics, batches):
    return run_stage(steps, ["w", "batches", "txid"], {"batches": pa.int64(), "txid": pa.int64()}, txid,
                     batches, conf={"k": "v"}, num_partitions=2, metrics=metrics)


def _batch(txid: int, run: str, log: Path, words: list[str], stage: str = "q/1") -> tuple[list, dict]:
    """One batch of one partition through the run's host, as a Spark task would send it."""
    counter = BatchCounter(str(log))
    steps = [PythonStep("each(BatchCounter)", counter, Fields(["w"]), Fields(["batches", "txid"]))]
    metrics = Recorder()
    fn = hosted(InstanceScope(run, stage), partial(_entry, steps, txid), metrics)
    out = list(fn(iter([pa.RecordBatch.from_pydict({"w": words})])))
    return [row for batch in out for row in batch.to_pylist()], metrics.counters


@pytest.fixture
def run_id():
    run = uuid.uuid4().hex
    yield run
    stop_hosts(run)


def test_an_instance_is_prepared_once_and_kept_across_batches(tmp_path, run_id):
    log = tmp_path / "events"
    seen = [_batch(txid, run_id, log, ["cat", "dog"])[0] for txid in range(3)]
    assert seen == [[{"w": "cat", "batches": n, "txid": n - 1}, {"w": "dog", "batches": n, "txid": n - 1}]
                    for n in (1, 2, 3)]
    assert log.read_text() == "prepare 0 2 v\n"
    # Another stage of the run has instances of its own.
    assert _batch(7, run_id, log, ["cat"], stage="q/2")[0] == [{"w": "cat", "batches": 1, "txid": 7}]
    assert stop_hosts(run_id) == (1, 2)
    assert log.read_text() == "prepare 0 2 v\nprepare 0 2 v\ncleanup\ncleanup\n"
    assert not (instances.hosts_root() / run_id).exists()


def test_reported_errors_are_counted_and_the_batch_goes_on(tmp_path, run_id):
    rows, counters = _batch(0, run_id, tmp_path / "events", ["cat", "bad", "bad", "dog"])
    assert [row["w"] for row in rows] == ["cat", "dog"]
    assert counters[("errors", "each(BatchCounter)", "reported")] == 2
    assert counters[("errors", "each(BatchCounter)", "last")] == "ValueError: no word in 'bad'"
    assert counters[("stage", "python", "each(BatchCounter)", "rows_in")] == 4


def test_an_error_in_the_host_is_raised_in_the_task_with_the_hosts_traceback(tmp_path, run_id):
    log = tmp_path / "events"
    with pytest.raises(FailedException, match=r"^store down$") as raised:
        _batch(0, run_id, log, ["boom"])
    cause = raised.value.__cause__
    assert isinstance(cause, InstanceHostError)
    assert "in execute" in str(cause) and 'raise FailedException("store down")' in str(cause)
    # The instance outlives the failed batch: the replay runs on it.
    assert _batch(0, run_id, log, ["cat"])[0] == [{"w": "cat", "batches": 1, "txid": 0}]
    assert log.read_text() == "prepare 0 2 v\n"


def test_outside_a_host_a_task_prepares_and_cleans_up_its_own_instances(tmp_path):
    log = tmp_path / "events"
    task = task_instances()
    assert type(task) is TaskInstances
    op = task.acquire(0, BatchCounter(str(log)), {"k": "v"}, OperationContext(1, 3, 5, "each(BatchCounter)"))
    assert (op.context.txid, log.read_text()) == (5, "prepare 1 3 v\n")
    task.release()
    assert log.read_text() == "prepare 1 3 v\ncleanup\n"


class Plain(BaseFilter):
    def isKeep(self, tuple):
        return True


def test_only_operations_with_a_lifecycle_are_kept():
    assert has_lifecycle(BatchCounter("x")) and not has_lifecycle(Plain())


def test_a_recorder_sums_counts_and_keeps_the_last_message():
    recorder = Recorder()
    recorder.add({"store_reads": 2, ("errors", "f", "last"): "a"})
    recorder.add({"store_reads": 3, ("errors", "f", "last"): "b"})
    assert recorder.counters == {"store_reads": 5, ("errors", "f", "last"): "b"}


def test_report_error_on_a_plain_collector_counts_and_logs(caplog):
    collector = TridentCollector()
    collector.reportError(KeyError("password=hunter2 missing"))
    assert collector.errors.count == 1
    assert collector.errors.last == "KeyError: 'password=*** missing'"
    shown = "an operation reported an error (the batch goes on): KeyError: 'password=*** missing'"
    assert shown in caplog.text


def test_docstring_examples():
    failures, attempted = doctest.testmod(instances, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures


def test_hosts_live_in_the_accounts_private_runtime_directory(monkeypatch, tmp_path):
    monkeypatch.delenv("XDG_RUNTIME_DIR", raising=False)
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    assert instances.hosts_root() == tmp_path / f"trident-spark-{os.getuid()}" / "hosts"
    xdg = tmp_path / "xdg"
    xdg.mkdir(mode=0o700)
    monkeypatch.setenv("XDG_RUNTIME_DIR", str(xdg))
    assert instances.hosts_directory("run") == xdg / "trident-spark" / "hosts" / "run"
    mine = xdg / "trident-spark"
    for made in (mine, mine / "hosts", mine / "hosts" / "run"):
        assert made.stat().st_mode & 0o777 == 0o700
    xdg.chmod(0o755)  # not a private directory: not used, the temp directory is
    assert instances.hosts_root() == tmp_path / f"trident-spark-{os.getuid()}" / "hosts"


ZIPPED_MODULE = '''
from trident_spark.operation import BaseFunction


class Shout(BaseFunction):
    def execute(self, tuple, collector):
        collector.emit([1, 0])
'''


def test_a_host_forked_after_files_were_shipped_imports_from_the_workers_path(tmp_path, run_id):
    """Hosts are forked by the executor's launcher, started by an earlier run: a zip shipped later
    (``addPyFile`` puts it on the workers' path) must be on the host's path too."""
    import zipfile

    _batch(0, run_id, tmp_path / "events", ["cat"])  # the launcher runs (it outlives runs)
    archive = tmp_path / "late_ops.zip"
    with zipfile.ZipFile(archive, "w") as out:
        out.writestr("late_zipped_ops.py", ZIPPED_MODULE)
    sys.path.insert(0, str(archive))
    later = uuid.uuid4().hex
    try:
        from late_zipped_ops import Shout  # by reference: the host must import it

        steps = [PythonStep("each(Shout)", Shout(), Fields(["w"]), Fields(["batches", "txid"]))]
        fn = hosted(InstanceScope(later, "q/1"), partial(_entry, steps, 0), Recorder())
        out = list(fn(iter([pa.RecordBatch.from_pydict({"w": ["cat"]})])))
        assert [row for batch in out for row in batch.to_pylist()] == [{"w": "cat", "batches": 1, "txid": 0}]
    finally:
        sys.path.remove(str(archive))
        sys.modules.pop("late_zipped_ops", None)
        stop_hosts(later)
