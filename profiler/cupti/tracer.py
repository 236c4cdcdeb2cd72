"""The live CUPTI session: activity buffers, API callbacks, call sites and fingerprints.

Two CUPTI mechanisms are combined. The Activity API records what the
device did (memcpy, memset, concurrent-kernel and synchronisation records,
with device timestamps, bytes and memory kinds) into buffers that CUPTI
hands back in bulk; the Callback API calls a Python function on entry to
and exit from each CUDA call of the `apis` table, on the calling thread,
where the Python stack says which user line made the call. Both carry the
call's correlation id, which is how a copy finds its call site.

The callback is the hot path (it runs twice per intercepted call), so on
entry it does only this: find the user frame (`frames`), read a copy's
pointers from its parameter block (`apis`) and store one tuple under the
correlation id. Fingerprints (when on) are taken on exit, and only of
calls that succeeded, so that a bad pointer is CUDA's error to report and
never a read by the profiler: an H2D's source as the call leaves (the
program has not run since it began), a D2H's destination once its bytes
are final, that is on exit of a synchronous copy, or on exit of the
synchronisation the same Python instruction makes next (PyTorch's
`.item()` is an async copy and a stream sync). Any other async D2H stays
without a fingerprint: its bytes may still be arriving, or already be
changed by the program.

CUPTI's activity callbacks can be registered once per process, and only
one subscriber may exist at a time, so the module keeps that registration
and the one active `Tracer` in module state; a second concurrent tracer is
refused. No exception may cross into CUPTI: every callback catches all,
keeps the first message, and the recorder reports it after the run.
"""

from __future__ import annotations

import ctypes
import hashlib
import sys
import threading
from types import ModuleType
from typing import Any, Callable

from ..errors import ProfilerError
from . import activity as act
from .apis import APIS, COPY, DRIVER, RUNTIME, SYNC, Api, read_copy_args, resolve
from .frames import FrameFilter

#: activity buffer CUPTI fills before handing it back (8 MiB holds about 80,000 memcpy records)
BUFFER_BYTES = 8 << 20
_ACTIVE: Tracer | None = None
_REGISTERED: ModuleType | None = None  # the cupti module the buffer callbacks were registered with
_LOCK = threading.Lock()


def digest(address: int, nbytes: int) -> str:
    """The content fingerprint offload_core uses (blake2b, 8 bytes) of host memory at `address`."""
    return hashlib.blake2b((ctypes.c_char * nbytes).from_address(address), digest_size=8).hexdigest()


def _buffer_requested() -> tuple[int, int]:
    return BUFFER_BYTES, 0


def _buffer_completed(activities: Any) -> None:
    tracer = _ACTIVE
    if tracer is not None:
        tracer.take(activities)


