"""The tuning notes' variable sheet as a function: measured costs in, spout and Spark settings out.

The method of the Storm+Trident tuning notes, in our words:

* throughput = work in flight / latency (Little's Law). Spark runs one
  micro-batch of a query at a time, so the work in flight is one batch:
  throughput = records per batch / batch duration;
* no stage is faster than the slowest, and a batch takes no less than the sum
  of its stages, so the batch is sized on what its records cost;
* batches are sized so the most expensive batch operation (usually the state's
  multiGet / multiPut) sits at the top of its slowly-growing regime: per round
  trip, as many keys as the store handles at its lowest cost per key;
* a Kafka batch takes up to ``max_fetch_bytes`` from each partition, so
  batch size ~ partitions x max_fetch_bytes / record_bytes.

:func:`plan` turns those rules round: from a target batch duration and the
measured cost of a record it derives the records per batch, the spout's read
limits, the trigger, the partitions per stage and the state's cache and round
trip sizes, each with the formula and the numbers behind it.
:func:`~trident_spark.tuning.measured.plan_from_progress` takes the measured inputs
from finished batches; its inputs are :class:`~trident_spark.tuning.plan_inputs.PlanInputs`, its result a
:class:`~trident_spark.tuning.settings.TuningPlan`, which writes itself out as text.
"""

from __future__ import annotations

import math

from trident_spark.tuning.plan_inputs import PlanInputs
from trident_spark.tuning.settings import TuningPlan, budget_terms, cost_terms, number, overhead_term


def plan(*, kafka_partitions: int, record_bytes: float, per_record_ms: float, target_batch_ms: float,
         cores: int | None = None, executors: int | None = None, cores_per_executor: int | None = None,
         store_sweet_spot_keys: int | None = None, fan_out: float = 1.0,
         other_stages_per_record_ms: float = 0.0, batch_overhead_ms: float = 0.0,
         distinct_keys_per_batch: int | None = None, working_set_keys: int | None = None,
         input_records_per_second: float | None = None,
         shuffle_partitions: int | None = None) -> TuningPlan:
    """Size batches, read limits, trigger, partitions and state round trips from measured costs.

    The variable sheet of the Storm+Trident tuning notes: give what you measured
    and the batch duration you aim at; get the settings, each with its formula
    and the numbers substituted, and warnings where the inputs waste cores,
    store round trips or time.

    Parameters
    ----------
    kafka_partitions : int
        Partitions of the spout's topics (all topics together).
    record_bytes : float
        Average record size, key + value, in bytes (a batch's ``record_bytes`` in its progress).
    per_record_ms : float
        Task time of the most expensive stage per record it receives, in ms (its task
        time summed over tasks / its input rows).
    target_batch_ms : float
        The batch duration to aim at, in ms; becomes the trigger interval.
    cores : int, optional
        Total executor cores. Or give ``executors`` and ``cores_per_executor`` instead.
    executors, cores_per_executor : int, optional
        ``parallelism = executors x cores_per_executor``.
    store_sweet_spot_keys : int, optional
        Keys per ``multiGet`` / ``multiPut`` round trip at which the store's cost per key
        is lowest (the knee of a batch-size sweep); sets ``max_multi_get_batch_size`` and
        ``max_multi_put_batch_size`` and checks that each task's batch fills a round trip.
    fan_out : float, default 1
        Records the expensive stage receives per Kafka record (10 when each sentence
        is split into 10 words before it).
    other_stages_per_record_ms : float, default 0
        Task time of all the other stages per Kafka record, in ms. A batch's stages
        run one after another, so a batch takes no less than their sum.
    batch_overhead_ms : float, default 0
        Fixed time per batch outside the records (offset planning, logs, commit), in ms.
    distinct_keys_per_batch : int, optional
        Distinct state keys one batch touches (checks the store sweet spot; without
        it, every record counts as one key).
    working_set_keys : int, optional
        Distinct state keys worth keeping cached (the keys that recur across
        batches); sets ``cache_size``. Defaults to ``distinct_keys_per_batch``.
    input_records_per_second : float, optional
        Records arriving per second; checks that the plan keeps up.
    shuffle_partitions : int, optional
        The current ``spark.sql.shuffle.partitions``, to warn when it differs from the plan.

    Returns
    -------
    TuningPlan
        The settings; ``settings()`` to paste, ``explain()`` / ``to_markdown()`` to read.

    Raises
    ------
    InvalidArgumentError
        (a ValueError) An input that is missing, not a number, out of range, or inconsistent; the
        message names the argument, its value and what to give instead.

    Notes
    -----
    With ``P`` = parallelism and ``cost = per_record_ms x fan_out + other_stages_per_record_ms``:

    * ``records_per_batch = (target_batch_ms - batch_overhead_ms) / cost x P``, floored to
      whole records (a full batch does not overrun the target), at least 1;
    * ``max_offsets_per_trigger = records_per_batch``;
    * ``max_fetch_bytes = records_per_batch x record_bytes / kafka_partitions``, rounded
      up to whole bytes (the spout stops at the last record that fits, so a partition
      still gives its share);
    * ``trigger_ms = target_batch_ms`` rounded to whole ms (at least 1);
    * ``stage_partitions = P`` (one task per core, so a stage runs in one wave);
      ``min_partitions = P`` when ``kafka_partitions < P``;
    * ``cache_size = ceil(working_set_keys / stage_partitions)`` (each task caches the
      keys of its own partition);
    * ``max_multi_get_batch_size = max_multi_put_batch_size = store_sweet_spot_keys``;
    * ``expected_batch_ms = batch_overhead_ms + records_per_batch / P x cost``;
    * ``throughput = records_per_batch / batch_seconds`` (Little's Law with one batch in
      flight), ``batch_seconds`` the longer of the trigger and ``expected_batch_ms``;
    * ``parallelism_needed``: the fewest cores whose throughput covers
      ``input_records_per_second`` (rounded up).

    Examples
    --------
    >>> p = plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8,
    ...          target_batch_ms=800, cores=16, input_records_per_second=3000)
    >>> p.records_per_batch, p.max_fetch_bytes, p.trigger, p.throughput
    (1600, 100000, '800 milliseconds', 2000.0)
    >>> p.formulas["records_per_batch"]
    'records_per_batch = target_batch_ms / per_record_ms x parallelism = 800 / 8 x 16 = 1,600'
    >>> p.keeps_up, p.parallelism_needed
    (False, 24)
    """
    inputs = PlanInputs(
        kafka_partitions=kafka_partitions, record_bytes=record_bytes, per_record_ms=per_record_ms,
        target_batch_ms=target_batch_ms, cores=cores, executors=executors,
        cores_per_executor=cores_per_executor, store_sweet_spot_keys=store_sweet_spot_keys,
        fan_out=fan_out, other_stages_per_record_ms=other_stages_per_record_ms,
        batch_overhead_ms=batch_overhead_ms, distinct_keys_per_batch=distinct_keys_per_batch,
        working_set_keys=working_set_keys, input_records_per_second=input_records_per_second,
        shuffle_partitions=shuffle_partitions)
    return plan_inputs(inputs)


