"""The state layer (``trident_spark.state``): map state committed once per txid.

Pure Python: it imports nothing from pyspark or the Spark side of trident_spark,
so its rules can be tested alone.

Modules, one idea each:

* ``values``      the kinds of state (:class:`StateType`) and the stored value classes
* ``errors``      the errors, each naming the state, the key and what to do
* ``base``        the backing-map interfaces a store implements (plain and versioned)
* ``pyvalues``    any Python value as JSON (tagged where JSON lacks the type); canonical key forms
* ``keys``        collision-free encoding of compound keys; the global key
* ``serializers`` JSON in Storm's formats, pluggable
* ``map``         Trident's non-transactional / transactional / opaque rules, and
                  ``getTuples`` (every key and value, Trident's ``ITupleCollection``)
* ``batch_view``  a map state with one batch's txid bound (what updaters and queries get)
* ``cache``       the LRU cache whose writes stay conditional on what was read
* ``batching``    store round trips bounded by ``max_multi_*_batch_size``
* ``stats``       counters for metrics
* ``state_api``   Trident's ``StateFactory`` (``makeState``) and plain ``State``
                  (``beginCommit``/``commit``): what a user's own state implements
* ``factory``     the built-in stores' factories: picklable settings that open a state on the executor
* ``source``      :class:`StateSource`, what the engine asks of a factory that opens its own state
* ``memory``, ``sqlite``, ``redis``, ``elasticsearch``, ``postgres``  the backends
* ``url``         :func:`open_state`
* ``redaction``   secrets out of reprs, messages and logs: the one redaction every module uses

Examples
--------
>>> from trident_spark.state import MemoryState, open_state
>>> counts = MemoryState.opaque(name="doc-package").open()
>>> counts.multiUpdate(0, [["cat"]], [lambda old: (old or 0) + 3])
[3]
>>> open_state("memory://doc-package").multiGet([["cat"]])
[3]
>>> list(open_state("memory://doc-package").getTuples())     # every key and its value
[['cat', 3]]
"""

from .base import BackingMap, IBackingMap, UnversionedMap, Versioned, VersionedBackingMap
from .batch_view import BatchState
from .commit_record import CommitLog, CommitRecord
from .elasticsearch import ElasticsearchState
from .errors import (
    ScanUnsupportedError,
    StateAdoptionError,
    StateAheadError,
    StateConfigError,
    StateConflictError,
    StateError,
    StateLostError,
    StateTypeMismatchError,
    StateUnavailableError,
    UnreadableValueError,
    UnstorableValueError,
)
from .factory import StoreStateFactory
from .keys import GLOBAL_KEY, decode_key, encode_key
from .map import MapState, NonTransactionalMap, OpaqueMap, TransactionalMap
from .memory import MemoryMapState, MemoryState
from .postgres import PostgresState
from .redis import RedisState
from .serializers import (
    JSONNonTransactionalSerializer,
    JSONOpaqueSerializer,
    JSONTransactionalSerializer,
    Serializer,
)
from .source import StateSource
from .sqlite import SqliteState
from .state_api import MetricsContext, State, StateFactory
from .stats import StateStats
from .url import Scheme, open_state, parse_state_url, register_scheme
from .value_updaters import combiner_updater
from .values import OpaqueValue, StateType, TransactionalValue

__all__ = [
    "GLOBAL_KEY",
    "BackingMap",
    "BatchState",
    "CommitLog",
    "CommitRecord",
    "ElasticsearchState",
    "IBackingMap",
    "JSONNonTransactionalSerializer",
    "JSONOpaqueSerializer",
    "JSONTransactionalSerializer",
    "MapState",
    "MemoryMapState",
    "MemoryState",
    "MetricsContext",
    "NonTransactionalMap",
    "OpaqueMap",
    "OpaqueValue",
    "PostgresState",
    "RedisState",
    "ScanUnsupportedError",
    "Scheme",
    "Serializer",
    "SqliteState",
    "State",
    "StateAdoptionError",
    "StateAheadError",
    "StateConfigError",
    "StateConflictError",
    "StateError",
    "StateFactory",
    "StateLostError",
    "StateSource",
    "StateStats",
    "StateType",
    "StateTypeMismatchError",
    "StateUnavailableError",
    "StoreStateFactory",
    "TransactionalMap",
    "TransactionalValue",
    "UnreadableValueError",
    "UnstorableValueError",
    "UnversionedMap",
    "Versioned",
    "VersionedBackingMap",
    "combiner_updater",
    "decode_key",
    "encode_key",
    "open_state",
    "parse_state_url",
    "register_scheme",
]
