"""Copying cupti-python's activity objects into the profiler's records, enums decoded."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from profiler.cupti.activity import copy_from, kernel_from, memset_from, peer_copy_from, sync_from


def test_memcpy_records_name_their_direction_and_memory_kinds() -> None:
    a = SimpleNamespace(correlation_id=9, runtime_correlation_id=8, copy_kind=1, src_kind=2, dst_kind=3, bytes=4096,
                        start=10, end=30, stream_id=13, device_id=0)
    c = copy_from(a)
    assert (c.correlation, c.runtime_correlation, c.direction, c.src_kind, c.dst_kind) == (9, 8, "h2d", "pinned", "device")
    assert (c.nbytes, c.start, c.end, c.stream, c.host_kind) == (4096, 10, 30, 13, "pinned")
    down = copy_from(SimpleNamespace(correlation_id=1, copy_kind=2, src_kind=3, dst_kind=1, bytes=8, start=0, end=1))
    assert (down.direction, down.host_kind, down.runtime_correlation, down.stream) == ("d2h", "pageable", 0, 0)
    for kind, direction in ((3, "h2d"), (4, "d2h"), (8, "d2d"), (9, "h2h"), (10, "p2p"), (99, "unknown")):
        assert copy_from(SimpleNamespace(correlation_id=1, copy_kind=kind, src_kind=0, dst_kind=5, bytes=1, start=0,
                                         end=1)).direction == direction
    assert copy_from(SimpleNamespace(correlation_id=1, copy_kind=1, src_kind=5, dst_kind=7, bytes=1, start=0,
                                     end=1)).src_kind == "managed"


def test_other_records() -> None:
    k = kernel_from(SimpleNamespace(correlation_id=3, name="cupy_add", start=1, end=5, stream_id=2, device_id=1))
    assert (k.name, k.start, k.end, k.stream, k.device) == ("cupy_add", 1, 5, 2, 1)
    m = memset_from(SimpleNamespace(correlation_id=4, bytes=64, memory_kind=3, start=1, end=2))
    assert (m.nbytes, m.memory_kind) == (64, "device")
    s = sync_from(SimpleNamespace(correlation_id=5, type=4, start=1, end=9))
    assert (s.type, s.end) == ("context", 9)
    assert sync_from(SimpleNamespace(correlation_id=5, type=2, start=1, end=9)).type == "stream_wait_event"
    p = peer_copy_from(SimpleNamespace(correlation_id=6, bytes=10, start=1, end=2))
    assert (p.direction, p.src_kind) == ("p2p", "device")


def test_a_record_missing_a_field_raises_for_the_tracer_to_report() -> None:
    with pytest.raises(AttributeError):
        copy_from(SimpleNamespace(correlation_id=1))
