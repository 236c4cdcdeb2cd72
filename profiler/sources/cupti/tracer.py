"""The live CUPTI session: activity buffers, API callbacks, call sites and fingerprints.

Two CUPTI mechanisms are combined. The Activity API records what the
device did (memcpy, memset and concurrent-kernel records, with device
timestamps, bytes and memory kinds) into buffers that CUPTI hands back
in bulk; the Callback API calls a Python function on entry to
and exit from each CUDA call of the `apis` table, on the calling thread,
where the Python stack says which user line made the call. Both carry the
call's correlation id, which is how a copy finds its call site. Both are
registered with libcupti directly (`native`), not through cupti-python's
wrappers, whose per-call objects cost ten times the copy they trace.

The callback is the hot path (it runs twice per intercepted call), so on
entry it does only this: find the call in the table (`callbacks`), read
the callback record in one unpack, find the user frame (`frames`), read
a copy's pointers from its parameter block (`apis`) and file one tuple
(`callbacks.Filed`) under the correlation id. Filled activity buffers
are only queued; `stop()` decodes them in bulk (`buffers`).
Fingerprints (when on) are taken on exit, and only of calls that
succeeded, so that a bad pointer is CUDA's error to report and never a
read by the profiler: an H2D's source as the call leaves (the program
has not run since it began), a D2H's destination once its bytes are
final, that is on exit of a synchronous copy, or on exit of the
synchronisation the same Python instruction makes next (PyTorch's
`.item()` is an async copy and a stream sync). Any other async D2H stays
without a fingerprint: its bytes may still be arriving, or already be
changed by the program.

A host sync (`cudaStreamSynchronize`, `cudaEventSynchronize`,
`cudaDeviceSynchronize` and their driver calls) is timed by its own
callbacks: CUPTI's clock as the entry callback returns and as the first
exit callback after the wait begins, the time the host waited. A runtime
sync makes its driver sync inside, and the driver call's exit callback
comes first: its work and the runtime exit callback's (3-5 us a step on
an H200) are the profiler's, not waiting, and lie after the record. The
tracer times that work itself, from the wait's end to the outermost exit
callback's digest (`Capture.sync_exits`), and likewise for a synchronous
copy from its first exit callback (`Capture.copy_exits`): the replay sets
it aside after the wait, where it delays the program, instead of guessing
its share of one calibrated average per call (PyTorch's per-step
`.item()` was priced 37-59% high on an H200 for want of it). CUPTI's SYNCHRONIZATION
activity records would say the same, but enabling them also records
every stream's wait on an event, which the trace has no kind for: in
PyTorch's word_language_model (116,000 such waits in an epoch, from
cuDNN's LSTM) they cost 0.35-0.42 s of a 3.1 s loop
(`benchmarks/cupti_breakdown.py`, `act:all` against `act:nosync`).

CUPTI's activity callbacks can be registered once per process, and only
one subscriber may exist at a time, so the module keeps that registration
and the one active `Tracer` in module state; a second concurrent tracer is
refused. No exception may cross into CUPTI: every callback catches all,
keeps the first message, and the recorder reports it after the run.
"""

from __future__ import annotations

import ctypes
import sys
import threading
from types import ModuleType
from typing import Any, Callable

from offload_core.borrows import fingerprint_bytes

from ...errors import ProfilerError
from . import activity as act
from .apis import COPY, LAUNCH, SYNC, Api
from .buffers import Pool, decode
from .callbacks import (
    COUNT, DIRECTION, DST, INSTR, SRC, CallbackTable, Filed, Inside, Pending, resolve_ids)
from .frames import FrameFilter
from .listeners import LISTENERS
from .native import Native, unsubscribe_reporting
from .probe import explain
from .sampling import PER_WINDOW, PERIOD_S, LaunchSampler, LaunchSites

_ACTIVE: Tracer | None = None
_REGISTERED: Any = None  # the Native the buffer callbacks were registered with (once per process)
_POOL = Pool()
_LOCK = threading.Lock()


