"""Every trident-spark error class built from its own constructor, for tests of how errors travel
(pickling between processes: tests/unit/test_error_root.py; a Spark task to the driver:
tests/integration/runtime/test_errors_as_data.py)."""

from __future__ import annotations

import inspect


def _dummy(parameter: inspect.Parameter) -> object:
    annotation = str(parameter.annotation)
    if "int" in annotation and "str" not in annotation:
        return 7
    if "Sequence" in annotation:
        return ("cat", 2)
    return "http://es1:9200" if parameter.name == "address" else f"the {parameter.name}"


def built(cls: type[BaseException]) -> BaseException:
    """An instance of ``cls`` from its own constructor, each required argument given a plain value."""
    args, kwargs = [], {}
    for parameter in list(inspect.signature(cls.__init__).parameters.values())[1:]:
        if parameter.default is not inspect.Parameter.empty or parameter.kind in (
                inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD):
            continue
        if parameter.kind is inspect.Parameter.KEYWORD_ONLY:
            kwargs[parameter.name] = _dummy(parameter)
        else:
            args.append(_dummy(parameter))
    return cls(*args or ["a message"], **kwargs)
