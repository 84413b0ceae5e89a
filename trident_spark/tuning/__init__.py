"""Tuning: the Storm+Trident tuning notes' method, from measured costs to settings.

Imports no pyspark: plan on a laptop from numbers measured on the cluster.

Examples
--------
>>> from trident_spark.tuning import plan
>>> plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800,
...      cores=16).settings()["trigger"]
'800 milliseconds'
"""

from trident_spark.tuning.measured import measured_inputs, plan_from_progress
from trident_spark.tuning.plan import PlanInputs, TuningPlan, plan, plan_inputs

__all__ = ["PlanInputs", "TuningPlan", "measured_inputs", "plan", "plan_from_progress", "plan_inputs"]
