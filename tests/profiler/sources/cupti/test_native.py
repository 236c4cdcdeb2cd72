"""The ctypes side of the CUPTI source: the callback record read in one unpack, libcupti found in the memory map."""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import numpy as np
import pytest

from profiler.sources.cupti.native import CallbackLayout, library_path

from .fakelib.fakecupti import CallbackData, callback_data_dtype


def test_the_callback_record_is_read_from_the_dtype_offsets() -> None:
    params, result = ctypes.c_uint64(7), ctypes.c_int(0)
    data = CallbackData(callback_site=1, function_params=ctypes.addressof(params),
                        function_return_value=ctypes.addressof(result), correlation_id=4242)
    read = CallbackLayout(callback_data_dtype).reader()
    assert read(ctypes.addressof(data)) == (1, ctypes.addressof(params), ctypes.addressof(result), 4242)
    assert CallbackLayout(None).reader()(ctypes.addressof(data)) == read(ctypes.addressof(data)), \
        "without cupti-python's dtype the 64-bit header layout is used"


def test_a_reordered_layout_still_reads_each_field() -> None:
    dtype = np.dtype({"names": ["correlation_id", "callback_site", "function_params", "function_return_value"],
                      "formats": ["<u4", "<i4", "<u8", "<u8"], "offsets": [0, 4, 8, 16], "itemsize": 24})
    raw = np.zeros(1, dtype)
    raw[0] = (99, 1, 0xABC, 0xDEF)
    assert CallbackLayout(dtype).reader()(raw.ctypes.data) == (1, 0xABC, 0xDEF, 99)


def test_overlapping_fields_are_refused() -> None:
    dtype = np.dtype({"names": ["callback_site", "function_params"], "formats": ["<i4", "<u8"], "offsets": [0, 2],
                      "itemsize": 16})
    with pytest.raises(ValueError, match="unexpected CUpti_CallbackData layout"):
        CallbackLayout(dtype)


def test_libcupti_is_found_in_the_memory_map(tmp_path) -> None:  # type: ignore[no-untyped-def]
    maps = tmp_path / "maps"
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n"
                    "7f02-7f03 r-xp 00000000 08:01 2 /opt/env/lib/python3.12/site-packages/nvidia/cu13/lib/"
                    "libcupti.so.13\n7f04-7f05 rw-p 00000000 00:00 0 \n")
    calls: list[int] = []
    module = SimpleNamespace(get_timestamp=lambda: calls.append(1))
    path = library_path(module, str(maps))  # type: ignore[arg-type]
    assert path == "/opt/env/lib/python3.12/site-packages/nvidia/cu13/lib/libcupti.so.13" and calls == [1]
    maps.write_text("7f00-7f01 r-xp 00000000 08:01 1 /usr/lib/libc.so.6\n")
    assert library_path(module, str(maps)) is None  # type: ignore[arg-type]
    assert library_path(module, str(tmp_path / "missing")) is None  # type: ignore[arg-type]
