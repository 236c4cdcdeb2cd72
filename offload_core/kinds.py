"""The kinds of event and the modes: one vocabulary for offload_core's events, the profiler's records and the catalog.

An operation offload_core reports (`events.Event.kind`), a record in a
trace (`profiler.trace.records.Record.kind`, from any source of events)
and the copy direction a rule or an API entry talks about are the same
words, so they are defined once, as `Literal` types a type checker can
hold comparisons to, with the tuples of their values for validation.
Like `offload_core.sites`, this module imports nothing, so the linter and
the profiler use it without the runtime.
"""

from __future__ import annotations

from typing import Final, Literal, get_args

#: what an event (and a trace record) reports. The last three come from sources other than offload_core's
#: own operations (CUPTI, torch.distributed): a device-to-device copy (on one device or between peers), a
#: memset, and a collective operation of a distributed job; they are appended, so that older codes keep
#: their meaning in trace files
Kind = Literal["h2d", "d2h", "alloc", "free", "launch", "sync", "region_enter", "region_exit", "d2d", "memset",
               "collective"]
KINDS: Final[tuple[Kind, ...]] = get_args(Kind)

#: the kinds that copy between host and device
Direction = Literal["h2d", "d2h"]
COPY_KINDS: Final[tuple[Direction, ...]] = get_args(Direction)

#: the two paths a program runs on (`offload_core.set_mode`), which events and traces record
Mode = Literal["naive", "batched"]
MODES: Final[tuple[Mode, ...]] = get_args(Mode)
