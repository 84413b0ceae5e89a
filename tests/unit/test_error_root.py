"""One error root: every exception class of trident_spark and its state layer derives from TridentSparkError.

The walk imports every module of both packages, so a class added later (or
moved to another module) is checked too. The int-check helper's messages are
the ones the hand-written checks gave before it.
"""

from __future__ import annotations

import importlib
import inspect
import pickle
from pathlib import Path
from types import ModuleType

import pytest

import trident_spark
import trident_spark.state
from tests.error_instances import built as _built
from trident_spark import TridentSparkError
from trident_spark import errors as package_errors
from trident_spark.state import errors as state_errors
from trident_spark.state.checks import check_int, is_int


def _modules() -> list[ModuleType]:
    # Every .py file, not pkgutil's walk: planner/ and runtime/ are namespace packages it skips.
    found: list[ModuleType] = []
    for package in (trident_spark, trident_spark.state):
        root = Path(next(iter(package.__path__)))
        for path in sorted(root.rglob("*.py")):
            parts = path.relative_to(root).with_suffix("").parts
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found.append(importlib.import_module(".".join((package.__name__, *parts))))
    return found


def _exception_classes() -> list[type[BaseException]]:
    classes: dict[str, type[BaseException]] = {}
    for module in _modules():
        for _, value in inspect.getmembers(module, inspect.isclass):
            if issubclass(value, BaseException) and value.__module__ == module.__name__:
                classes[f"{value.__module__}.{value.__qualname__}"] = value
    return list(classes.values())


def test_the_walk_sees_both_packages_and_their_errors() -> None:
    names = {f"{c.__module__}.{c.__qualname__}" for c in _exception_classes()}
    assert "trident_spark.errors.TopologyError" in names
    assert "trident_spark.state.errors.StateAheadError" in names
    assert "trident_spark.errors.OperatorError" in names
    assert "trident_spark.executor.instances.InstanceHostError" in names
    assert "trident_spark.runtime.failures.StreamFailedError" in names  # namespace packages too
    assert len(names) >= 35


def test_every_exception_class_derives_from_the_one_root() -> None:
    outside = sorted(f"{c.__module__}.{c.__qualname__}" for c in _exception_classes()
                     if not issubclass(c, TridentSparkError))
    assert outside == []


def test_the_root_is_one_class_wherever_it_is_imported_from() -> None:
    assert TridentSparkError is package_errors.TridentSparkError is state_errors.TridentSparkError
    assert issubclass(package_errors.StateError, TridentSparkError)
    assert package_errors.InvalidArgumentError is state_errors.InvalidArgumentError
    assert package_errors.check_int is check_int


@pytest.mark.parametrize(("cls", "base"), [
    (package_errors.InvalidArgumentError, ValueError),
    (package_errors.WrongTypeError, TypeError),
    (package_errors.StateConfigError, ValueError),
    (package_errors.StateConfigError, package_errors.InvalidArgumentError),
])
def test_users_mistakes_keep_the_builtin_class_they_had(cls: type[Exception], base: type[Exception]) -> None:
    assert issubclass(cls, base) and issubclass(cls, TridentSparkError)


@pytest.mark.parametrize("cls", [package_errors.InvalidArgumentError, package_errors.WrongTypeError,
                                 package_errors.TopologyError, package_errors.StateError])
def test_every_message_is_redacted_and_survives_pickling(cls: type[Exception]) -> None:
    err = cls("cannot use es://es1:9200/wc?api_key=abc123 with redis://:s3cret@cache:6379/0")
    assert str(err) == "cannot use es://es1:9200/wc?api_key=*** with redis://:***@cache:6379/0"
    again = pickle.loads(pickle.dumps(err))
    assert type(again) is cls and str(again) == str(err)


@pytest.mark.parametrize("cls", [c for c in _exception_classes() if "__init__" in vars(c)],
                         ids=lambda c: c.__name__)
def test_every_error_with_its_own_constructor_crosses_processes_whole(cls: type[BaseException]) -> None:
    # An instance host sends a task's error back with cloudpickle; a subclass whose __init__ takes
    # other arguments than its message once failed to load there (StateUnavailableError(address,
    # reason): "missing 1 required positional argument"), ending the stream on an outage it waits through.
    from pyspark import cloudpickle

    error = _built(cls)
    for dumps in (pickle.dumps, cloudpickle.dumps):
        again = pickle.loads(dumps(error))
        assert type(again) is cls and str(again) == str(error) and again.args == error.args
        assert vars(again) == vars(error)


