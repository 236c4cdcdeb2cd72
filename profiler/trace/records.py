"""What a trace holds: `Record`s of events at `Site`s, and the run's `Meta` with its `Link`.

Plain frozen values with no behaviour beyond a few derived figures, so
that every room of the profiler (sources that make them, the file format,
analyses, outputs, the TUI) can import them from the bottom of the trace
room without pulling in anything else. `Site` is offload_core's call-site
type (`offload_core.sites`) and `Kind` its event kinds (`offload_core.kinds`),
both modules that import nothing, so that an event and a record speak of
sites and kinds with one name each. The `Run` that
holds them is `profiler.trace.model`.
"""

from __future__ import annotations

import math
import os
from dataclasses import dataclass, fields
from typing import Any, Final, Literal, get_args

from offload_core.kinds import COPY_KINDS, KINDS, MODES, Direction, Kind, Mode
from offload_core.sites import Site

__all__ = [
    "COPY_KINDS", "DIRECTION_NAMES", "KINDS", "MODES", "OUTCOMES", "Direction", "Kind", "Link", "Meta", "Mode",
    "Outcome", "Process", "Rank", "Record", "Site", "relative_file",
]

DIRECTION_NAMES: Final[dict[Direction, str]] = {"h2d": "H2D", "d2h": "D2H"}
#: how a recorded program ended
Outcome = Literal["ok", "exit", "exception", "interrupted"]
OUTCOMES: Final[tuple[Outcome, ...]] = get_args(Outcome)


@dataclass(frozen=True, slots=True)
class Record:
    """One event of the run, as offload_core (or another source of events) reported it.

    `kind` is one of `KINDS`. `launch` is the index of the `offload()` call
    the event belongs to (None for a region's own copies, which carry
    `region`). `array` identifies the host buffer (its address), so the
    same number in two records means the same memory. `fingerprint` is a
    digest of the copied host bytes, present only when the run was
    recorded with fingerprints. `process` is the index, in
    `Meta.processes`, of the process that made the event (0, the target's
    own process, in a run of one process). `device` is the device an
    operation ran on and `peer` the other device of a device-to-device
    copy (the destination; equal to `device` for a copy within one
    device), where the source of events knows them (CUPTI, a
    torch.distributed call on a CUDA tensor); None otherwise. A
    `collective` record names its operation in `kernel` (`all_reduce`,
    or the NCCL kernel) and its payload in `nbytes`.
    """

    kind: Kind
    start_ns: int
    duration_ns: int
    nbytes: int = 0
    pinned: bool = False
    kernel: str | None = None
    launch: int | None = None
    param: str | None = None
    array: int | None = None
    site: Site | None = None
    region: int | None = None
    mode: str = "batched"
    fingerprint: str | None = None
    process: int = 0
    device: int | None = None
    peer: int | None = None

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns

    @property
    def is_copy(self) -> bool:
        return self.kind == "h2d" or self.kind == "d2h"


#: the field names of a record, in the order schema 1 rows and schema 2 and 3 columns store them
RECORD_FIELDS: Final[tuple[str, ...]] = tuple(f.name for f in fields(Record))
#: the fields schema 1 rows and schema 2 columns hold: every field but `process` (schema 3) and `device`, `peer` (4)
SINGLE_PROCESS_FIELDS: Final[tuple[str, ...]] = tuple(n for n in RECORD_FIELDS if n not in ("process", "device", "peer"))
#: the kinds schema 4 added (`offload_core.kinds`): older versions cannot read their codes
DEVICE_KINDS: Final[tuple[Kind, ...]] = ("d2d", "memset", "collective")


#: the largest figure a link profile may hold (GB/s or µs): anything above is a damaged file, not a link
_MOST: Final = 1e9
#: the buffers `calibrate` digests for `Link.digest_small_gbps` (a cache holds it) and `Link.digest_gbps`
DIGEST_SMALL_BYTES: Final = 4 << 20
DIGEST_LARGE_BYTES: Final = 64 << 20


