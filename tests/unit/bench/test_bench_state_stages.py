"""bench/state_stages.py: a batch's task time by term from the run's stages, and a contender's rows."""

from __future__ import annotations

from state_stages import COLUMNS, batch_rows, stage_terms


def test_stage_kinds_fold_into_read_operations_state_spark_and_other() -> None:
    stages = [{"name": "KafkaSpout", "kind": "source", "ms": 100.0},
              {"name": "each(Split)", "kind": "python", "ms": 250.0},
              {"name": "aggregate(Count) / partial", "kind": "aggregate", "ms": 50.0},
              {"name": "persistentAggregate(Count) / multiGet", "kind": "state_get", "ms": 10.0},
              {"name": "persistentAggregate(Count) / update", "kind": "state_put", "ms": 30.0},
              {"name": "stateQuery", "kind": "state_query", "ms": 5.0},
              {"name": "spark", "kind": "spark", "ms": 80.0},
              {"name": "fused read", "kind": "something_new", "ms": 7.0},
              {"name": "unmeasured", "kind": "python", "ms": None}]

    assert stage_terms(stages) == {"read": 100.0, "operations": 300.0, "state": 45.0, "spark": 80.0,
                                   "other": 7.0}


def test_rows_are_the_first_batches_then_the_steady_median_over_every_run() -> None:
    def batch(ms: int, read: float) -> dict[str, object]:
        return {"ms": ms, "terms": {"read": read, "operations": 2 * read}, "read_ms": None}

    runs = [{"batches": [batch(2000, 500.0), batch(900, 100.0), batch(800, 90.0)]},
            {"batches": [batch(1800, 400.0), batch(700, 80.0), batch(600, 70.0), batch(500, 60.0)]}]

    rows = batch_rows(runs, 1)

    assert [label for label, _ in rows] == ["batch 1", "steady (median)"]
    assert set(rows[0][1]) == set(COLUMNS)
    first, steady = rows[0][1], rows[1][1]
    assert (first["ms"], first["term_read"], first["term_operations"]) == (1900.0, 450.0, 900.0)
    assert (steady["ms"], steady["term_read"]) == (700, 80.0)
    assert (steady["term_state"], steady["read_ms"]) == (None, None)
