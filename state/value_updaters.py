"""Updaters of a map state's values: a function old value -> new value, or Storm's ``ValueUpdater``.

``MapState.multiUpdate`` and ``update`` take either; :func:`as_updater` makes both a plain
callable, and :func:`combiner_updater` is the one a CombinerAggregator's batch result folds in
with (Trident's ``CombinerValueUpdater``). The map state's rules (``map.py``) apply them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, cast

from .errors import StateError

#: Maps a key's old value (None if the key is new) to its new value. Must be pure.
Updater = Callable[[Any], Any]


def combiner_updater(combine: Callable[[Any, Any], Any], partial: Any) -> Updater:
    """The updater of a CombinerAggregator's batch result (Trident's ``CombinerValueUpdater``).

    Returns ``partial`` for a new key, else ``combine(old, partial)``.

    Examples
    --------
    >>> add_three = combiner_updater(lambda a, b: a + b, 3)
    >>> add_three(None), add_three(10)
    (3, 13)
    """
    def update(old: Any) -> Any:
        return partial if old is None else combine(old, partial)
    return update


class ValueUpdater(Protocol):
    """Storm's ``ValueUpdater``: an object whose ``update(stored)`` returns the new value.

    ``multiUpdate`` and ``update`` take these as well as plain callables.

    Examples
    --------
    >>> class AddOne:
    ...     def update(self, stored): return (stored or 0) + 1
    >>> as_updater(AddOne())(4)
    5
    """

    def update(self, stored: Any, /) -> Any:
        """The new value from the stored one (None for a new key)."""
        ...


def as_updater(updater: Updater | ValueUpdater) -> Updater:
    """A plain callable, or a ``ValueUpdater``'s bound ``update``.

    Examples
    --------
    >>> as_updater(lambda old: 1)(None)
    1
    """
    if callable(updater):
        return updater
    update = getattr(updater, "update", None)
    if callable(update):
        return cast(Updater, update)
    raise StateError(f"an updater must be a callable old -> new or a ValueUpdater with update(stored), "
                     f"got {type(updater).__name__}")


__all__ = ["Updater", "ValueUpdater", "as_updater", "combiner_updater"]
