"""Tuning: the Storm+Trident tuning notes' method, from measured costs to settings.

Imports no pyspark: plan on a laptop from numbers measured on the cluster. :func:`plan` sizes
batches for a cluster you have; :func:`size_cluster` (the scale model) says what cluster a rate
needs, and :func:`predict` what a cluster shape carries and where it binds.

Examples
--------
>>> from trident_spark.tuning import plan
>>> plan(kafka_partitions=16, record_bytes=1000, per_record_ms=8, target_batch_ms=800,
...      cores=16).settings()["trigger"]
'800 milliseconds'
"""

from trident_spark.tuning.cluster_sizing import ClusterSizing, size_cluster
from trident_spark.tuning.measured import measured_inputs, plan_from_progress
from trident_spark.tuning.plan import PlanInputs, TuningPlan, plan, plan_inputs
from trident_spark.tuning.scale_model import ClusterShape, ScaleConstants, ScalePrediction, predict

__all__ = ["ClusterShape", "ClusterSizing", "PlanInputs", "ScaleConstants", "ScalePrediction", "TuningPlan",
           "measured_inputs", "plan", "plan_from_progress", "plan_inputs", "predict", "size_cluster"]
