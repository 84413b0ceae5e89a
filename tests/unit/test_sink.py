"""stream.collect(): tuples per txid, replayed txids replace their earlier tuples."""

from __future__ import annotations

import threading

from trident_spark import Fields
from trident_spark.sink import CollectSink


def test_tuples_in_txid_order_whatever_the_arrival_order():
    sink = CollectSink(Fields("word"))
    sink.record(2, [{"word": "c"}])
    sink.record(0, [{"word": "a"}, {"word": "b"}])
    sink.record(1, [])
    assert list(sink.batches) == [0, 1, 2]
    assert sink.tuples == [{"word": "a"}, {"word": "b"}, {"word": "c"}]
    assert len(sink) == 3


def test_replayed_txid_replaces_its_tuples():
    sink = CollectSink(Fields("word"))
    sink.record(0, [{"word": "a"}])
    sink.record(1, [{"word": "partial"}])
    sink.record(1, [{"word": "b"}, {"word": "c"}])
    assert sink.batches == {0: [{"word": "a"}], 1: [{"word": "b"}, {"word": "c"}]}
    assert sink.tuples == [{"word": "a"}, {"word": "b"}, {"word": "c"}]
    assert len(sink) == 3


def test_batches_are_copies():
    sink = CollectSink(Fields("word"))
    sink.record(0, [{"word": "a"}])
    sink.batches[0].append({"word": "x"})
    assert sink.tuples == [{"word": "a"}]


def test_clear():
    sink = CollectSink(Fields("word"))
    sink.record(0, [{"word": "a"}])
    sink.clear()
    assert sink.tuples == [] and sink.batches == {} and len(sink) == 0


def test_fields_kept():
    assert CollectSink(Fields("a", "b")).fields == ["a", "b"]


def test_concurrent_records_all_land():
    sink = CollectSink(Fields("n"))
    threads = [threading.Thread(target=sink.record, args=(i, [{"n": i}])) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sink.tuples == [{"n": i} for i in range(50)]
