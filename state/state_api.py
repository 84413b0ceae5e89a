"""Trident's state interfaces, for a user's own state: ``StateFactory`` and the plain ``State``.

A topology persists into a *state factory*: settings that are pickled to Spark's executors and
make the working state there, once per partition: Trident's ``StateFactory.makeState(conf,
metrics, partitionIndex, numPartitions)`` as Java declares it, or without the metrics context,
``makeState(conf, partition_index, num_partitions)`` (:func:`make_state` calls either; the
metrics context is a :class:`MetricsContext`, Storm's ``IMetricsContext`` shape). What
``makeState`` returns decides what the state can do:

* a map state, ``OpaqueMap.build(backing)`` (or ``TransactionalMap``'s, ``NonTransactionalMap``'s)
  over the user's ``IBackingMap``: ``persistentAggregate``, ``partitionPersist`` with a map
  updater, and ``stateQuery`` (MapGet, TupleCollectionGet...), with Trident's rules applied
  per txid;
* a plain :class:`State`: ``partitionPersist`` calls ``beginCommit(txid)``, the updater's
  ``updateState(state, tuples, collector)`` and ``commit(txid)`` for each partition of each
  batch that has tuples; ``stateQuery`` hands it to the QueryFunction's ``batchRetrieve``.

The built-in stores (``SqliteState``, ``RedisState``, ...) are state factories too
(:class:`~.factory.StoreStateFactory`), with a URL and a commit record on top.
"""

from __future__ import annotations

import inspect
import logging
from abc import ABC, abstractmethod
from typing import Any

from .errors import StateConfigError

_log = logging.getLogger(__name__)

#: Storm's and our ``makeState`` parameters, as errors name them.
STORM_MAKE_STATE = "makeState(conf, metrics, partitionIndex, numPartitions)"
OUR_MAKE_STATE = "makeState(conf, partition_index, num_partitions)"


class MetricsContext:
    """What ``makeState``'s ``metrics`` argument is: Storm's ``IMetricsContext`` shape.

    ``registerMetric(name, metric, timeBucketSizeInSecs)`` keeps the metric and returns it (as
    Storm does), so a state written for Storm can register its metrics unchanged; they are kept
    on this object (:attr:`metrics`), not reported to Storm's metrics consumers (there are none
    here: use the run's progress and Spark's metrics).

    Examples
    --------
    >>> metrics = MetricsContext()
    >>> class CountMetric:
    ...     def __init__(self): self.value = 0
    >>> hits = metrics.registerMetric("hits", CountMetric(), 60)
    >>> type(hits).__name__, sorted(metrics.metrics)
    ('CountMetric', ['hits'])
    """

    def __init__(self) -> None:
        self.metrics: dict[str, Any] = {}
        self.buckets: dict[str, int] = {}

    def registerMetric(self, name: str, metric: Any, timeBucketSizeInSecs: int = 60) -> Any:
        """Keep ``metric`` under ``name`` and return it (Storm's ``registerMetric``)."""
        self.metrics[name] = metric
        self.buckets[name] = timeBucketSizeInSecs
        return metric


def make_state_arity(factory: Any) -> int | None:
    """How many arguments ``factory.makeState`` takes: 4 (Storm's, with ``metrics``), 3 (ours),
    or None when Python cannot tell (then it is called with 3).

    Raises
    ------
    StateConfigError
        ``makeState`` takes neither 3 nor 4 positional arguments, naming Storm's signature and ours.

    Examples
    --------
    >>> class Storm:
    ...     def makeState(self, conf, metrics, partitionIndex, numPartitions): ...
    >>> class Ours:
    ...     def makeState(self, conf, partition_index, num_partitions): ...
    >>> make_state_arity(Storm()), make_state_arity(Ours())
    (4, 3)
    """
    method = getattr(factory, "makeState", None)
    if not callable(method):
        raise StateConfigError(f"{type(factory).__name__} has no makeState; a state factory implements "
                               f"Storm's {STORM_MAKE_STATE} or {OUR_MAKE_STATE}")
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return None
    names = [p.name.lower() for p in signature.parameters.values()]
    for count in (4, 3):
        try:
            signature.bind(*([None] * count))
        except TypeError:
            continue
        if count == 4 or len(names) < 2 or "metric" not in names[1]:
            return count
        break  # (conf, metrics, partitionIndex): Storm's form, one argument short
    raise StateConfigError(
        f"{type(factory).__name__}.makeState({', '.join(signature.parameters)}) takes neither Storm's "
        f"{STORM_MAKE_STATE} nor {OUR_MAKE_STATE}; declare one of them")


