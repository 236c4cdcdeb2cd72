"""What an API callback reads on every CUDA call, set up once per subscription: a recording's or the guard's.

Both subscriptions (`tracer`, a recording; `listening`, the transfer
guard without one) are called by CUPTI with `(domain, cbid, address of
CUpti_CallbackData)` and must, within a microsecond or two, find the
call in the `apis` table, read the callback record and, for a copy, its
parameter block. `CallbackTable.of` builds what they look that up in:
one dict per domain from cbid to an `Entry` (the call, its role and its
parameter-block reader, read as attributes), the reader of the callback
record, and the two enum values compared on every call; `resolve_ids`
says which calls the installed cupti-python knows, as `enable_callback`
takes them. The tuples the tracer's callback keeps per call and per
thread (`Filed`, `Inside`, `Pending`) are laid out here too, with the
names `Filed`'s fields are read by.

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
from .frames import Instr, SiteKey
from .native import CallbackLayout

#: what the tracer's callback files for a call under its correlation id: (api, site, instr, direction, dst, src,
#: count, enter_ns). `site` and `instr` are the user frame's; for a copy whose parameter block was read, its
#: direction, host pointer (`dst` of a D2H, `src` of an H2D; None on the device side) and bytes; `enter_ns` is
#: CUPTI's clock as a timed call began (a host sync, a copy that may wait), 0 for the others. The hot path reads
#: it by the field names below. A tuple because the callback makes one per call: a class with `__slots__` reads
#: as fast but costs about 150 ns more to make (4-12% of a callback), and unpacking all eight fields to read two
#: costs 2-4% (benchmarks/cupti_callback.py, docs/benchmarks.md)
Filed = tuple[Api, "SiteKey | None", "Instr | None", "str | None", "int | None", "int | None", "int | None", int]
#: `Filed`'s fields, by name (`filed[COUNT]`)
API, SITE, INSTR, DIRECTION, DST, SRC, COUNT, ENTER_NS = range(8)
#: the runtime call a thread is inside: (site, instr, role)
Inside = tuple["SiteKey | None", "Instr | None", str]
#: an async D2H whose bytes are not known to be final: (correlation id, host pointer, bytes, instr)
Pending = tuple[int, int, int, "Instr | None"]

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
