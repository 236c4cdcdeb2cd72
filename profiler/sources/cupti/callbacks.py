"""What an API callback reads on every CUDA call, set up once per subscription: the tracer's and the listening session's.

Both subscriptions (`tracer`, a recording; `listening`, the transfer
guard without one) are called by CUPTI with `(domain, cbid, address of
CUpti_CallbackData)` and must, within a microsecond or two, find the
call in the `apis` table, read the callback record and, for a copy, its
parameter block. `CallbackTable.of` builds what they look that up in:
one dict per domain from cbid to an `Entry` (the call, its role and its
parameter-block reader, read as attributes), the reader of the callback
record, and the two enum values compared on every call; `resolve_ids`
says which calls the installed cupti-python knows, as `enable_callback`
takes them.

`Entry` is a plain class with `__slots__`, not a frozen dataclass: one
is made per call of the table when a subscription starts and read on
every callback, and a slot reads as fast as a tuple's item
(`benchmarks/cupti_callback.py` measures the callback).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import ModuleType
from typing import Callable, Iterable

from .apis import APIS, DRIVER, RUNTIME, Api, CopyReader, copy_reader, resolve
from .native import CallbackLayout

#: a `CUpti_CallbackData`'s address -> (callbackSite, functionParams, functionReturnValue, correlationId)
RecordReader = Callable[[int], tuple[int, int, int, int]]


class Entry:
    """One call of the table as a callback finds it by cbid: the `Api`, its role, its parameter-block reader."""

    __slots__ = ("api", "role", "copy")

    def __init__(self, api: Api) -> None:
        self.api = api
        self.role = api.role
        #: a copy's (dst, src, count, direction) from its parameter block; None for calls whose arguments are not read
        self.copy: CopyReader | None = copy_reader(api.layout) if api.layout is not None else None


@dataclass(frozen=True)
class CallbackTable:
    """What a subscription's callback reads on every call: how to find each call of its table, and read its record."""

    #: cbid -> entry, per domain
    runtime: dict[int, Entry]
    driver: dict[int, Entry]
    #: CUPTI's id of the runtime domain, and of the entry site (`API_ENTER`), compared on every callback
    runtime_domain: int
    enter_site: int
    read: RecordReader

    @classmethod
    def of(cls, cupti: ModuleType, ids: dict[tuple[int, int], Api]) -> CallbackTable:
        """The table of the calls `ids` names (as `resolve_ids` gives them), for the installed cupti-python."""
        runtime_domain = int(cupti.CallbackDomain.RUNTIME_API)
        runtime: dict[int, Entry] = {}
        driver: dict[int, Entry] = {}
        for (domain, cbid), api in ids.items():
            (runtime if domain == runtime_domain else driver)[cbid] = Entry(api)
        return cls(runtime, driver, runtime_domain, int(cupti.ApiCallbackSite.API_ENTER),
                   CallbackLayout(getattr(cupti, "callback_data_dtype", None)).reader())


def resolve_ids(cupti: ModuleType, apis: Iterable[Api] = APIS) -> dict[tuple[int, int], Api]:
    """`(CUPTI domain id, cbid) -> Api` for the calls of `apis` the installed cupti-python knows."""
    table = resolve(apis, cupti.runtime_api_trace_cbid, cupti.driver_api_trace_cbid)
    domains = {RUNTIME: int(cupti.CallbackDomain.RUNTIME_API), DRIVER: int(cupti.CallbackDomain.DRIVER_API)}
    return {(domains[domain], cbid): api for (domain, cbid), api in table.items()}
