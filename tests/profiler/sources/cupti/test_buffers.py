"""Activity buffers: lent to CUPTI, decoded in bulk by record kind, layouts checked before reading."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from profiler.sources.cupti.buffers import CStrings, Pool, record_dtypes, records_of

from .fakelib.fakecupti import FakeCupti, activity_kernel10_dtype, activity_memcpy6_dtype


def pack(buf: np.ndarray, records: list[tuple[np.dtype, dict[str, int]]], sizes: dict[int, int] | None = None
         ) -> tuple[list[int], int]:
    offset, offsets = 0, []
    for dtype, fields in records:
        row = np.zeros(1, dtype)
        for k, v in fields.items():
            row[k] = v
        data = row.tobytes()
        size = (sizes or {}).get(fields["kind"], len(data))
        buf[offset:offset + min(size, len(data))] = np.frombuffer(data[:size], np.uint8)
        offsets.append(offset)
        offset += size
    return offsets, offset


def walker(offsets: dict[int, list[int]]):  # type: ignore[no-untyped-def]
    return lambda address, valid: iter(offsets[address])


def test_records_are_grouped_by_kind_in_buffer_order() -> None:
    buf = np.zeros(4096, np.uint8)
    mem = [(activity_memcpy6_dtype, {"kind": 1, "correlation_id": c, "bytes": 100 * c}) for c in (1, 2, 5)]
    ker = [(activity_kernel10_dtype, {"kind": 10, "correlation_id": c}) for c in (3, 4)]
    odd = [(activity_kernel10_dtype, {"kind": 99, "correlation_id": 7})]
    offsets, valid = pack(buf, [mem[0], ker[0], mem[1], odd[0], ker[1], mem[2]])
    dtypes = {1: activity_memcpy6_dtype, 10: activity_kernel10_dtype}
    by_kind = records_of([(buf, valid)], walker({buf.ctypes.data: offsets}), dtypes)
    assert by_kind[1]["correlation_id"].tolist() == [1, 2, 5] and by_kind[1]["bytes"].tolist() == [100, 200, 500]
    assert by_kind[10]["correlation_id"].tolist() == [3, 4]
    assert set(by_kind) == {1, 10}, "records of a kind without a layout are passed over"


def test_several_buffers_concatenate() -> None:
    a, b = np.zeros(1024, np.uint8), np.zeros(1024, np.uint8)
    oa, va = pack(a, [(activity_memcpy6_dtype, {"kind": 1, "correlation_id": 1})])
    ob, vb = pack(b, [(activity_memcpy6_dtype, {"kind": 1, "correlation_id": 2})])
    by_kind = records_of([(a, va), (b, vb)], walker({a.ctypes.data: oa, b.ctypes.data: ob}),
                            {1: activity_memcpy6_dtype})
    assert by_kind[1]["correlation_id"].tolist() == [1, 2]


def test_records_shorter_than_the_dtype_are_refused() -> None:
    buf = np.zeros(1024, np.uint8)
    short = activity_memcpy6_dtype.itemsize - 8
    offsets, valid = pack(buf, [(activity_memcpy6_dtype, {"kind": 1, "correlation_id": c}) for c in (1, 2)],
                          sizes={1: short})
    with pytest.raises(ValueError, match=f"{short}-byte records of activity kind 1"):
        records_of([(buf, valid)], walker({buf.ctypes.data: offsets}), {1: activity_memcpy6_dtype})


def test_the_newest_record_layout_is_chosen() -> None:
    mod = SimpleNamespace(ActivityKind=SimpleNamespace(MEMCPY=1, CONCURRENT_KERNEL=10),
                          activity_memcpy5_dtype=np.dtype([("kind", "<u4")]), activity_memcpy6_dtype=activity_memcpy6_dtype,
                          activity_memcpy_pto_p4_dtype=np.dtype([("x", "<u8")]),
                          activity_kernel9_dtype=np.dtype([("kind", "<u4")]), activity_kernel10_dtype=activity_kernel10_dtype)
    assert record_dtypes(mod) == {1: activity_memcpy6_dtype, 10: activity_kernel10_dtype}  # type: ignore[arg-type]
    assert set(record_dtypes(FakeCupti())) == {1, 2, 10}  # type: ignore[arg-type]


def test_pool_lends_aligned_buffers_and_reuses_them() -> None:
    pool = Pool(size=1 << 12)
    address, size = pool.lend()
    assert size == 4096 and address % 8 == 0
    buf = pool.take_back(address)
    assert buf is not None and pool.take_back(address) is None, "a buffer comes back once"
    assert pool.take_back(12345) is None
    pool.recycle(buf)
    assert pool.lend()[0] == address


def test_c_strings_are_read_once_per_pointer() -> None:
    text = ctypes.create_string_buffer(b"saxpy_kernel")
    reads: list[int] = []

    def read(p: int) -> bytes:
        reads.append(p)
        return ctypes.string_at(p)

    names = CStrings(read)
    assert names(ctypes.addressof(text)) == names(ctypes.addressof(text)) == "saxpy_kernel"
    assert len(reads) == 1 and names(0) == ""