class Tracer:
    """One recording: `start()`, the program runs, `stop()` returns the `Capture`."""

    def __init__(self, cupti: ModuleType, *, fingerprints: bool = True, frames: FrameFilter | None = None) -> None:
        self.cupti = cupti
        self.fingerprints = fingerprints
        self.frames = frames or FrameFilter()
        self._subscriber: Any = None
        self._on_api: Callable[[Any, int, int, Any], None] | None = None
        self._kinds: list[Any] = []
        self._t0 = 0
        # correlation id -> (api, site, instr, direction, dst, src, count, enter_ns)
        self._calls: dict[int, tuple[Any, ...]] = {}
        self._late: dict[int, str] = {}  # fingerprints, taken on exit once the bytes are final
        self._copies: list[act.Copy] = []
        self._memsets: list[act.Memset] = []
        self._kernels: list[act.Kernel] = []
        self._syncs: list[act.Sync] = []
        self._errors: list[str] = []
        k = cupti.ActivityKind
        self._extract: dict[int, tuple[Callable[[Any], Any], list[Any]]] = {
            int(k.MEMCPY): (act.copy_from, self._copies),
            int(k.MEMSET): (act.memset_from, self._memsets),
            int(k.CONCURRENT_KERNEL): (act.kernel_from, self._kernels),
            int(k.SYNCHRONIZATION): (act.sync_from, self._syncs),
        }
        if hasattr(k, "MEMCPY2"):
            self._extract[int(k.MEMCPY2)] = (act.peer_copy_from, self._copies)

    # ------------------------------------------------------------ buffers
    def take(self, activities: Any) -> None:
        """Copy each activity record out of a completed CUPTI buffer (CUPTI's thread or a flush)."""
        extract = self._extract
        try:
            for a in activities:
                entry = extract.get(int(a.kind))
                if entry is not None:
                    entry[1].append(entry[0](a))
        except Exception as exc:
            self.error("reading an activity record", exc)

    def error(self, where: str, exc: BaseException) -> None:
        if len(self._errors) < 5:
            self._errors.append(f"{where}: {type(exc).__name__}: {exc}")

    # ----------------------------------------------------------- lifecycle
    def start(self) -> Tracer:
        global _ACTIVE, _REGISTERED
        c = self.cupti
        with _LOCK:
            if _ACTIVE is not None:
                raise ProfilerError("a CUPTI recording is already running in this process")
            try:
                if _REGISTERED is not c:
                    c.activity_register_callbacks(_buffer_requested, _buffer_completed)
                    _REGISTERED = c
                table = resolve(APIS, c.runtime_api_trace_cbid, c.driver_api_trace_cbid)
                domains = {RUNTIME: int(c.CallbackDomain.RUNTIME_API), DRIVER: int(c.CallbackDomain.DRIVER_API)}
                by_id = {(domains[d], cbid): api for (d, cbid), api in table.items()}
                self._on_api = self._callback(by_id)  # CUPTI holds only a borrowed reference
                self._subscriber = c.subscribe(self._on_api, None)
                for (domain, cbid) in by_id:
                    c.enable_callback(1, self._subscriber, domain, cbid)
                _ACTIVE = self
                k = c.ActivityKind
                for kind in (k.MEMCPY, k.CONCURRENT_KERNEL):
                    c.activity_enable(kind)
                    self._kinds.append(kind)
                for name in ("SYNCHRONIZATION", "MEMSET", "MEMCPY2"):
                    kind = getattr(k, name, None)
                    try:  # the trace is still worth having without these on a CUPTI that lacks them
                        if kind is not None:
                            c.activity_enable(kind)
                            self._kinds.append(kind)
                    except Exception as exc:
                        self.error(f"{name} activity records are not available", exc)
                self._t0 = int(c.get_timestamp())
            except Exception as exc:
                self._teardown()
                raise ProfilerError(f"CUPTI could not start: {_explain(c, exc)}") from None
        return self

    def stop(self) -> act.Capture:
        """Stop listening, let the device finish, collect every record; idempotent."""
        c = self.cupti
        t1 = int(c.get_timestamp()) if _ACTIVE is self else self._t0
        if self._subscriber is not None:
            try:
                c.unsubscribe(self._subscriber)
            except Exception as exc:
                self.error("unsubscribing", exc)
            self._subscriber = None
        if _ACTIVE is self:
            sync_kind = c.ActivityKind.SYNCHRONIZATION
            try:
                if sync_kind in self._kinds:
                    c.activity_disable(sync_kind)  # the profiler's own wait below is no program sync
                    self._kinds.remove(sync_kind)
                _synchronize_device()
                c.activity_flush_all(1)
            except Exception as exc:
                self.error("flushing activity records", exc)
            self._teardown()
        return act.Capture(self._t0, t1, self._api_calls(), tuple(self._copies), tuple(self._memsets),
                           tuple(self._kernels), tuple(self._syncs), self._dropped(), tuple(self._errors))

    def _teardown(self) -> None:
        global _ACTIVE
        for kind in self._kinds:
            try:
                self.cupti.activity_disable(kind)
            except Exception as exc:
                self.error("disabling activity records", exc)
        self._kinds.clear()
        if self._subscriber is not None:
            try:
                self.cupti.unsubscribe(self._subscriber)
            except Exception:
                pass
            self._subscriber = None
        if _ACTIVE is self:
            _ACTIVE = None

    def _dropped(self) -> int:
        out = ctypes.c_size_t(0)
        try:
            self.cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(out))
        except Exception:
            return 0
        return int(out.value)

    def _api_calls(self) -> dict[int, act.ApiCall]:
        late = self._late
        out = {}
        for corr, (api, site, instr, _, dst, src, count, enter) in list(self._calls.items()):
            out[corr] = act.ApiCall(corr, api.name, api.role, site, instr, api.synchronous, dst, src, count,
                                    late.get(corr), enter)
        return out

    # ------------------------------------------------------------ callback
    def _callback(self, table: dict[tuple[int, int], Api]) -> Callable[[Any, int, int, Any], None]:
        c = self.cupti
        calls = self._calls
        late = self._late
        site_of = self.frames.site
        getframe = sys._getframe
        get_ident = threading.get_ident
        timestamp = c.get_timestamp
        fingerprints = self.fingerprints
        params_at, result_at = _offsets(c)
        enter_site = int(c.ApiCallbackSite.API_ENTER)
        #: thread -> an async D2H (corr, dst, count, instr) whose bytes are not known to be final
        pending: dict[int, tuple[int, int, int, Any]] = {}
        awaiting: dict[int, int] = {}  # thread -> correlation id of the sync that makes them final
        errors = self.error

        def on_api(userdata: Any, domain: int, cbid: int, cbdata: Any) -> None:
            try:
                api = table.get((domain, cbid))
                if api is None:
                    return
                corr = cbdata.correlation_id
                if cbdata.callback_site != enter_site:
                    if fingerprints:
                        on_exit(api, corr, cbdata)
                    return
                try:
                    frame = getframe(1)
                except ValueError:
                    frame = None
                site, instr = site_of(frame)
                if pending:
                    tid = get_ident()
                    waiting = pending.get(tid)
                    if waiting is not None:
                        if api.role == SYNC and instr is not None and waiting[3] == instr:
                            awaiting[tid] = corr
                        else:  # the program ran on: the bytes may have changed since
                            del pending[tid]
                layout = api.layout
                if layout is None:
                    calls[corr] = (api, site, instr, None, None, None, None, 0)
                    return
                calls[corr] = (api, site, instr, None, None, None, None, 0)  # kept if the block is unreadable
                args = read_copy_args(layout, _field(cbdata, params_at, "function_params"))
                direction = args.direction
                calls[corr] = (api, site, instr, direction, args.dst if direction != "h2d" else None,
                               args.src if direction != "d2h" else None, args.count, timestamp())
            except Exception as exc:
                errors("in a CUDA API callback", exc)

        def on_exit(api: Api, corr: int, data: Any) -> None:
            if api.role == COPY:
                entry = calls.get(corr)
                if entry is None or not entry[6] or api.layout is None or not api.layout.flat:
                    return
                direction = entry[3]
                host = entry[5] if direction == "h2d" else entry[4] if direction == "d2h" else None
                if not host or not _succeeded(data, result_at):
                    return
                if direction == "h2d":
                    # still inside the call: the program cannot have touched the source since it began
                    late[corr] = digest(host, entry[6])
                elif api.synchronous:
                    late[corr] = digest(host, entry[6])
                else:
                    pending[get_ident()] = (corr, host, entry[6], entry[2])
            elif api.role == SYNC and awaiting:
                tid = get_ident()
                if awaiting.get(tid) == corr:
                    del awaiting[tid]
                    d2h = pending.pop(tid, None)
                    if d2h is not None and _succeeded(data, result_at):
                        late[d2h[0]] = digest(d2h[1], d2h[2])

        return on_api