def make_state(factory: Any, conf: dict[str, Any], partition_index: int, num_partitions: int) -> Any:
    """``factory.makeState`` called with the arguments it declares: with a fresh
    :class:`MetricsContext` for Storm's four, without for our three.

    Examples
    --------
    >>> class Storm:
    ...     def makeState(self, conf, metrics, partitionIndex, numPartitions):
    ...         return (type(metrics).__name__, partitionIndex, numPartitions)
    >>> make_state(Storm(), {}, 1, 4)
    ('MetricsContext', 1, 4)
    """
    if make_state_arity(factory) == 4:
        return factory.makeState(conf, MetricsContext(), partition_index, num_partitions)
    return factory.makeState(conf, partition_index, num_partitions)


class State(ABC):
    """Trident's ``State``: told when a batch's updates in one partition begin and end.

    The engine calls, per partition of a batch that has tuples: ``beginCommit(txid)``, the
    StateUpdater's ``updateState(state, tuples, collector)``, then ``commit(txid)``. The txid is
    the batch id: a replayed batch (a killed driver, a failed task) comes again with the same
    txid, so a state that records the last txid it committed can skip or redo a replay (what
    Trident's transactional states do). ``commit`` not being called means the batch did not
    finish in this partition: nothing of it may become visible (roll back in the next
    ``beginCommit``).

    The state is made by its factory's ``makeState`` on the executor and kept by the process
    for the next batches of the run; ``close()`` is called when the process lets it go.

    Examples
    --------
    >>> class Sink(State):
    ...     def __init__(self): self.pending, self.committed = [], {}
    ...     def beginCommit(self, txid): self.pending = []
    ...     def commit(self, txid): self.committed[txid] = self.pending
    ...     def write(self, rows): self.pending.extend(rows)
    >>> sink = Sink()
    >>> sink.beginCommit(0); sink.write(["a", "b"]); sink.commit(0)
    >>> sink.committed
    {0: ['a', 'b']}
    """

    @abstractmethod
    def beginCommit(self, txid: int) -> None:
        """Batch ``txid``'s updates begin in this partition."""

    @abstractmethod
    def commit(self, txid: int) -> None:
        """Batch ``txid``'s updates in this partition are all made: make them visible."""

    def close(self) -> None:  # noqa: B027 (optional hook)
        """Release connections; the state is not used afterwards."""


class StateFactory(ABC):
    """Trident's ``StateFactory``: makes a partition's state on the executor.

    Subclass it with the settings the state needs (picklable: it travels to Spark's executors)
    and ``makeState``. Pass it to ``persistentAggregate``, ``partitionPersist`` or
    ``topology.newStaticState``. To let ``open_state`` URLs name it, register a URL scheme that
    builds it (``trident_spark.state.url.register_scheme``; see docs/spouts-and-states.md).

    Examples
    --------
    >>> from trident_spark.state import IBackingMap, OpaqueMap
    >>> class DictMap(IBackingMap):
    ...     data = {}
    ...     def multiGet(self, keys): return [self.data.get(tuple(k)) for k in keys]
    ...     def multiPut(self, keys, values): self.data.update(zip(map(tuple, keys), values))
    >>> class DictStateFactory(StateFactory):
    ...     def makeState(self, conf, partition_index, num_partitions):
    ...         return OpaqueMap.build(DictMap())
    >>> state = DictStateFactory().makeState({}, 0, 1)
    >>> state.multiUpdate(3, [["cat"]], [lambda old: (old or 0) + 1])
    [1]
    """

    def check_available(self) -> None:  # noqa: B027 (optional hook)
        """Optional: on the driver, once per run before any query starts, raise if the store does
        not answer (a :class:`~.errors.StateUnavailableError` naming its address) or is
        misconfigured, so a run fails at once rather than at its first batch's tasks.

        The default checks nothing. Connect with a short timeout; open nothing that lasts.
        """

    @abstractmethod
    def makeState(self, conf: dict[str, Any], *args: Any) -> Any:
        """The working state of one partition: a map state (``OpaqueMap.build(...)``) or a :class:`State`.

        Declare it as Storm does, ``makeState(self, conf, metrics, partitionIndex,
        numPartitions)``, or without the metrics context, ``makeState(self, conf,
        partition_index, num_partitions)``: the engine calls it with the arguments it declares
        (checked when the topology is built).

        Parameters
        ----------
        conf : dict
            The topology's configuration (``run(conf=...)``).
        metrics : MetricsContext
            Storm's ``IMetricsContext`` shape (only in the four-argument form).
        partition_index, num_partitions : int
            This partition of the stage that persists or queries, and how many there are.
        """


__all__ = ["OUR_MAKE_STATE", "STORM_MAKE_STATE", "MetricsContext", "State", "StateFactory", "make_state",
           "make_state_arity"]
