"""bench/state_targets.py: issue 31's targets met or missed, and the binding term of a miss."""

from __future__ import annotations

from state_targets import batch_terms, verdict

STEADY = {"ms": 1200.0, "term_read": 300.0, "term_operations": 500.0, "term_state": 900.0,
          "term_spark": 100.0, "term_other": None, "latest_offset_ms": 20, "planning_ms": 40, "logs_ms": 90}


def test_terms_are_task_time_per_core_and_the_drivers_wall_time() -> None:
    assert batch_terms(STEADY, 2) == {"read": 150.0, "operations": 250.0, "state": 450.0, "spark": 50.0,
                                      "other": 0.0, "driver": 150.0, "rest": 150.0}


def test_a_met_target_has_no_binding_term() -> None:
    v = verdict(1.5, 1.5, 1.2, STEADY, cores=2, warm=2)

    assert (v["met"], v["steady_met"], v["binding"]) == (True, False, None)


def test_a_miss_names_the_largest_term_and_the_batch_the_target_needs() -> None:
    v = verdict(2.5, 0.9, 1.0, STEADY, cores=2, warm=2)

    assert (v["met"], v["steady_met"]) == (False, False)
    assert v["binding"] == "state: 450 ms per core of a 1,200 ms batch; 2.5x needs a batch of <= 480 ms"


def test_a_miss_bound_by_the_driver_says_so_without_per_core() -> None:
    steady = STEADY | {"term_state": 100.0, "logs_ms": 900}

    v = verdict(1.5, 1.0, 1.0, steady, cores=2, warm=2)

    assert v["binding"] == "driver: 960 ms of a 1,200 ms batch; 1.5x needs a batch of <= 800 ms"


def test_a_miss_bound_by_what_no_term_accounts_for_names_the_rest() -> None:
    steady = STEADY | {"ms": 3000.0}

    v = verdict(2.5, 1.0, 1.0, steady, cores=2, warm=2)

    assert v["terms"]["rest"] == 1950.0
    assert v["binding"] == "rest: 1,950 ms of a 3,000 ms batch; 2.5x needs a batch of <= 1,200 ms"


def test_a_miss_end_to_end_only_is_bound_by_the_querys_fixed_costs() -> None:
    v = verdict(1.2, 1.1, 1.3, STEADY, cores=2, warm=3)

    assert v["binding"] == ("per-query fixed costs: steady 1.30 meets 1.2x, end to end 1.10 does not "
                            "(the first 3 batches, the query's start and stop)")


def test_a_miss_without_stage_times_says_unmeasured() -> None:
    v = verdict(1.2, 0.5, 0.6, {"ms": 1000.0}, cores=2, warm=2)

    assert v["binding"] == "unmeasured: the run's metrics have no stage times for its steady batches"
