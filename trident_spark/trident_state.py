"""TridentState: a handle on state a topology writes (persistentAggregate) or only reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from trident_spark.graph import PersistNode
from trident_spark.state.redaction import redact_text
from trident_spark.validation import check_parallelism

if TYPE_CHECKING:
    from trident_spark.stream import Stream
    from trident_spark.topology import TridentTopology


class TridentState:
    """State of a topology: what ``persistentAggregate``/``partitionPersist`` return, or
    ``topology.newStaticState(factory)`` for a state this topology only reads.

    Examples
    --------
    >>> counts = words.groupBy(["word"]).persistentAggregate(
    ...     MemoryState.opaque(name="wc"), Count(), ["count"])           # doctest: +SKIP
    >>> stream.stateQuery(counts, ["word"], MapGet(), ["count"])         # doctest: +SKIP
    """

    def __init__(self, topology: TridentTopology, factory: Any, node: PersistNode | None = None) -> None:
        self.topology = topology
        self.factory = factory
        self.node = node

    def describe(self) -> str:
        """How messages and the repr name this state: its URL when it has one, without secrets.

        Examples
        --------
        >>> from trident_spark import TridentTopology
        >>> from trident_spark.state import RedisState
        >>> state = TridentTopology().newStaticState(
        ...     RedisState.opaque(url="redis://:s3cret@cache:6379/0", key_prefix="wc"))
        >>> state
        TridentState(redis://:***@cache:6379/0?prefix=wc&type=opaque)
        """
        url = getattr(self.factory, "url", None)
        shown: str = redact_text(str(url) if url else repr(self.factory))
        return shown

    def __repr__(self) -> str:
        return f"TridentState({self.describe()})"

    def newValuesStream(self) -> Stream:
        """Every key updated in a batch with its new value (group fields + output field)."""
        from trident_spark.errors import TopologyError
        from trident_spark.stream import Stream

        if self.node is None:
            raise TopologyError(
                f"newValuesStream: {self.describe()} is a static state (newStaticState); only a state this "
                "topology writes has new values: call newValuesStream() on the TridentState that "
                "persistentAggregate or partitionPersist returned")
        return Stream(self.topology, self.node)

    def parallelismHint(self, n: int) -> TridentState:
        """Write the state from ``n`` partitions (a static state is only read: the hint is checked,
        then ignored)."""
        where = self.node.label if self.node is not None else f"the static state {self.describe()}"
        parallelism = check_parallelism(n, where)
        if self.node is not None:
            self.node.parallelism = parallelism
        return self