def digest(address: int, nbytes: int) -> str:
    """A content fingerprint (16 hex digits) of host memory at `address`, as offload_core's recorder takes one.

    XXH3-64 with xxhash, else blake2b (`offload_core.borrows.fingerprint_bytes`):
    a 256 MiB copy took 0.8 s to digest with blake2b on the H200 machine,
    160 times the copy itself.
    """
    return fingerprint_bytes((ctypes.c_char * nbytes).from_address(address))


def _buffer_requested(buffer: Any, size: Any, max_records: Any) -> None:
    try:
        address, nbytes = _POOL.lend()
    except Exception:  # no memory for a buffer: CUPTI drops the records and counts them
        address, nbytes = 0, 0
    buffer[0] = address or None
    size[0] = nbytes
    max_records[0] = 0


def _buffer_completed(context: Any, stream: int, address: int | None, size: int, valid: int) -> None:
    buf = _POOL.take_back(address or 0)
    if buf is None:
        return
    tracer = _ACTIVE
    if tracer is not None and valid:
        tracer.filled.append((buf, valid))
    else:
        _POOL.recycle(buf)


class Tracer:
    """One recording: `start()`, the program runs, `stop()` returns the `Capture`."""

    def __init__(self, cupti: ModuleType, *, fingerprints: bool = True, frames: FrameFilter | None = None,
                 native: Any = None, launch_sites: LaunchSites = "sampled", launch_window: int = PER_WINDOW,
                 launch_pause_s: float = PERIOD_S) -> None:
        self.cupti = cupti
        self.native = native
        self.fingerprints = fingerprints
        #: which launches get a call site: a sample (`sampling`), all, none
        self.launch_sites: LaunchSites = launch_sites
        self._window = (launch_window, launch_pause_s)
        self.sampler: LaunchSampler | None = None
        #: thread -> the runtime call it is inside
        self._outer: dict[int, Inside] = {}
        #: every thread a call was heard from (the sampler's timer may only act for the main thread alone)
        self._threads: set[int] = set()
        #: correlation id of each copy call -> the thread that made it (a runtime's own threads copy for the
        #: user's calls: `runtimecopies`)
        self.copy_threads: dict[int, int] = {}
        self.frames = frames or FrameFilter()
        self.filled: list[tuple[Any, int]] = []  # activity buffers CUPTI returned, with their valid bytes
        self._subscriber: int | None = None
        self._pointer: Any = None  # the callback's C function pointer, alive while subscribed
        self._kinds: list[Any] = []
        self._t0 = 0
        self._t1: int | None = None
        self._capture: act.Capture | None = None
        self._calls: dict[int, Filed] = {}  # correlation id -> the call
        self._late: dict[int, str] = {}  # fingerprints, taken on exit once the bytes are final
        self._sync_ends: dict[int, int] = {}  # correlation id of a host sync -> CUPTI's clock as it returned
        # correlation id of a host sync or a synchronous copy -> its exit callbacks' time after the wait (ns)
        self._sync_exits: dict[int, int] = {}
        self._copy_exits: dict[int, int] = {}
        self._errors: list[str] = []

    @property
    def t0(self) -> int:
        """CUPTI's clock when the recording started (the capture's time zero)."""
        return self._t0

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
            native = self.native = self.native if self.native is not None else Native.load(c)
            try:
                if _REGISTERED is not native:
                    native.register_buffers(_buffer_requested, _buffer_completed)
                    _REGISTERED = native
                by_id = resolve_ids(c)
                launches = [key for key, api in by_id.items() if api.role == LAUNCH]
                if self.launch_sites == "sampled" and launches:  # made first: the callback switches through it
                    per_window, period_s = self._window
                    self.sampler = LaunchSampler(self._switch(launches), per_window=per_window, period_s=period_s,
                                                 on_reopen=self._forget_launches, main_only=self._main_only)
                if LISTENERS.session is not None:  # a guard's listening-only session gives CUPTI up meanwhile
                    LISTENERS.session.pause()
                self._subscriber, self._pointer = native.subscribe(self._callback(by_id))
                for key, api in by_id.items():
                    if api.role != LAUNCH or self.launch_sites != "none":
                        native.enable_callback(self._subscriber, *key)
                _ACTIVE = self
                k = c.ActivityKind
                for kind in (k.MEMCPY, k.CONCURRENT_KERNEL):
                    c.activity_enable(kind)
                    self._kinds.append(kind)
                for name in ("MEMSET", "MEMCPY2"):  # host syncs are timed by their callbacks (module docstring)
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
                raise ProfilerError(f"CUPTI could not start: {explain(c, exc)}") from None
        return self

    def _switch(self, launches: list[tuple[int, int]]) -> Callable[[bool], None]:
        """The sampler's switch: the launch callbacks on or off (from a callback, on the calling thread)."""
        def switch(on: bool) -> None:
            handle = self._subscriber
            if handle is None:
                return
            try:
                for domain, cbid in launches:
                    self.native.enable_callback(handle, domain, cbid, on)
            except Exception as exc:
                self.error("switching the launch callbacks", exc)
        return switch

    def _main_only(self) -> bool:
        """Whether every call heard so far was made on the main thread."""
        return self._threads <= {threading.main_thread().ident}

    def _forget_launches(self) -> None:
        """Drop the runtime launches threads are still said to be inside: their exits went unheard.

        A thread's launch that began while the window was open and ended
        after another thread shut it left no exit; its driver launches would
        otherwise take that launch's site until its next runtime call.
        """
        for tid, (_, _, role) in list(self._outer.items()):
            if role == LAUNCH:
                self._outer.pop(tid, None)

    def halt(self) -> None:
        """End the recording: stop listening, let the device finish, flush the buffers; idempotent.

        Decoding what was recorded is left to `stop()`, so that a program's
        recording ends as soon as it can.
        """
        c = self.cupti
        if self.sampler is not None:
            self.sampler.stop()  # before unsubscribing: a callback may be switching this subscriber's callbacks
        if self._t1 is None:
            self._t1 = int(c.get_timestamp()) if _ACTIVE is self else self._t0
        self._unsubscribe()
        if _ACTIVE is self:
            try:  # unsubscribed above: the profiler's own wait here is no sync of the program's
                _synchronize_device()
                c.activity_flush_all(1)
            except Exception as exc:
                self.error("flushing activity records", exc)
            self._teardown()

    def stop(self) -> act.Capture:
        """End the recording (`halt`) and return everything it collected, decoded; idempotent."""
        self.halt()
        if self._capture is None:
            filled, self.filled = self.filled, []
            copies, memsets, kernels, syncs = decode(filled, self.cupti, self.native.records, _POOL, self.error)
            syncs += self._host_syncs()
            t1 = self._t1 if self._t1 is not None else self._t0
            self._capture = act.Capture(self._t0, t1, self._api_calls(), tuple(copies), tuple(memsets),
                                        tuple(kernels), tuple(syncs), self._dropped(), tuple(self._errors),
                                        tuple(self._sync_exits.values()), tuple(self._copy_exits.values()))
        return self._capture

    def _unsubscribe(self) -> None:
        if self._subscriber is not None:
            unsubscribe_reporting(self.native, self._subscriber, self.error)
            self._subscriber = None

    def _teardown(self) -> None:
        global _ACTIVE
        if self.sampler is not None:
            self.sampler.stop()
        for kind in self._kinds:
            try:
                self.cupti.activity_disable(kind)
            except Exception as exc:
                self.error("disabling activity records", exc)
        self._kinds.clear()
        self._unsubscribe()
        if _ACTIVE is self:
            _ACTIVE = None
        session = LISTENERS.session
        if session is not None and _ACTIVE is None:
            try:  # the guard that listened before the recording listens again
                session.resume()
            except Exception as exc:
                self.error("resuming the transfer guard's CUPTI session", exc)

    def _dropped(self) -> int:
        out = ctypes.c_size_t(0)
        try:
            self.cupti.activity_get_num_dropped_records(0, 0, ctypes.addressof(out))
        except Exception:
            return 0
        return int(out.value)

    def _host_syncs(self) -> list[act.Sync]:
        """The host syncs the callbacks timed (entry to exit; a call nested in another sync is that one's)."""
        ends = self._sync_ends
        out = []
        for corr, (api, _, _, _, _, _, _, enter) in list(self._calls.items()):
            if api.role == SYNC and enter and corr in ends:
                out.append(act.Sync(corr, act.sync_type_of(api.name), enter, max(ends[corr], enter)))
        return out

    def _api_calls(self) -> dict[int, act.ApiCall]:
        late = self._late
        out = {}
        for corr, (api, site, instr, _, dst, src, count, enter) in list(self._calls.items()):
            out[corr] = act.ApiCall(corr, api.name, api.role, site, instr, api.synchronous, dst, src, count,
                                    late.get(corr), enter)
        return out

    # ------------------------------------------------------------ callback
    def _callback(self, ids: dict[tuple[int, int], Api]) -> Callable[[Any, int, int, int], None]:
        """The API callback: CUPTI calls it on entry to and exit from every call of `ids` (`callbacks.resolve_ids`).

        A runtime call (`cudaMemcpyAsync`) makes its driver call
        (`cuMemcpyHtoDAsync_v2`) inside it, on the same thread, and CUPTI
        calls back for both. The runtime call's entry does the work (user
        frame, parameter block); the nested driver call's entry only files
        the same site under its own correlation id, and its record points
        the conversion at the runtime call (`convert.call_of` prefers the
        call whose parameter block was read).
        """
        table = CallbackTable.of(self.cupti, ids)
        calls = self._calls
        late = self._late
        sync_ends = self._sync_ends
        sync_exits = self._sync_exits
        copy_exits = self._copy_exits
        exiting: dict[int, int] = {}  # thread -> CUPTI's clock at the first exit callback of its synchronous copy
        site_of = self.frames.site
        getframe = sys._getframe
        get_ident = threading.get_ident
        timestamp = getattr(self.native, "timestamp", None) or self.cupti.get_timestamp
        fingerprints = self.fingerprints
        read = table.read
        enter_site = table.enter_site
        runtime = table.runtime_domain
        runtime_entries = table.runtime
        driver_entries = table.driver
        outer = self._outer
        sampler = self.sampler
        threads = self._threads
        copy_threads = self.copy_threads
        pending: dict[int, Pending] = {}  # thread -> its async D2H whose bytes are not known to be final
        awaiting: dict[int, int] = {}  # thread -> correlation id of the sync that makes them final
        # thread -> the timed sync it waits in; ended by the first exit callback after the wait, the nested driver
        # call's (a runtime sync's own exit comes after the driver exit callback's work, which is no waiting)
        in_sync: dict[int, int] = {}
        errors = self.error
        listeners = LISTENERS

        def on_api(userdata: Any, domain: int, cbid: int, address: int) -> None:
            try:
                is_runtime = domain == runtime
                entry = (runtime_entries if is_runtime else driver_entries).get(cbid)
                if entry is None:
                    return
                where, params, result, corr = read(address)
                role = entry.role
                if where != enter_site:
                    if role == SYNC and in_sync:  # first: the host's wait ends here, not after this callback's work
                        waited = in_sync.pop(get_ident(), None)
                        if waited is not None:
                            sync_ends[waited] = timestamp()
                    elif role == COPY and entry.api.synchronous and get_ident() not in exiting:
                        exiting[get_ident()] = timestamp()
                    if is_runtime or get_ident() not in outer:  # the outermost call's exit: the wait's work is done
                        if role == SYNC:
                            ended = sync_ends.get(corr)
                            if ended is not None:  # a nested driver call sharing the id is overwritten here
                                sync_exits[corr] = timestamp() - ended
                        elif role == COPY and exiting:
                            began = exiting.pop(get_ident(), None)
                            if began is not None:
                                copy_exits[corr] = timestamp() - began
                    if is_runtime:
                        outer.pop(get_ident(), None)
                    if role == LAUNCH and sampler is not None and sampler.full and (
                            is_runtime or get_ident() not in outer):  # a driver launch inside a runtime one: at its end
                        sampler.close()
                    if fingerprints:
                        on_exit(entry.api, corr, result)
                    return
                api = entry.api
                tid = get_ident()
                threads.add(tid)
                if role == COPY:
                    copy_threads[corr] = tid
                if role != LAUNCH and sampler is not None and not sampler.open:  # before `outer` is read: may clear it
                    sampler.tick()
                nested = False  # a driver call inside a runtime call: the listeners heard of the runtime call
                if not is_runtime:
                    inside = outer.get(tid)
                    if inside is not None:
                        outer_site, outer_instr, outer_role = inside
                        if outer_role == role:  # the runtime call around it has the site
                            if corr not in calls:  # the two may share one correlation id: keep the outer's arguments
                                calls[corr] = (api, outer_site, outer_instr, None, None, None, None, 0)
                            return
                        nested = True
                if role == LAUNCH and sampler is not None:
                    sampler.seen()
                try:
                    frame = getframe(1)
                except ValueError:
                    frame = None
                site, instr = site_of(frame)
                if is_runtime:
                    outer[tid] = (site, instr, role)
                if pending:
                    waiting = pending.get(tid)
                    if waiting is not None:
                        _, _, _, waiting_instr = waiting
                        if role == SYNC and instr is not None and waiting_instr == instr:
                            awaiting[tid] = corr
                        else:  # the program ran on: the bytes may have changed since
                            del pending[tid]
                calls[corr] = (api, site, instr, None, None, None, None, 0)  # kept if the block is unreadable
                copy = entry.copy
                if copy is None or not params:
                    if listeners.fns and (role == SYNC or role == COPY) and not nested:
                        listeners.call(api, frame)
                    if role == SYNC and not nested:  # last: the host's wait starts as this callback returns
                        in_sync[tid] = corr
                        calls[corr] = (api, site, instr, None, None, None, None, timestamp())
                    return
                dst, src, count, direction = copy(params)
                calls[corr] = (api, site, instr, direction, dst if direction != "h2d" else None,
                               src if direction != "d2h" else None, count,
                               timestamp() if direction != "h2d" else 0)
                if listeners.fns and not nested:  # a transfer guard: told while the call's Python line is on the stack
                    listeners.call(api, frame, direction, count, dst, src)
            except Exception as exc:
                errors("in a CUDA API callback", exc)

        def on_exit(api: Api, corr: int, result: int) -> None:
            if api.role == COPY:
                filed = calls.get(corr)
                if filed is None or not filed[COUNT] or api.layout is None or not api.layout.flat:
                    return
                direction = filed[DIRECTION]
                host = filed[SRC] if direction == "h2d" else filed[DST] if direction == "d2h" else None
                if not host or not _succeeded(result):
                    return
                if direction == "h2d":
                    # still inside the call: the program cannot have touched the source since it began
                    late[corr] = digest(host, filed[COUNT])
                elif api.synchronous:
                    late[corr] = digest(host, filed[COUNT])
                else:
                    pending[get_ident()] = (corr, host, filed[COUNT], filed[INSTR])
            elif api.role == SYNC and awaiting:
                tid = get_ident()
                if awaiting.get(tid) == corr:
                    del awaiting[tid]
                    d2h = pending.pop(tid, None)
                    if d2h is not None and _succeeded(result):
                        d2h_corr, d2h_host, d2h_count, _ = d2h
                        late[d2h_corr] = digest(d2h_host, d2h_count)

        return on_api


def _succeeded(result: int) -> bool:
    """Whether the call returned success (its CUresult/cudaError_t, readable on exit); unknown counts as failure."""
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