def test_is_int_refuses_bools_floats_and_values_out_of_bounds() -> None:
    assert is_int(0) and is_int(-3) and is_int(5, minimum=5, maximum=5)
    assert not is_int(True) and not is_int(False, minimum=0) and not is_int(1.0) and not is_int("1")
    assert not is_int(4, minimum=5) and not is_int(6, maximum=5)


def test_check_int_returns_the_value() -> None:
    assert check_int(3, "cache_size") == 3
    assert check_int(0, "txid_offset", minimum=0) == 0


@pytest.mark.parametrize(("value", "kwargs", "message"), [
    (True, {"name": "txid_offset", "minimum": 0}, "txid_offset must be an int >= 0, got True"),
    (-1, {"name": "max_conflict_retries", "minimum": 0}, "max_conflict_retries must be an int >= 0, got -1"),
    (2.5, {"name": "cache_size"}, "cache_size must be an int >= 1, got 2.5"),
    (-2, {"name": "max_batch_retries", "minimum": 0, "where": "run()"},
     "run(): max_batch_retries must be an int >= 0, got -2"),
    (-1, {"name": "n", "minimum": 0, "where": "FirstN", "note": " (how many tuples to keep)"},
     "FirstN: n must be an int >= 0 (how many tuples to keep), got -1"),
    ("4", {"name": "min_partitions", "message": "KafkaSpout({name}={value!r}) must be a positive integer"},
     "KafkaSpout(min_partitions='4') must be a positive integer"),
    ({"a": 1}, {"name": "size",
                "message": "{name} must be a positive int (or None for no bound), got {value!r}"},
     "size must be a positive int (or None for no bound), got {'a': 1}"),
])
def test_check_int_messages(value: object, kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(package_errors.InvalidArgumentError) as caught:
        check_int(value, **kwargs)  # type: ignore[arg-type]
    assert str(caught.value) == message
    assert isinstance(caught.value, ValueError)


def test_check_int_raises_the_class_it_is_given() -> None:
    with pytest.raises(package_errors.TopologyError, match=r"^run\(\): progress_history must be an int >= 1"):
        check_int(0, "progress_history", where="run()", error=package_errors.TopologyError)
    with pytest.raises(package_errors.StateConfigError, match=r"^cache_size must be an int >= 1, got False$"):
        check_int(False, "cache_size", error=package_errors.StateConfigError)


def _feeder(partitions: object) -> object:
    from trident_spark.spout.testing.feeder import FeederBatchSpout
    return FeederBatchSpout(["word"], num_partitions=partitions)  # type: ignore[arg-type]


def _fixed(size: object) -> object:
    from trident_spark.spout.testing.fixed import FixedBatchSpout
    return FixedBatchSpout(["word"], size, ["cat"])  # type: ignore[arg-type]


def _first_n(n: object) -> object:
    from trident_spark.builtin.first_n import FirstN
    return FirstN(n, "word")  # type: ignore[arg-type]


def _cached(size: object) -> object:
    from trident_spark.state.cache import CachedMap
    return CachedMap(None, size)  # type: ignore[arg-type]  # the size is checked first


@pytest.mark.parametrize(("build", "value", "cls", "message"), [
    (_feeder, 0, package_errors.InvalidArgumentError, "FeederBatchSpout(num_partitions=0): give an int >= 1"),
    (_fixed, True, package_errors.InvalidArgumentError,
     "FixedBatchSpout(max_batch_size=True): give an int >= 1, the number of tuples per batch"),
    (_first_n, -1, package_errors.InvalidArgumentError,
     "FirstN: n must be an int >= 0 (how many tuples to keep), got -1"),
    (_cached, 0, package_errors.StateConfigError, "cache_size must be a positive int here, got 0"),
])
def test_the_package_checks_keep_their_text(build: object, value: object, cls: type[Exception],
                                            message: str) -> None:
    with pytest.raises(cls) as caught:
        build(value)  # type: ignore[operator]
    assert str(caught.value) == message and isinstance(caught.value, TridentSparkError)
