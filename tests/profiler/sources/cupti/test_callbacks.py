"""The table the API callbacks look calls up in: CUPTI's ids per domain, each call's role and argument reader."""

from __future__ import annotations

import ctypes

from profiler.sources.cupti.apis import APIS, COPY, SYNC
from profiler.sources.cupti.callbacks import CallbackTable, resolve_ids

from .fakelib.fakecupti import (
    CallbackData, CallbackDomain, FakeCupti, MemcpyParams, driver_api_trace_cbid, runtime_api_trace_cbid)

RUNTIME_ID, DRIVER_ID = int(CallbackDomain.RUNTIME_API), int(CallbackDomain.DRIVER_API)


def test_every_call_the_cupti_knows_gets_its_domains_id_and_cbid() -> None:
    ids = resolve_ids(FakeCupti())
    assert sorted(api.name for api in ids.values()) == sorted(a.name for a in APIS)
    assert ids[(RUNTIME_ID, int(runtime_api_trace_cbid.cudaMemcpyAsync_v3020))].name == "cudaMemcpyAsync_v3020"
    assert ids[(DRIVER_ID, int(driver_api_trace_cbid.cuLaunchKernel))].name == "cuLaunchKernel"
    guard = resolve_ids(FakeCupti(), [a for a in APIS if a.role in (COPY, SYNC)])
    assert {api.role for api in guard.values()} == {COPY, SYNC} and set(guard) < set(ids)


def test_the_table_splits_the_domains_and_reads_a_copys_arguments() -> None:
    cupti = FakeCupti()
    ids = resolve_ids(cupti)
    table = CallbackTable.of(cupti, ids)
    assert len(table.runtime) + len(table.driver) == len(ids)
    assert {(RUNTIME_ID, cbid) for cbid in table.runtime} | {(DRIVER_ID, cbid) for cbid in table.driver} == set(ids)
    assert all(entry.role == entry.api.role and (entry.copy is None) == (entry.api.layout is None)
               for entry in [*table.runtime.values(), *table.driver.values()])
    entry = table.runtime[int(runtime_api_trace_cbid.cudaMemcpyAsync_v3020)]
    assert entry.copy is not None
    params = MemcpyParams(dst=0xD000, src=0x1000, count=4096, kind=1)
    assert entry.copy(ctypes.addressof(params)) == (0xD000, 0x1000, 4096, "h2d")
    assert table.runtime[int(runtime_api_trace_cbid.cudaStreamSynchronize_v3020)].copy is None


def test_the_table_reads_the_callback_record_and_knows_the_entry_site() -> None:
    table = CallbackTable.of(FakeCupti(), resolve_ids(FakeCupti()))
    result = ctypes.c_int(0)
    data = CallbackData(callback_site=0, function_params=None, function_return_value=ctypes.addressof(result),
                        correlation_id=77)
    site, params, returned, corr = table.read(ctypes.addressof(data))
    assert (site == table.enter_site, params, returned, corr) == (True, 0, ctypes.addressof(result), 77)
    assert table.runtime_domain == RUNTIME_ID