def _offsets(cupti: ModuleType) -> tuple[int, int]:
    """Byte offsets of `functionParams` and `functionReturnValue` in CUpti_CallbackData (16, 24 on 64-bit)."""
    dtype = getattr(cupti, "callback_data_dtype", None)
    try:
        fields = dtype.fields  # type: ignore[union-attr]
        return int(fields["function_params"][1]), int(fields["function_return_value"][1])
    except (AttributeError, KeyError, TypeError):
        return 16, 24


def _field(cbdata: Any, offset: int, name: str) -> int:
    """A pointer field of the CUpti_CallbackData behind cupti-python's `CallbackData` (0 if unreadable)."""
    try:
        return ctypes.c_void_p.from_address(int(cbdata.ptr) + offset).value or 0
    except (AttributeError, TypeError, ValueError):
        try:  # versions that expose the struct as a NumPy record instead
            return int(cbdata._data[0][name]) or 0
        except Exception:
            return 0


def _succeeded(cbdata: Any, result_at: int) -> bool:
    """Whether the call returned success (its CUresult/cudaError_t, readable on exit); unknown counts as failure."""
    result = _field(cbdata, result_at, "function_return_value")
    return bool(result) and ctypes.c_int.from_address(result).value == 0


def _synchronize_device() -> None:
    """Wait for the current context's work, so that every record has its end time (no-op without one)."""
    from .probe import load_driver

    lib = load_driver()
    if lib is None:
        return
    ctx = ctypes.c_void_p(0)
    if lib.cuCtxGetCurrent(ctypes.byref(ctx)) == 0 and ctx.value:
        lib.cuCtxSynchronize()


def _explain(cupti: ModuleType, exc: BaseException) -> str:
    """A CUPTI error as one line, with what to do for the errors a user can fix."""
    status = getattr(exc, "status", None)
    result = getattr(cupti, "Result", None)
    name = ""
    if status is not None and result is not None:
        try:
            name = result(status).name
        except (ValueError, TypeError):
            name = ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "MULTIPLE_SUBSCRIBERS" in name or "MULTIPLE_SUBSCRIBERS" in text:
        return (f"{text} (another CUPTI client is attached: Nsight Systems/Compute, torch.profiler or another "
                f"offload-prof; run without it)")
    if "INSUFFICIENT_PRIVILEGES" in name or "INSUFFICIENT_PRIVILEGES" in text:
        return f"{text} (this user may not trace the GPU; see NVIDIA's ERR_NVGPUCTRPERM notes)"
    return text
