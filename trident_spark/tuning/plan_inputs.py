"""The inputs of a tuning plan: what was measured and aimed at, checked, each with its meaning."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from trident_spark.errors import InvalidArgumentError, is_int

# What each argument is, and an example value, for the error messages.
ARGUMENTS: dict[str, tuple[str, str]] = {
    "kafka_partitions": ("the number of partitions of the spout's topics", "16"),
    "record_bytes": ("the average record size, key + value (bytes)", "1000"),
    "per_record_ms": ("the most expensive stage's task time per record (ms)", "8"),
    "target_batch_ms": ("the batch duration to aim at (ms)", "800"),
    "cores": ("the total executor cores", "16"),
    "executors": ("the number of executors", "4"),
    "cores_per_executor": ("the cores of each executor", "4"),
    "store_sweet_spot_keys": ("the keys per store round trip at the lowest cost per key", "1000"),
    "fan_out": ("records the expensive stage receives per Kafka record", "1"),
    "other_stages_per_record_ms": ("the other stages' task time per Kafka record (ms)", "0.5"),
    "batch_overhead_ms": ("the fixed bookkeeping time of a batch (ms)", "50"),
    "distinct_keys_per_batch": ("the distinct state keys one batch touches", "20000"),
    "working_set_keys": ("the distinct state keys worth keeping cached", "50000"),
    "input_records_per_second": ("the records arriving per second", "1500"),
    "shuffle_partitions": ("the current spark.sql.shuffle.partitions", "200"),
}


def _bad(name: str, value: Any, rule: str) -> InvalidArgumentError:
    what, example = ARGUMENTS[name]
    return InvalidArgumentError(f"plan({name}={value!r}): {what} must be {rule}; give e.g. {name}={example}")


def _whole(name: str, value: Any, minimum: int = 1) -> int:
    if not is_int(value, minimum):
        raise _bad(name, value, f"a whole number >= {minimum}")
    return value


def _number(name: str, value: Any, *, allow_zero: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) \
            or value < 0 or (value == 0 and not allow_zero):
        raise _bad(name, value, "a number >= 0" if allow_zero else "a number > 0")
    return float(value)


@dataclass(frozen=True, kw_only=True)
class PlanInputs:
    """The checked inputs of :func:`plan` (see it for each argument's meaning and unit).

    Examples
    --------
    >>> inputs = PlanInputs(kafka_partitions=16, record_bytes=1000, per_record_ms=8,
    ...                     target_batch_ms=800, executors=4, cores_per_executor=4)
    >>> inputs.parallelism
    16
    """

    kafka_partitions: int
    record_bytes: float
    per_record_ms: float
    target_batch_ms: float
    cores: int | None = None
    executors: int | None = None
    cores_per_executor: int | None = None
    store_sweet_spot_keys: int | None = None
    fan_out: float = 1.0
    other_stages_per_record_ms: float = 0.0
    batch_overhead_ms: float = 0.0
    distinct_keys_per_batch: int | None = None
    working_set_keys: int | None = None
    input_records_per_second: float | None = None
    shuffle_partitions: int | None = None

    def __post_init__(self) -> None:
        _whole("kafka_partitions", self.kafka_partitions)
        for name in ("record_bytes", "per_record_ms", "target_batch_ms", "fan_out"):
            _number(name, getattr(self, name))
        for name in ("other_stages_per_record_ms", "batch_overhead_ms"):
            _number(name, getattr(self, name), allow_zero=True)
        for name in ("cores", "executors", "cores_per_executor", "store_sweet_spot_keys",
                     "distinct_keys_per_batch", "working_set_keys", "shuffle_partitions"):
            if getattr(self, name) is not None:
                _whole(name, getattr(self, name))
        if self.input_records_per_second is not None:
            _number("input_records_per_second", self.input_records_per_second)
        self._check_parallelism()
        if self.batch_overhead_ms >= self.target_batch_ms:
            raise InvalidArgumentError(
                f"plan(batch_overhead_ms={self.batch_overhead_ms:g}): the fixed overhead leaves no time "
                f"for records in target_batch_ms={self.target_batch_ms:g}; give a target_batch_ms above "
                f"{self.batch_overhead_ms:g} or a smaller batch_overhead_ms")
        if self.working_set_keys is not None and self.distinct_keys_per_batch is not None \
                and self.working_set_keys < self.distinct_keys_per_batch:
            raise InvalidArgumentError(
                f"plan(working_set_keys={self.working_set_keys!r}): the keys worth caching include at "
                f"least one batch's keys (distinct_keys_per_batch={self.distinct_keys_per_batch!r}); "
                f"give working_set_keys >= {self.distinct_keys_per_batch} or leave it out")

    def _check_parallelism(self) -> None:
        split = (self.executors, self.cores_per_executor)
        if self.cores is None and None in split:
            if split == (None, None):
                raise InvalidArgumentError(
                    "plan(): the parallelism is missing; give cores=<total executor cores> "
                    "(e.g. cores=16) or executors= and cores_per_executor=")
            given, missing = (("executors", "cores_per_executor") if self.executors is not None
                              else ("cores_per_executor", "executors"))
            raise InvalidArgumentError(f"plan({given}={getattr(self, given)!r}): give {missing}= too "
                             f"(or cores=<total executor cores> instead)")
        if self.cores is not None and self.executors is not None and self.cores_per_executor is not None \
                and self.cores != self.executors * self.cores_per_executor:
            raise InvalidArgumentError(
                f"plan(cores={self.cores!r}): executors x cores_per_executor = {self.executors} x "
                f"{self.cores_per_executor} = {self.executors * self.cores_per_executor}; give cores= "
                f"or executors= and cores_per_executor=, not numbers that disagree")

    @property
    def parallelism(self) -> int:
        """Total executor cores: ``cores``, or ``executors x cores_per_executor``."""
        if self.cores is not None:
            return self.cores
        assert self.executors is not None and self.cores_per_executor is not None
        return self.executors * self.cores_per_executor

    @property
    def record_cost_ms(self) -> float:
        """Task time per Kafka record over all stages: ``per_record_ms x fan_out + other``."""
        return self.per_record_ms * self.fan_out + self.other_stages_per_record_ms


__all__ = ["ARGUMENTS", "PlanInputs"]