def plan_inputs(inputs: PlanInputs) -> TuningPlan:
    """:func:`plan` for inputs already gathered in a :class:`PlanInputs`.

    Examples
    --------
    >>> plan_inputs(PlanInputs(kafka_partitions=16, record_bytes=1000, per_record_ms=8,
    ...                        target_batch_ms=800, cores=16)).records_per_batch
    1600
    """
    return _Sheet(inputs).plan()


class _Sheet:
    """One pass over the variable sheet: values, their formulas and the warnings, in order."""

    def __init__(self, inputs: PlanInputs) -> None:
        self.i = inputs
        self.p = inputs.parallelism
        self.formulas: dict[str, str] = {}
        self.warnings: list[str] = []

    def plan(self) -> TuningPlan:
        i, p = self.i, self.p
        self.formulas["parallelism"] = (
            f"parallelism = cores = {number(p)}" if i.cores is not None else
            f"parallelism = executors x cores_per_executor = {i.executors} x {i.cores_per_executor} = {p}")
        records = self._records_per_batch()
        self.formulas["max_offsets_per_trigger"] = \
            f"max_offsets_per_trigger = records_per_batch = {number(records)}"
        fetch = self._max_fetch_bytes(records)
        trigger_ms = max(1, math.floor(i.target_batch_ms + 0.5))
        self.formulas["trigger"] = (f"trigger = target_batch_ms = {number(i.target_batch_ms)} ms"
                                    + ("" if trigger_ms == i.target_batch_ms else
                                       f" -> {trigger_ms} ms (rounded to whole ms)"))
        min_partitions = self._stage_partitions()
        cache_size = self._cache_size()
        sweet = self._store_round_trips(records)
        expected_ms = i.batch_overhead_ms + records / p * i.record_cost_ms
        self.formulas["expected_batch_ms"] = (
            f"expected_batch_ms = {overhead_term(self.i)[0]}records_per_batch / parallelism x "
            f"{cost_terms(self.i)[0]} = {overhead_term(self.i)[1]}{number(records)} / {p} x "
            f"{cost_terms(self.i)[1]} = {number(expected_ms)}")
        throughput = self._throughput(p)
        batch_s = self._batch_seconds(records, trigger_ms)
        self.formulas["throughput"] = (
            f"throughput = records_per_batch / batch_seconds = {number(records)} / {number(batch_s)} "
            f"= {number(round(throughput))} records/s (Little's Law, one batch in flight)")
        keeps_up, needed = self._keeps_up(throughput)
        return TuningPlan(
            inputs=i, parallelism=p, records_per_batch=records, max_offsets_per_trigger=records,
            max_fetch_bytes=fetch, min_partitions=min_partitions, trigger_ms=trigger_ms,
            trigger=f"{trigger_ms} milliseconds", stage_partitions=p, cache_size=cache_size,
            max_multi_get_batch_size=sweet, max_multi_put_batch_size=sweet,
            expected_batch_ms=expected_ms, throughput=throughput, keeps_up=keeps_up,
            parallelism_needed=needed, warnings=tuple(self.warnings), formulas=self.formulas)

    # -- the settings ----------------------------------------------------------------------

    def _records_for(self, parallelism: int) -> tuple[float, int]:
        i = self.i
        exact = (i.target_batch_ms - i.batch_overhead_ms) / i.record_cost_ms * parallelism
        return exact, math.floor(round(exact, 9))

    def _records_per_batch(self) -> int:
        i, p = self.i, self.p
        exact, records = self._records_for(p)
        (budget, budget_n), (cost, cost_n) = budget_terms(self.i), cost_terms(self.i)
        formula = (f"records_per_batch = {budget} / {cost} x parallelism = {budget_n} / {cost_n} x {p} "
                   f"= {number(exact)}")
        if records != exact:
            at_least = "" if records else ", at least 1"
            formula += f" -> {number(max(records, 1))} (floored to whole records{at_least})"
        self.formulas["records_per_batch"] = formula
        if records < 1:
            shortest = i.batch_overhead_ms + i.record_cost_ms / p
            self.warnings.append(
                f"one record costs {number(i.record_cost_ms)} ms of task time, more than a batch's "
                f"{number(i.target_batch_ms - i.batch_overhead_ms)} ms budget on {p} cores: batches hold "
                f"1 record and take about {number(shortest)} ms; raise target_batch_ms to at least "
                f"{number(math.ceil(shortest))} or add cores")
        return max(records, 1)

    def _max_fetch_bytes(self, records: int) -> int:
        i = self.i
        exact = records * i.record_bytes / i.kafka_partitions
        fetch = max(1, math.ceil(round(exact, 6)))
        formula = (f"max_fetch_bytes = records_per_batch x record_bytes / kafka_partitions = "
                   f"{number(records)} x {number(i.record_bytes)} / {i.kafka_partitions} = {number(exact)}")
        if fetch != exact:
            formula += f" -> {number(fetch)} (rounded up to whole bytes)"
        self.formulas["max_fetch_bytes"] = formula
        if exact < i.record_bytes:
            self.warnings.append(
                f"each partition's share of a batch is {number(records / i.kafka_partitions)} records "
                f"(max_fetch_bytes {number(fetch)} < record_bytes {number(i.record_bytes)}): the spout still "
                f"takes at least one record from every partition with a backlog, so a batch can hold "
                f"{number(i.kafka_partitions)} records, not {number(records)}; raise target_batch_ms or use "
                f"fewer partitions")
        return fetch

    def _stage_partitions(self) -> int | None:
        i, p = self.i, self.p
        self.formulas["stage_partitions"] = (
            f"stage_partitions = parallelism = {p} (one task per core: spark.sql.shuffle.partitions, "
            f"parallelismHint({p}) on the expensive stage)")
        min_partitions = None
        if i.kafka_partitions < p:
            min_partitions = p
            self.formulas["min_partitions"] = (
                f"min_partitions = parallelism = {p} (kafka_partitions {i.kafka_partitions} < {p} cores)")
            self.warnings.append(
                f"{i.kafka_partitions} Kafka partitions for {p} cores: the read stage runs "
                f"{i.kafka_partitions} tasks and leaves {p - i.kafka_partitions} cores idle; add "
                f"partitions to the topic, or split the read with KafkaSpout(min_partitions={p}) and "
                f"repartition before the expensive stage")
        elif i.kafka_partitions % p:
            waves = math.ceil(i.kafka_partitions / p)
            idle = waves * p - i.kafka_partitions
            self.warnings.append(
                f"{i.kafka_partitions} Kafka partitions on {p} cores: the read stage runs in {waves} "
                f"waves with {idle} cores idle in the last; use a multiple of {p} partitions or "
                f"{i.kafka_partitions} cores")
        if i.shuffle_partitions is not None and i.shuffle_partitions != p:
            why = (f"{p - i.shuffle_partitions} cores idle in every shuffled stage"
                   if i.shuffle_partitions < p else
                   f"{i.shuffle_partitions} smaller tasks per stage, each with its own store round trips")
            self.warnings.append(
                f"spark.sql.shuffle.partitions is {i.shuffle_partitions}, the plan wants {p}: {why}; "
                f"set spark.sql.shuffle.partitions={p}")
        return min_partitions

    def _cache_size(self) -> int | None:
        i, p = self.i, self.p
        if i.working_set_keys is not None:
            keys, name = i.working_set_keys, "working_set_keys"
        elif i.distinct_keys_per_batch is not None:
            keys, name = i.distinct_keys_per_batch, "distinct_keys_per_batch"
        else:
            return None
        size = math.ceil(keys / p)
        self.formulas["cache_size"] = (f"cache_size = ceil({name} / stage_partitions) = "
                                       f"ceil({number(keys)} / {p}) = {number(size)} (per task)")
        return size

    def _store_round_trips(self, records: int) -> int | None:
        i, p = self.i, self.p
        sweet = i.store_sweet_spot_keys
        if sweet is None:
            return None
        for name in ("max_multi_get_batch_size", "max_multi_put_batch_size"):
            self.formulas[name] = f"{name} = store_sweet_spot_keys = {number(sweet)}"
        keys = i.distinct_keys_per_batch if i.distinct_keys_per_batch is not None else records
        per_task = keys / p
        if per_task < sweet:
            records_needed = sweet * p * records / keys
            target = math.ceil(i.batch_overhead_ms + records_needed / p * i.record_cost_ms)
            counted = "distinct keys" if i.distinct_keys_per_batch is not None else "keys (one per record)"
            self.warnings.append(
                f"each task gets about {number(per_task)} {counted} per batch "
                f"({number(keys)} / {p} partitions), "
                f"below the store's sweet spot of {number(sweet)} keys per round trip, so the store pays "
                f"its round-trip cost on small batches; a batch of {number(math.ceil(records_needed))} "
                f"records fills one round trip per task: raise target_batch_ms to about {number(target)}, "
                f"or use fewer stage partitions")
        return sweet

    def _batch_seconds(self, records: int, trigger_ms: int) -> float:
        expected_ms = self.i.batch_overhead_ms + records / self.p * self.i.record_cost_ms
        return max(expected_ms, trigger_ms) / 1000

    def _throughput(self, parallelism: int) -> float:
        records = max(self._records_for(parallelism)[1], 1)
        trigger_ms = max(1, math.floor(self.i.target_batch_ms + 0.5))
        expected_ms = self.i.batch_overhead_ms + records / parallelism * self.i.record_cost_ms
        return records / (max(expected_ms, trigger_ms) / 1000)

    def _keeps_up(self, throughput: float) -> tuple[bool | None, int | None]:
        i, p = self.i, self.p
        rate = i.input_records_per_second
        if rate is None:
            return None, None
        busy = rate / throughput
        keeps_up = throughput >= rate
        self.formulas["keeps_up"] = (f"keeps_up = throughput >= input_records_per_second = "
                                     f"{number(round(throughput))} {'>=' if keeps_up else '<'} "
                                     f"{number(rate)} "
                                     f"({busy:.0%} busy)")
        budget = i.target_batch_ms - i.batch_overhead_ms
        exact = rate * i.record_cost_ms / 1000 * i.target_batch_ms / budget
        needed = max(1, math.ceil(round(exact, 9)))
        while self._throughput(needed) < rate:  # flooring records can cost a core more
            needed += 1
        cost_n = cost_terms(self.i)[1]
        scale, scale_n = ("", "") if i.batch_overhead_ms == 0 else (
            " x target_batch_ms / (target_batch_ms - batch_overhead_ms)",
            f" x {number(i.target_batch_ms)} / {number(budget)}")
        self.formulas["parallelism_needed"] = (
            f"parallelism_needed = ceil(input_records_per_second x {cost_terms(self.i)[0]} / 1000{scale}) "
            f"= ceil({number(rate)} x {cost_n} / 1000{scale_n}) = {needed}")
        if not keeps_up:
            extra = (f"; with more than {i.kafka_partitions} cores also add Kafka partitions or set "
                     f"KafkaSpout(min_partitions={needed})" if needed > i.kafka_partitions else "")
            self.warnings.append(
                f"the plan does not keep up: {number(round(throughput))} records/s processed, "
                f"{number(rate)} arriving, so the backlog grows by {number(round(rate - throughput))} "
                f"records/s; give it {needed} cores (now {p}) or cut per_record_ms{extra}")
        elif busy > 0.9:
            roomy = max(needed, math.ceil(round(exact / 0.8, 9)))
            self.warnings.append(
                f"the plan keeps up with little room: {busy:.0%} busy, so a burst or a slow batch "
                f"leaves a backlog that drains slowly; {roomy} cores would keep it "
                f"near 80%")
        return keeps_up, needed


__all__ = ["PlanInputs", "TuningPlan", "plan", "plan_inputs"]
