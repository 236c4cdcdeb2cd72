"""Decoding CUPTI's activity records (structured NumPy arrays) into the profiler's records, enums decoded."""

from __future__ import annotations

import numpy as np
import pytest

from profiler.sources.cupti.activity import copies_from, kernels_from, memsets_from, peer_copies_from

from .fakelib.fakecupti import activity_kernel10_dtype, activity_memcpy6_dtype, activity_memset4_dtype


def rows(dtype: np.dtype, *records: dict[str, int]) -> np.ndarray:
    out = np.zeros(len(records), dtype=dtype)
    for i, fields in enumerate(records):
        for k, v in fields.items():
            out[i][k] = v
    return out


def test_memcpy_records_name_their_direction_and_memory_kinds() -> None:
    (c,) = copies_from(rows(activity_memcpy6_dtype, dict(correlation_id=9, runtime_correlation_id=8, copy_kind=1,
                                                         src_kind=2, dst_kind=3, bytes=4096, start=10, end=30,
                                                         stream_id=13)))
    assert (c.correlation, c.runtime_correlation, c.direction, c.src_kind, c.dst_kind) == (9, 8, "h2d", "pinned", "device")
    assert (c.nbytes, c.start, c.end, c.stream, c.host_kind) == (4096, 10, 30, 13, "pinned")
    assert all(type(v) is int for v in (c.nbytes, c.start, c.correlation)), "plain ints, not NumPy scalars"
    kinds = [(3, "h2d"), (4, "d2h"), (8, "d2d"), (9, "h2h"), (10, "p2p"), (99, "unknown")]
    decoded = copies_from(rows(activity_memcpy6_dtype, *(dict(copy_kind=k, src_kind=0, dst_kind=5) for k, _ in kinds)))
    assert [d.direction for d in decoded] == [d for _, d in kinds]
    assert decoded[0].src_kind == "unknown" and decoded[0].dst_kind == "managed"


def test_fields_a_cupti_version_lacks_take_their_default() -> None:
    old = np.dtype([("kind", "<u4"), ("copy_kind", "u1"), ("src_kind", "u1"), ("dst_kind", "u1"), ("flags", "u1"),
                    ("bytes", "<u8"), ("start", "<u8"), ("end", "<u8"), ("correlation_id", "<u4")])
    (c,) = copies_from(rows(old, dict(correlation_id=1, copy_kind=2, src_kind=3, dst_kind=1, bytes=8, end=1)))
    assert (c.direction, c.host_kind, c.runtime_correlation, c.stream, c.device) == ("d2h", "pageable", 0, 0, 0)


def test_other_records() -> None:
    names = {77: "cupy_add"}
    (k,) = kernels_from(rows(activity_kernel10_dtype, dict(correlation_id=3, name=77, start=1, end=5, stream_id=2,
                                                           device_id=1)), names.__getitem__)
    assert (k.name, k.start, k.end, k.stream, k.device) == ("cupy_add", 1, 5, 2, 1)
    (m,) = memsets_from(rows(activity_memset4_dtype, dict(correlation_id=4, bytes=64, memory_kind=3, start=1, end=2)))
    assert (m.nbytes, m.memory_kind) == (64, "device")
    (p,) = peer_copies_from(rows(activity_memset4_dtype, dict(correlation_id=6, bytes=10, start=1, end=2)))
    assert (p.direction, p.src_kind, p.nbytes) == ("p2p", "device", 10)


def test_a_layout_missing_a_needed_field_raises_naming_it() -> None:
    bare = np.zeros(1, dtype=[("kind", "<u4"), ("correlation_id", "<u4")])
    with pytest.raises(KeyError, match="no field 'copy_kind'"):
        copies_from(bare)
