"""Kept instances: one instance per (stage, step, partition) in a host, and the host's side of
the instance machinery importing no private name of the task's side."""

from __future__ import annotations

import ast
import doctest
import inspect

from trident_spark.executor import instance_host, instances, kept_instances
from trident_spark.executor.kept_instances import (
    HOSTED_TASK,
    InstanceRegistry,
    KeptInstances,
    TaskInstances,
    host_partition,
    task_instances,
)
from trident_spark.operation import Operation


class Counting(Operation):
    def __init__(self) -> None:
        self.prepared = self.cleaned = 0

    def prepare(self, conf, context):
        self.prepared += 1

    def cleanup(self):
        self.cleaned += 1


def test_a_host_thread_gets_its_kept_instances_and_its_partition():
    registry = InstanceRegistry()
    HOSTED_TASK.instances = KeptInstances(registry, "stage-1", 5)
    try:
        first = task_instances().acquire(0, Counting(), {}, None)
        again = task_instances().acquire(0, Counting(), {}, None)
        assert again is first and first.prepared == 1
        assert host_partition() == 5
    finally:
        HOSTED_TASK.instances = None
    assert type(task_instances()) is TaskInstances and host_partition() is None
    assert registry.cleanup_all() == 1 and first.cleaned == 1


def test_a_task_outside_a_host_prepares_and_cleans_up_its_own():
    task = task_instances()
    operation = task.acquire(0, Counting(), {}, None)
    task.release()
    assert (operation.prepared, operation.cleaned) == (1, 1)


def test_the_task_side_still_offers_the_names_the_stages_import():
    assert instances.task_instances is task_instances and instances.host_partition is host_partition
    assert instances.TaskInstances is TaskInstances


def test_the_host_imports_no_private_name_of_another_module():
    tree = ast.parse(inspect.getsource(instance_host))
    private = [f"{node.module}.{alias.name}" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)
               for alias in node.names
               if node.module and node.module.startswith("trident_spark") and alias.name.startswith("_")]
    assert private == []


def test_docstring_examples():
    failures, attempted = doctest.testmod(kept_instances, optionflags=doctest.ELLIPSIS)
    assert attempted and not failures
