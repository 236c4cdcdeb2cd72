"""Copies a runtime made from its own threads, given the line of the user's call that asked for them.

`jaxcalls` keeps each call of JAX's copy entry points (`jax.device_put`,
`jnp.asarray`, `jnp.array`, `jax.device_get`) with its line, thread, host
times and the copies it must make; CUPTI records the copies themselves,
made later by JAX's threads, whose Python stack is not the user's. This
module joins the two before the capture is converted (`attribute`):

* **Which copies may be a call's.** A host<->device copy whose CUDA call
  was made on another thread than the user call's (the runtime's worker),
  or on the same thread inside the call (its site is the call's already),
  in the call's direction, of one of its shard sizes exactly. A copy made
  on the caller's thread outside the call (a CuPy upload beside JAX) is
  never taken.
* **Order.** Calls are matched in the order they began, copies in the
  order their CUDA calls were made (CUPTI's correlation ids), first
  expected first served, per (direction, bytes): JAX issues the transfers
  of one device in the order they were asked for. A copy cannot start on
  the device before its call began; a download (`device_get` returns only
  once the bytes are on the host) ends before its call returned, so an
  expected download that no copy met by then is given up and cannot take
  a later call's copy. Both bounds allow `SLACK_NS` for the two clocks
  (the host's `perf_counter` and CUPTI's, read together when the
  recording starts and when it ends).
* **Streams.** A call does not say which stream JAX will use, so streams
  are not matched.

A matched copy takes the call's site and Python instruction (so that a
download and the sync JAX makes for it count as one wait); the rest keep
the site their CUDA call found. Copies JAX makes on its own (constants of
a compiled function, a value printed) have no call to match and keep it
too. What is not covered: a transfer JAX splits into several copies (none
was seen; such copies keep the sync's line), an upload expected but never
made (a source JAX already held on the device in a form `jaxcalls.expected`
does not recognise), which would take the next upload of the same size in
its place, and entry points other than the four wrapped (`jax.jit` calls
with NumPy arguments upload them inside the dispatch: those copies keep
the line of the call that waits for them, or the jitted call's own line
when JAX copies on the calling thread).
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from typing import Callable, Iterable, Mapping, Sequence

from .activity import ApiCall, Capture, Copy
from .apis import COPY
from .convert import call_of
from .jaxcalls import EntryCall, entries_of

#: how far the host's clock and CUPTI's may disagree when a copy is held against a call's times (ns)
SLACK_NS = 20_000


def attribute(capture: Capture, calls: Iterable[EntryCall], threads: Mapping[int, int],
              to_cupti: Callable[[int], int]) -> Capture:
    """The capture with each copy that a user call asked for charged to that call's line.

    `threads` maps a copy call's correlation id to the thread that made
    it (`Tracer.copy_threads`); `to_cupti` turns the calls'
    `perf_counter_ns` times into CUPTI's clock (`CuptiRecorder.to_cupti`).
    """
    entries = [replace(e, start_ns=to_cupti(e.start_ns), end_ns=to_cupti(e.end_ns)) for e in entries_of(calls)]
    if not entries:
        return capture
    matched = match(entries, capture.copies, capture.calls, threads)
    if not matched:
        return capture
    updated = dict(capture.calls)
    for copy, entry in matched:
        call = call_of(capture.calls, copy)
        key = call.correlation if call is not None else copy.correlation
        if call is None:  # CUPTI heard no call for it: the user's call stands in
            call = ApiCall(key, entry.function, COPY, None)
        updated[key] = replace(call, site=entry.site, instr=entry.instr)
    return replace(capture, calls=updated)


def match(entries: Sequence[EntryCall], copies: Iterable[Copy], calls: Mapping[int, ApiCall],
          threads: Mapping[int, int]) -> list[tuple[Copy, EntryCall]]:
    """(copy, the call it is for) for every copy a call asked for (the module docstring's rules); the calls'
    times on CUPTI's clock, in the order they began."""
    # (direction, bytes) -> the calls still waiting for a copy of that shape, in the order they began
    waiting: dict[tuple[str, int], deque[EntryCall]] = {}
    for entry in entries:
        for shape in entry.copies:
            waiting.setdefault(shape, deque()).append(entry)
    out: list[tuple[Copy, EntryCall]] = []
    ordered = sorted((c for c in copies if c.direction in ("h2d", "d2h")),
                     key=lambda c: (c.runtime_correlation or c.correlation, c.correlation))
    for copy in ordered:
        queue = waiting.get((copy.direction, copy.nbytes))
        if not queue:
            continue
        while queue and copy.direction == "d2h" and copy.start > queue[0].end_ns + SLACK_NS:
            queue.popleft()  # its download should have arrived before it returned: none did
        if not queue:
            continue
        entry = queue[0]
        if copy.start < entry.start_ns - SLACK_NS:
            continue  # started before the call began: not its copy
        call = call_of(calls, copy)
        thread = threads.get(call.correlation) if call is not None else None
        if thread == entry.thread and (call is None or call.site != entry.site):
            continue  # the caller's own thread, outside the call: another library's copy
        if copy.direction == "d2h" and copy.end > entry.end_ns + SLACK_NS:
            continue
        queue.popleft()
        out.append((copy, entry))
    return out
