"""A live progress table in Jupyter: the handle's table under the cell that ran ``run()``, kept up to date.

When ``run()`` is called in an IPython kernel (Jupyter, JupyterLab, VS Code's notebooks) the
handle's HTML table (:meth:`TopologyHandle._repr_html_`) is displayed once with a display id, and
updated after each batch and when the run stops. Outside a kernel nothing happens: IPython is
not imported (a plain ``python`` or ``ipython`` in a terminal shows no table), and it need not be
installed. ``spark.conf.set("spark.trident.notebook.liveProgress", "false")`` turns it off.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Protocol

from trident_spark.runtime.run_conf import LIVE_PROGRESS

if TYPE_CHECKING:
    from trident_spark.runtime.handle import TopologyHandle

log = logging.getLogger(__name__)


class DisplayHandle(Protocol):
    """What ``IPython.display.display(obj, display_id=True)`` returns."""

    def update(self, obj: Any) -> None:
        """Replace what is displayed with ``obj``."""


#: ``display(obj, display_id=True)``: shows ``obj`` and returns its handle.
Display = Callable[[Any], DisplayHandle | None]


def in_kernel() -> bool:
    """Whether this process is an IPython kernel (a notebook), without importing IPython: a
    kernel has imported it already, and its shell has a ``kernel``.

    Examples
    --------
    >>> in_kernel()      # doctests run in no kernel
    False
    """
    ipython = sys.modules.get("IPython")
    get_ipython = getattr(ipython, "get_ipython", None)
    if get_ipython is None:
        return False
    try:
        shell = get_ipython()
    except Exception:  # an IPython too old or half imported: no notebook to show in
        return False
    return shell is not None and getattr(shell, "kernel", None) is not None


def _ipython_display() -> tuple[Display, Callable[[str], Any]]:
    from IPython.display import HTML, display

    def show(obj: Any) -> DisplayHandle | None:
        shown: DisplayHandle | None = display(obj, display_id=True)
        return shown

    return show, HTML


class LiveTable:
    """The handle's table, displayed once and updated after each batch and on stop.

    Parameters
    ----------
    render : callable
        The table's HTML now (the handle's ``_repr_html_``).
    display : callable
        ``display(obj)`` returning a handle with ``update(obj)`` (IPython's, with ``display_id=True``).
    html : callable
        Wraps the HTML text into what ``display`` shows (IPython's ``HTML``).

    Examples
    --------
    >>> class Shown:
    ...     def update(self, obj): print("update", obj)
    >>> table = LiveTable(lambda: "<table/>", display=lambda obj: print("show", obj) or Shown(), html=str)
    show <table/>
    >>> table(None)
    update <table/>
    """

    def __init__(self, render: Callable[[], str], display: Display, html: Callable[[str], Any]) -> None:
        self._render = render
        self._html = html
        self._shown = display(html(render()))

    def __call__(self, batch: object = None) -> None:
        """Update the table (a progress callback: called with each batch's progress)."""
        if self._shown is None:
            return
        try:
            self._shown.update(self._html(self._render()))
        except Exception as exc:  # a display that went away must not fail the run's batches
            log.debug("live progress table not updated: %s", exc)


def show_live_progress(handle: TopologyHandle, *, display: Display | None = None,
                       html: Callable[[str], Any] | None = None,
                       kernel: bool | None = None) -> LiveTable | None:
    """In a notebook, display ``handle``'s table and keep it updated (after each batch, and on
    stop); elsewhere, or with ``spark.trident.notebook.liveProgress=false``, do nothing.

    ``display``, ``html`` and ``kernel`` stand in for IPython's in tests.

    Examples
    --------
    >>> show_live_progress(handle) is None     # doctest: +SKIP
    True
    """
    if not (in_kernel() if kernel is None else kernel):
        return None
    found, enabled = LIVE_PROGRESS.value(handle.spark.conf)
    if found and not enabled:
        return None
    if display is None or html is None:
        display, html = _ipython_display()
    table = LiveTable(handle._repr_html_, display, html)
    handle.on_progress(table)
    handle._on_stop.append(table)  # the last update says "stopped"
    return table


__all__ = ["DisplayHandle", "LiveTable", "in_kernel", "show_live_progress"]