@dataclass(frozen=True)
class Link:
    """Figures of a host<->device link, measured (`calibrate`) or shipped, for modelled costs.

    Bandwidths are in GB/s (10^9 bytes per second); a pinned figure is
    None where the backend could not pin (the NumPy backend). `latency_us`
    is the fixed cost of one small copy; `launch_us` and `sync_us` are the
    per-launch and per-sync overheads where known. `recorded_launch_us`
    and `recorded_event_us` are what offload_core's recorder adds to the
    host's time per recorded launch and per other recorded event, and
    `cupti_launch_us` and `cupti_event_us` what a CUPTI recording adds
    per launch and per other call (a copy, a sync: their callbacks) (the
    replay prices fixes on the program without them: an unrecorded program
    never paid them), and `digest_gbps` how fast both digest the bytes of
    a copy recorded with a fingerprint, measured on `DIGEST_LARGE_BYTES`,
    more than a cache holds, and `digest_small_gbps` on
    `DIGEST_SMALL_BYTES`, which the cache holds (a copy's bytes are
    digested right after the copy read them: 12 against 6.5 GB/s on the
    H100 machine; `digest_ns`); None where not measured.
    """

    name: str
    h2d_pageable_gbps: float
    d2h_pageable_gbps: float
    h2d_pinned_gbps: float | None = None
    d2h_pinned_gbps: float | None = None
    latency_us: float = 0.0
    launch_us: float | None = None
    sync_us: float | None = None
    recorded_launch_us: float | None = None
    recorded_event_us: float | None = None
    cupti_launch_us: float | None = None
    cupti_event_us: float | None = None
    digest_gbps: float | None = None
    source: str = ""
    digest_small_gbps: float | None = None

    def digest_ns(self, nbytes: int) -> int:
        """How long digesting `nbytes` takes, ns; 0 where the rate is unknown.

        At the small buffer's rate up to `DIGEST_SMALL_BYTES`, the large
        one's from `DIGEST_LARGE_BYTES`; in between the time per byte goes
        from one to the other in proportion to log2 of the size (what a
        cache gives: the share of bytes it holds falls as the size grows).
        """
        large = self.digest_gbps or self.digest_small_gbps
        if not large or nbytes <= 0:
            return 0
        small = self.digest_small_gbps or large
        share = min(max(math.log2(max(nbytes, 1) / DIGEST_SMALL_BYTES) / math.log2(DIGEST_LARGE_BYTES / DIGEST_SMALL_BYTES),
                        0.0), 1.0)
        return int(nbytes * ((1 - share) / small + share / large))

    def bandwidth_gbps(self, kind: Direction, pinned: bool) -> float:
        """The bandwidth a copy would see; pageable where no pinned figure is known."""
        if kind == "h2d":
            return (self.h2d_pinned_gbps if pinned and self.h2d_pinned_gbps else None) or self.h2d_pageable_gbps
        return (self.d2h_pinned_gbps if pinned and self.d2h_pinned_gbps else None) or self.d2h_pageable_gbps

    def copy_ns(self, kind: Direction, nbytes: int, pinned: bool) -> int:
        """Modelled duration of one copy: the fixed latency plus bytes over bandwidth."""
        return int(self.latency_us * 1e3 + nbytes / self.bandwidth_gbps(kind, pinned))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Link:
        """A `Link` from its dict form (a trace's `meta.link`, a profile file); `ValueError`/`TypeError` otherwise."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(data) - known)
        if unknown:
            raise ValueError(f"unknown key(s) {', '.join(unknown)}")
        for key in ("name", "h2d_pageable_gbps", "d2h_pageable_gbps"):
            if key not in data:
                raise ValueError(f"missing key '{key}'")
        if not isinstance(data["name"], str):
            raise TypeError("'name' must be a string")
        if not isinstance(data.get("source", ""), str):
            raise TypeError("'source' must be a string")
        for key in known - {"name", "source"}:
            value = data.get(key)
            if value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= _MOST:
                raise ValueError(f"'{key}' must be a number from 0 to {_MOST:g}, got {value!r}")
        for key in ("h2d_pageable_gbps", "d2h_pageable_gbps", "h2d_pinned_gbps", "d2h_pinned_gbps"):
            if data.get(key) is not None and data[key] == 0:
                raise ValueError(f"'{key}' must be positive")
        values: dict[str, Any] = {k: (float(v) if isinstance(v, (int, float)) and k not in ("name", "source") else v)
                                  for k, v in data.items()}
        return cls(**values)


#: the newest trace schema this version writes; it reads every schema from 1 up to this one. Schema 3
#: added the `process` column; schema 4 the `device` and `peer` columns and the kinds `DEVICE_KINDS`; a
#: run is written in the oldest schema that holds it (see `tracefile`)
SCHEMA_VERSION: Final = 4

#: how a process of a recorded run came to be: the target's own, a fork, or a fresh interpreter
Start = Literal["main", "fork", "exec"]


@dataclass(frozen=True)
class Rank:
    """Where a process stood in a distributed job: the launcher's rank variables and the device it used.

    torchrun (and every launcher that follows its convention) gives each
    worker `RANK` (0 to `WORLD_SIZE`-1 across the job), `LOCAL_RANK` (its
    index on its machine) and `WORLD_SIZE`; a process the worker starts
    (a DataLoader worker) inherits them and belongs to the same rank.
    `device` is the device the rank's work ran on as its source of events
    named it (`cuda:1`, offload_core's backend device), empty where it
    used none. `job` tells the ranks of one launch from those of another
    (torchrun's run id and the launcher's pid), so that traces written by
    separate processes are merged only with their own job's.
    """

    rank: int
    local_rank: int
    world_size: int
    device: str = ""
    job: str = ""

    def label(self) -> str:
        """`rank 1/2` and the device, for headings."""
        return f"rank {self.rank}/{self.world_size}" + (f" on {self.device}" if self.device else "")


@dataclass(frozen=True)
class Process:
    """One process of a recorded run: the target's own (index 0) or a child it started.

    `pid` is None for a child seen only as it was started (a program
    run with an environment that drops the profiler's variables), whose
    pid the profiler never learnt. `parent` is the parent's pid. `start` says how the process began:
    `main` (the target, run in the profiler's process), `fork` (a copy
    of its parent: `os.fork`, multiprocessing's fork and forkserver start
    methods) or `exec` (a fresh Python interpreter: `subprocess`,
    multiprocessing's spawn). `recorded` is False for a child the
    profiler saw start but could not record (`note` says why); records
    only ever point at recorded processes. `note` also says how a child
    ended when that was not a normal exit (`os._exit(3)`, no end at all
    for one that was killed). `name` is what the process called itself
    (multiprocessing's process name, `Process-1`), where it had one: a
    fork's command line is its parent's. `rank` is set for a process of a
    distributed job (`Rank`): a job is the processes of one trace grouped
    by rank (`profiler.trace.job`). `complete` is False for a child that
    ended before it wrote all it recorded (killed with SIGKILL, or by a
    handler that skipped Python's own exit: `note` says which), whose
    records in the trace may therefore be fewer than it made.
    """

    pid: int | None
    parent: int | None = None
    start: Start = "main"
    argv: tuple[str, ...] = ()
    recorded: bool = True
    note: str = ""
    name: str = ""
    #: the process's place in a distributed job (`Rank`), None outside one
    rank: Rank | None = None
    #: False: the process ended before writing all it recorded; its counts in the trace may be short
    complete: bool = True

    def label(self) -> str:
        """A short name for the process: its pid and what it ran."""
        what = " ".join(self.argv)
        if len(what) > 60:
            what = what[:57] + "..."
        who = f"pid {self.pid}" if self.pid is not None else "a child"
        where = f" {self.rank.label()}" if self.rank is not None else ""
        return who + where + (f" {self.name}" if self.name else "") + (f" ({what})" if what else "")


@dataclass(frozen=True)
class Meta:
    """What ran, where, and how it ended.

    `command` is the profiler's own command line, `argv` the target's.
    `mode` is the offload_core mode the run started in (records carry the
    mode of each event, since a program may switch). `outcome` is `ok`,
    `exit` (SystemExit), `exception` or `interrupted`; `exit_code` is what
    the run passed on. `link` holds the figures the run was recorded with
    (a calibration of this machine), if any. `fingerprints` says whether
    copy records carry content digests. `wall_samples_ns` holds the wall
    time of every repeat when the run was recorded several times over (the
    demo), in the order they ran; `wall_ns` is then their median and the
    records are that repeat's. `processes` are the processes the run saw
    (`Record.process` indexes it; empty in traces recorded before schema
    3, which hold one process). `estimated` names the record fields that
    are estimates rather than measurements for some records, as
    `kind.field` (`launch.duration_ns` when a GPU launch's device time was
    sampled, `launch.site` when CUPTI sampled launch call sites); every
    other figure was measured. `dropped` counts the records the run made
    past `offload-prof run --max-records` and did not keep (the trace
    holds the first ones of each process). `exits_ns` holds what the CUPTI
    tracer timed of its own work after a host wait ended, as the medians
    over the run of (a host sync's, a synchronous copy's) exit callbacks
    (ns; 0 where nothing was timed): the replay sets that much aside after
    each such wait rather than a share of the link's calibrated average.
    """

    backend: str
    device: str
    mode: str
    started_at: str
    wall_ns: int
    schema: int = SCHEMA_VERSION
    tool_version: str = ""
    command: tuple[str, ...] = ()
    argv: tuple[str, ...] = ()
    cwd: str = ""
    python: str = ""
    host: str = ""
    fingerprints: bool = False
    outcome: Outcome = "ok"
    exit_code: int = 0
    link: Link | None = None
    wall_samples_ns: tuple[int, ...] = ()
    processes: tuple[Process, ...] = ()
    estimated: tuple[str, ...] = ()
    dropped: int = 0
    exits_ns: tuple[int, int] = (0, 0)


def relative_file(file: str, cwd: str) -> str:
    """`file` relative to `cwd` with `/` separators when it lies inside it, else unchanged.

    Reports print sites this way, and the gate keys them this way, so that
    a baseline recorded in one checkout matches a run in another.
    """
    if not cwd or not os.path.isabs(file):
        return file.replace(os.sep, "/")
    try:
        rel = os.path.relpath(file, cwd)
    except ValueError:  # another drive on Windows
        return file
    if rel.startswith(".."):
        return file.replace(os.sep, "/")
    return rel.replace(os.sep, "/")
