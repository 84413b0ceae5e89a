"""The state layer (``trident_spark.state``): map state committed once per txid.

Pure Python: it imports nothing from pyspark or the Spark side of trident_spark,
so its rules can be tested alone. Backends and the transactional/opaque map
logic arrive with the state issue; the kinds of state are fixed here.
"""

from enum import Enum


class StateType(Enum):
    """Trident's three kinds of map state.

    Examples
    --------
    >>> StateType("opaque") is StateType.OPAQUE
    True
    """

    NON_TRANSACTIONAL = "non_transactional"
    TRANSACTIONAL = "transactional"
    OPAQUE = "opaque"


__all__ = ["StateType"]
