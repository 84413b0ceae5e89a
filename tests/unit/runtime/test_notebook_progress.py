"""The live progress table: shown once in an IPython kernel and updated per batch and on stop, through a
display that stands in for IPython's here; nothing is shown, and IPython is not imported, elsewhere."""

from __future__ import annotations

import subprocess
import sys
import types

import pytest

from trident_spark.errors import TopologyError
from trident_spark.runtime.notebook_progress import LiveTable, in_kernel, show_live_progress


class FakeDisplay:
    """IPython's ``display(obj, display_id=True)`` and the handle it returns: records what is shown."""

    def __init__(self):
        self.shown = []
        self.updates = []

    def __call__(self, obj):
        self.shown.append(obj)
        return self

    def update(self, obj):
        self.updates.append(obj)


class FakeHandle:
    """What show_live_progress uses of a TopologyHandle."""

    def __init__(self, conf=None):
        self.spark = types.SimpleNamespace(conf=conf or {})
        self.batches = 0
        self.callbacks = []
        self._on_stop = []

    def _repr_html_(self):
        return f"<table>{self.batches} batches</table>"

    def on_progress(self, callback):
        self.callbacks.append(callback)

    def batch(self):
        self.batches += 1
        for callback in self.callbacks:
            callback(object())

    def stop(self):
        for hook in self._on_stop:
            hook()


def html(text):
    return ("HTML", text)


def test_in_a_kernel_the_table_is_shown_once_then_updated_per_batch_and_on_stop():
    display, handle = FakeDisplay(), FakeHandle()
    assert isinstance(show_live_progress(handle, display=display, html=html, kernel=True), LiveTable)
    handle.batch()
    handle.batch()
    handle.stop()
    assert display.shown == [("HTML", "<table>0 batches</table>")]
    assert display.updates == [("HTML", "<table>1 batches</table>"), ("HTML", "<table>2 batches</table>"),
                               ("HTML", "<table>2 batches</table>")]


def test_outside_a_kernel_nothing_is_shown():
    display, handle = FakeDisplay(), FakeHandle()
    assert show_live_progress(handle, display=display, html=html, kernel=False) is None
    assert show_live_progress(handle, display=display, html=html) is None  # this process is no kernel
    handle.batch()
    assert (display.shown, display.updates, handle.callbacks, handle._on_stop) == ([], [], [], [])


def test_the_conf_turns_it_off():
    display = FakeDisplay()
    handle = FakeHandle({"spark.trident.notebook.liveProgress": "false"})
    assert show_live_progress(handle, display=display, html=html, kernel=True) is None
    assert (display.shown, handle.callbacks) == ([], [])
    shown = FakeHandle({"spark.trident.notebook.liveProgress": "TRUE"})
    assert show_live_progress(shown, display=display, html=html, kernel=True) is not None


def test_a_bad_switch_names_the_key():
    handle = FakeHandle({"spark.trident.notebook.liveProgress": "off"})
    with pytest.raises(TopologyError, match=r"^Spark conf spark.trident.notebook.liveProgress='off': give "
                                            r"true or false \(a live progress table"):
        show_live_progress(handle, display=FakeDisplay(), html=html, kernel=True)


def test_a_failing_update_does_not_fail_the_batch():
    class Gone(FakeDisplay):
        def update(self, obj):
            raise RuntimeError("the notebook's frontend went away")

    handle = FakeHandle()
    show_live_progress(handle, display=Gone(), html=html, kernel=True)
    handle.batch()  # no error


def test_a_display_without_a_handle_is_shown_once():
    shown = []
    table = LiveTable(lambda: "<table/>", display=lambda obj: shown.append(obj), html=str)
    table(None)
    assert shown == ["<table/>"]


def test_a_kernel_is_an_ipython_shell_with_a_kernel(monkeypatch):
    shell = types.SimpleNamespace()
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: shell))
    assert not in_kernel()  # IPython in a terminal
    shell.kernel = object()
    assert in_kernel()  # a Jupyter kernel
    monkeypatch.setitem(sys.modules, "IPython", types.SimpleNamespace(get_ipython=lambda: None))
    assert not in_kernel()  # IPython imported, no shell running


def test_looking_for_a_kernel_imports_no_ipython():
    code = ("import sys; from trident_spark.runtime.notebook_progress import in_kernel; "
            "print(in_kernel(), 'IPython' in sys.modules)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                          check=True)
    assert done.stdout.split() == ["False", "False"]
