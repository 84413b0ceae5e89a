"""The operation instances a task runs: prepared for the task alone, or kept in its instance host.

Outside a host a task prepares its operations and cleans them up when it ends
(:class:`TaskInstances`). In a host (:mod:`trident_spark.executor.instance_host`) the thread
that runs a task is bound to its (stage, partition) in :data:`HOSTED_TASK`, and the task's
operations are the ones the host's :class:`InstanceRegistry` keeps, prepared on first use and
cleaned up when the host ends. Why stages run in hosts is told in
:mod:`trident_spark.executor.instances`.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

log = logging.getLogger(__name__)


class TaskInstances:
    """The operations a task runs, prepared for it and cleaned up when it ends (outside a host).

    Examples
    --------
    >>> from trident_spark.operation import Operation, OperationContext
    >>> class Op(Operation):
    ...     def prepare(self, conf, context):
    ...         self.where = context.getPartitionIndex()
    >>> task = task_instances()
    >>> task.acquire(0, Op(), {}, OperationContext(3, 4, 0, "each(Op)")).where
    3
    >>> task.release()
    """

    def __init__(self) -> None:
        self._prepared: list[Any] = []

    def acquire(self, index: int, operation: Any, conf: dict[str, Any], context: Any) -> Any:
        """The instance to run as step ``index``, prepared with ``context``."""
        operation.prepare(dict(conf), context)
        self._prepared.append(operation)
        return operation

    def release(self) -> None:
        """The task is done: clean up what it prepared (kept instances stay)."""
        prepared, self._prepared = self._prepared, []
        for operation in prepared:
            operation.cleanup()


class KeptInstances(TaskInstances):
    """In a host: the instances of (stage, partition), prepared on first use and kept.

    Examples
    --------
    >>> from trident_spark.operation import Operation
    >>> class Op(Operation):
    ...     prepared = 0
    ...     def prepare(self, conf, context):
    ...         Op.prepared += 1
    >>> kept = KeptInstances(InstanceRegistry(), "stage-1", 0)
    >>> first = kept.acquire(0, Op(), {}, None)
    >>> kept.release()
    >>> kept.acquire(0, Op(), {}, None) is first, Op.prepared
    (True, 1)
    """

    def __init__(self, registry: InstanceRegistry, stage: str, partition: int) -> None:
        super().__init__()
        self.registry, self.stage, self.partition = registry, stage, partition

    def acquire(self, index: int, operation: Any, conf: dict[str, Any], context: Any) -> Any:
        return self.registry.acquire((self.stage, index, self.partition), operation, conf, context)

    def release(self) -> None:
        pass


#: The task the current thread runs in a host: ``instances`` (its :class:`KeptInstances`) and
#: ``spark_task`` (its rebuilt ``TaskContext``), set by the host around the task; unset elsewhere.
HOSTED_TASK = threading.local()


def task_instances() -> TaskInstances:
    """The instances of the running task: kept ones in a host, else prepared for this task only.

    Examples
    --------
    >>> type(task_instances()).__name__
    'TaskInstances'
    """
    found: TaskInstances | None = getattr(HOSTED_TASK, "instances", None)
    return found if found is not None else TaskInstances()


def host_partition() -> int | None:
    """The partition a host runs for the current thread (None outside a host).

    Examples
    --------
    >>> host_partition() is None
    True
    """
    instances = getattr(HOSTED_TASK, "instances", None)
    return instances.partition if isinstance(instances, KeptInstances) else None


class InstanceRegistry:
    """A host's kept instances by (stage, step, partition), with their live contexts.

    Examples
    --------
    >>> from trident_spark.operation import Operation
    >>> class Op(Operation):
    ...     def cleanup(self):
    ...         print("cleaned")
    >>> registry = InstanceRegistry()
    >>> op = registry.acquire(("stage-1", 0, 0), Op(), {}, None)
    >>> registry.cleanup_all()
    cleaned
    1
    """

    def __init__(self) -> None:
        self._kept: dict[tuple[str, int, int], tuple[Any, Any]] = {}
        self._lock = threading.Lock()
        self._threads: dict[tuple[str, int], ThreadPoolExecutor] = {}

    def thread_of(self, stage: str, partition: int) -> ThreadPoolExecutor:
        """The one thread that runs (stage, partition)'s tasks, batch after batch, one at a time:
        an instance never runs two batches at once, and what it opened in ``prepare`` (or a state
        in ``makeState``) is always used from the thread that opened it (a ``sqlite3``
        connection refuses any other)."""
        with self._lock:
            found = self._threads.get((stage, partition))
            if found is None:
                found = ThreadPoolExecutor(1, thread_name_prefix=f"trident-{stage}-{partition}")
                self._threads[(stage, partition)] = found
            return found

    def acquire(self, key: tuple[str, int, int], operation: Any, conf: dict[str, Any], context: Any) -> Any:
        """The instance kept for ``key`` (stage, step, partition); ``operation`` prepared with
        ``context`` and kept if there is none yet."""
        with self._lock:
            found = self._kept.get(key)
        if found is not None:
            kept, live = found
            # The context prepare saw is the instance's: it follows the batch being run.
            for name in ("txid", "num_partitions"):
                if hasattr(live, name) and hasattr(context, name):
                    setattr(live, name, getattr(context, name))
            return kept
        operation.prepare(dict(conf), context)
        with self._lock:
            self._kept[key] = (operation, context)
        return operation

    def cleanup_all(self) -> int:
        """``cleanup()`` every kept instance (errors logged), each on the thread that ran it, then
        forget them; how many."""
        with self._lock:
            kept, self._kept = list(self._kept.items()), {}
            threads, self._threads = self._threads, {}
        for (stage, _, partition), (operation, _) in kept:
            thread = threads.get((stage, partition))
            try:
                if thread is None:
                    operation.cleanup()
                else:
                    thread.submit(operation.cleanup).result()
            except Exception:  # one failing cleanup must not keep the others from theirs
                log.exception("cleanup() of %s (stage %s, partition %d) failed", operation, stage, partition)
        for thread in threads.values():
            thread.shutdown(wait=False)
        return len(kept)


__all__ = ["HOSTED_TASK", "InstanceRegistry", "KeptInstances", "TaskInstances", "host_partition",
           "task_instances"]
