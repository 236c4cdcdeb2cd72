"""The target's own events streamed to a file as they come (`offload-prof run`): bounded memory, a cap, and a killed
run that keeps what was written.

`Recorder` keeps every event in a list until the run ends, then builds
its `Run` from all of them at once: 200,000 launches (1.8 million
events) held 1.3 GB, and an endless launch loop grew until the OOM
killer ended it with no trace written. `SpoolingRecorder` keeps the
same hot path (the bus calls `list.append`), but a thread of its own
(`FLUSH_INTERVAL_S`, or sooner once `BATCH_ROWS` are waiting: every
`TICK_S` it looks) moves what the list holds to a spool file in the
run's folder, in the part file's chunks (`parts`), so the list never
holds more than a fraction of a second of events. Past `max_records`
(`run --max-records`, by default sized from the memory available,
`recordcap.default_max_records`) the events are counted and dropped: the trace
keeps the first N and `meta.dropped` says how many more there were.

At the end `run()` reads the spool back one chunk at a time and builds
the trace's columns directly (`RowColumns`: NumPy arrays, no `Record`
objects), so the peak is the columns of the records kept, not a list of
tuples plus a `Record` per event. The spool's first chunk (`meta`)
describes the run, so that a run killed outright (SIGKILL, the OOM
killer) leaves a spool and children's parts that `offload-prof recover`
turns into a trace of what was written.
"""

from __future__ import annotations

import os
import stat
import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, Iterator, Sequence

from offload_core import events

from ..trace.model import Run
from ..trace.records import KINDS, Link, Meta, Outcome, Record, Site
from .meta import recorded_meta
from .parts import encode_chunk, read_chunks
from .recordcap import default_max_records
from .recorder import ESTIMATED_LAUNCH_TIMES, Recorder, SiteTable
from .sigterm import block_signals

#: the spool's name in the run's folder (not a `.part`: the children's parts are read apart from it)
SPOOL_NAME = "main.spool"
#: how often the spooling thread looks at the list, and how many events make it write at once
TICK_S = 0.05
BATCH_ROWS = 65_536
#: seconds between two writes of a quiet run's events (a killed run loses at most this much)
FLUSH_INTERVAL_S = 0.2


class SpoolingRecorder(Recorder):
    """A `Recorder` whose events go to `folder/SPOOL_NAME` as they come; at most `max_records` are kept.

    A spool that cannot be written (the disk is full, the folder was
    removed) loses nothing: the records that could not be written, and
    every later one up to the cap, are held in memory as a `Recorder`
    would hold them, and `notes()` says so.
    """

    def __init__(self, folder: Path, *, fingerprints: bool = False, max_records: int | None = None,
                 description: dict[str, Any] | None = None) -> None:
        super().__init__(fingerprints=fingerprints)
        self.path = Path(folder) / SPOOL_NAME
        self.max_records = default_max_records() if max_records is None else max_records
        #: what `recover` needs to describe the run if this process dies (command, argv, output, link)
        self.description = dict(description or {})
        self.kept = 0
        self.dropped = 0
        #: records kept but not in the spool (it could not be written: `spool_error` says why), in order
        self.unspooled: list[events.Row] = []
        self.spool_error: str | None = None
        self._fd: int | None = None
        self._write_lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._halt = threading.Event()

    # ------------------------------------------------------------ recording
    def start(self) -> SpoolingRecorder:
        with self._lock:
            super().start()
            self.kept = self.dropped = 0
            self.unspooled, self.spool_error = [], None
            self._fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND
                               | getattr(os, "O_CLOEXEC", 0), 0o600)
            os.write(self._fd, encode_chunk("meta", {
                **self.description, "pid": os.getpid(), "backend": self._backend[0], "device": self._backend[1],
                "mode": self._mode, "started_at": self._started_at, "t0": self._t0,
                "fingerprints": self.fingerprints, "max_records": self.max_records}))
            self._halt.clear()
            self._thread = threading.Thread(target=self._loop, name="offload-prof-spool", daemon=True)
            self._thread.start()
            return self

    def _loop(self) -> None:
        block_signals()
        last = time.monotonic()
        while not self._halt.wait(TICK_S):
            now = time.monotonic()
            if len(self.raw) >= BATCH_ROWS or now - last >= FLUSH_INTERVAL_S:
                self.flush()
                last = now

    def flush(self) -> None:
        """Move the events waiting in memory to the spool (those past the cap are counted, not kept)."""
        with self._write_lock:
            if self._fd is None and self.spool_error is None:
                return  # not recording into a spool (stopped, or never started)
            raw = self.raw
            n = len(raw)
            if not n:
                return
            batch = raw[:n]
            del raw[:n]  # one step: events appended meanwhile stay, after it
            room = max(self.max_records - self.kept, 0)
            if room < n:
                self.dropped += n - room
                batch = batch[:room]
            self.kept += len(batch)
            self.unspooled.extend(self._spool(batch))
            if room < n and self._fd is not None:  # the count so far and its time, for `recover` if this is killed
                self._write(encode_chunk("dropped", (self.dropped, time.perf_counter_ns())))

    def _write(self, chunk: bytes) -> bool:
        """Append one chunk to the spool; False (and the spool given up, `spool_error` set) when it fails."""
        fd = self._fd
        if fd is None:
            return False
        data = memoryview(chunk)
        try:
            while data:
                data = data[os.write(fd, data):]
        except OSError as exc:  # a chunk cut short is the spool's last: reading it back stops before it
            self.spool_error = exc.strerror or str(exc)
            self._fd = None
            try:
                os.close(fd)
            except OSError:
                pass
            return False
        return True

    def _spool(self, batch: list[events.Row]) -> list[events.Row]:
        """Append `batch` to the spool in chunks; what could not be written (none unless the spool failed)."""
        for i in range(0, len(batch), BATCH_ROWS):
            if not self._write(encode_chunk("records", batch[i:i + BATCH_ROWS])):
                return batch[i:]
        return []

    def notes(self) -> list[str]:
        """A warning when the spool could not be written (the records were then held in memory)."""
        if self.spool_error is None:
            return []
        return [f"warning: could not write the records to {self.path} as they came ({self.spool_error}); "
                "the rest were held in memory, so the run's memory grew with them"]

    def stop(self) -> None:
        with self._lock:
            was = self.active
            super().stop()  # delivers what waited for device timings, into the list
            if not was:
                return
            self._halt.set()
            if self._thread is not None and self._thread is not threading.current_thread():
                self._thread.join()
            self._thread = None
            self.flush()
            fd, self._fd = self._fd, None
            if fd is not None:
                os.close(fd)

    # ------------------------------------------------------------ the run
    def run(
        self,
        *,
        command: Sequence[str] = (),
        argv: Sequence[str] = (),
        outcome: Outcome = "ok",
        exit_code: int = 0,
        link: Link | None = None,
    ) -> Run:
        """The spooled events (and any still in memory) as a `Run` whose records are columns."""
        with self._lock:
            if self.active:
                self.flush()
            end = self._t1 or time.perf_counter_ns()
            backend, device, mode, started_at = *self._backend, self._mode, self._started_at
            estimated = self._estimated
            pending = self.unspooled[:]  # after the spool's records: kept in memory once it could not be written
        meta = recorded_meta(backend=backend, device=device, mode=mode, started_at=started_at,
                             wall_ns=end - self._t0, fingerprints=self.fingerprints, command=command, argv=argv,
                             outcome=outcome, exit_code=exit_code, link=link,
                             estimated=ESTIMATED_LAUNCH_TIMES if estimated else ())
        return spooled_run(self.path, meta, self._t0, self.dropped, pending)


def spooled_run(path: Path, meta: Meta, t0: int, dropped: int | None = None,
                pending: Sequence[events.Row] = ()) -> Run:
    """The run of a spool (`SpoolingRecorder`, or one a killed run left), with `meta`, then `pending` (records kept
    in memory); `dropped` records not kept (None: the spool's last count, for a killed run's spool)."""
    from ..trace.columns import RecordTable

    reading = _Spooled(path, pending)
    builder = RowColumns(t0)
    for rows in reading.rows():
        builder.add(rows)
        if builder.overflow:
            break
    if dropped is None:  # a killed run's: its count, and the time it was made as the least wall time
        meta = replace(meta, dropped=reading.dropped, wall_ns=max(meta.wall_ns, reading.dropped_at_ns - t0, 0))
    else:
        meta = replace(meta, dropped=dropped)
    if not builder.overflow:
        return Run(meta, RecordTable(builder.columns()))
    # an integer beyond the columns' 64 bits (or equal to their null): records, which the trace writes as rows
    sites = SiteTable()
    records = tuple(
        Record(k, start - t0, duration, nbytes, pinned, kernel, launch, param, array, sites.get(site), region, mode, fp)
        for rows in _Spooled(path, pending).rows()
        for k, nbytes, pinned, start, duration, kernel, launch, param, array, site, mode, region, fp in rows)
    return Run(meta, records)


class _Spooled:
    """A spool read back one chunk at a time; once read, `dropped` is its last count of records not kept and
    `dropped_at_ns` when it was made (`perf_counter_ns`; 0: none)."""

    def __init__(self, path: Path, pending: Sequence[events.Row]) -> None:
        self.path = path
        self.pending = pending
        self.dropped = 0
        self.dropped_at_ns = 0

    def rows(self) -> Iterator[Sequence[events.Row]]:
        """The record chunks (a last chunk cut short by a kill is left out), then `pending`."""
        if self.path.exists():
            for item in read_chunks(self.path):
                if isinstance(item, int):
                    break
                tag, payload = item
                if tag == "records":
                    yield payload
                elif tag == "dropped" and isinstance(payload, tuple) and len(payload) == 2:
                    self.dropped, self.dropped_at_ns = int(payload[0]), int(payload[1])
        if self.pending:
            yield self.pending


class RowColumns:
    """offload_core's event rows (`events.ROW_FIELDS`), added a chunk at a time, made into `Columns` at the end.

    Each chunk becomes NumPy arrays at once and its tuples are let go, so
    the peak holds the arrays of all the records and one chunk's tuples.
    Times are made relative to `t0`; call sites get their source text
    and column (`SiteTable`), once each.
    """

    def __init__(self, t0: int) -> None:
        self.t0 = t0
        self.parts: list[dict[str, Any]] = []
        self.tables: dict[str, dict[Any, int]] = {name: {} for name in ("kernel", "param", "mode", "fingerprint")}
        self.sites: dict[Site, int] = {}
        self._interned = SiteTable()
        self._kinds = {k: i for i, k in enumerate(KINDS)}
        #: a value did not fit the columns: the caller builds records instead
        self.overflow = False

    def add(self, rows: Sequence[events.Row]) -> None:
        import numpy as np

        from ..trace.columns import NULL

        if not rows:
            return
        (kind, nbytes, pinned, start, duration, kernel, launch, param, array, site, mode, region,
         fingerprint) = zip(*rows)

        def coded(name: str, values: tuple[Any, ...]) -> Any:
            table = self.tables[name]
            return np.array([-1 if v is None else table.setdefault(v, len(table)) for v in values], dtype=np.int32)

        def nullable(values: tuple[Any, ...]) -> Any:
            out = np.array([NULL if v is None else v for v in values], dtype=np.int64)
            if int((out == NULL).sum()) != values.count(None):
                raise OverflowError("a value equals the null sentinel")
            return out

        by_id: dict[int, int] = {}

        def site_code(s: Site | None) -> int:
            if s is None:
                return -1
            code = by_id.get(id(s))
            if code is None:
                full = self._interned.get(s)
                code = by_id[id(s)] = self.sites.setdefault(full, len(self.sites))  # type: ignore[arg-type]
            return code

        try:
            part = {
                "kind": np.array([self._kinds[k] for k in kind], dtype=np.uint8),
                "start_ns": np.array(start, dtype=np.int64) - self.t0,
                "duration_ns": np.array(duration, dtype=np.int64),
                "nbytes": np.array(nbytes, dtype=np.int64),
                "pinned": np.array(pinned, dtype=bool),
                "kernel": coded("kernel", kernel), "launch": nullable(launch), "param": coded("param", param),
                "array": nullable(array), "site": np.array([site_code(s) for s in site], dtype=np.int32),
                "region": nullable(region), "mode": coded("mode", mode),
                "fingerprint": coded("fingerprint", fingerprint),
            }
        except OverflowError:
            self.overflow = True
            self.parts = []
            return
        self.parts.append(part)

    def columns(self) -> Any:
        """The records as `Columns`; `OverflowError` when a value does not fit them (then `records()`)."""
        import numpy as np

        from ..trace.columns import NULL, Columns

        if self.overflow:
            raise OverflowError("an integer beyond 64 bits")

        def joined(name: str, dtype: Any) -> Any:
            arrays = [p[name] for p in self.parts]
            return np.concatenate(arrays) if arrays else np.zeros(0, dtype=dtype)

        n = sum(len(p["kind"]) for p in self.parts)
        out = Columns(
            kind=joined("kind", np.uint8), start_ns=joined("start_ns", np.int64),
            duration_ns=joined("duration_ns", np.int64), nbytes=joined("nbytes", np.int64),
            pinned=joined("pinned", bool), kernel=joined("kernel", np.int32), launch=joined("launch", np.int64),
            param=joined("param", np.int32), array=joined("array", np.int64), site=joined("site", np.int32),
            region=joined("region", np.int64), mode=joined("mode", np.int32),
            # one process, no devices: the same value everywhere, held once (read-only views of one element)
            fingerprint=joined("fingerprint", np.int32), process=np.broadcast_to(np.int32(0), (n,)),
            device=np.broadcast_to(np.int64(NULL), (n,)), peer=np.broadcast_to(np.int64(NULL), (n,)),
            kernels=tuple(self.tables["kernel"]), params=tuple(self.tables["param"]),
            modes=tuple(self.tables["mode"]), fingerprints=tuple(self.tables["fingerprint"]),
            sites=tuple(self.sites),
        )
        self.parts = []
        return out


def own_folder(folder: Path) -> bool:
    """Whether `folder` can be a run's folder of this user: a folder, not a link, owned by this user and writable by
    no one else (`mkdtemp` makes it 0700). Its files are unpickled, so a folder planted by another user beside a
    trace in a shared place is never read."""
    try:
        st = os.lstat(folder)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == os.geteuid() and not st.st_mode & 0o022


def spool_description(spool: Path) -> dict[str, Any] | None:
    """The spool's first chunk (`meta`: the run's command, argv, output, pid, clock origin), or None."""
    first = next(iter(read_chunks(spool)), None)
    if isinstance(first, tuple) and first[0] == "meta" and isinstance(first[1], dict):
        return first[1]
    return None


#: the exit status a recovered run records: the target's process was killed (SIGKILL's 128 + 9, as a shell says)
KILLED_STATUS = 137


def recoverable(folder: Path) -> dict[str, Any]:
    """The description of the run that left `folder` (its spool's first chunk); `ValueError` (one line) when
    `folder` is not the folder of an offload-prof run of this user."""
    spool = folder / SPOOL_NAME
    if not spool.is_file():
        raise ValueError(f"{folder}: not the folder of an offload-prof run (no {SPOOL_NAME} in it)")
    if not own_folder(folder):
        raise ValueError(f"{folder}: not made by an offload-prof run of this user (another user's, or writable by "
                         "others); its records are not read")
    info = spool_description(spool)
    if info is None or not isinstance(info.get("t0"), int):
        raise ValueError(f"{spool}: its first chunk does not describe the run; it cannot be recovered")
    return info


def recovered_run(folder: Path) -> Run:
    """The run a killed `offload-prof run` left in `folder` (its spool and its children's parts), with outcome
    `interrupted` and the wall time up to its last record (or its last count of records past the cap, if later);
    `ValueError` (one line) as `recoverable`."""
    from ..trace.records import Process
    from .merge import merge
    from .parts import read_parts, read_unrecorded

    info = recoverable(folder)
    spool = folder / SPOOL_NAME
    t0 = int(info["t0"])
    meta = recorded_meta(backend=str(info["backend"]), device=str(info["device"]), mode=str(info["mode"]),
                         started_at=str(info["started_at"]), wall_ns=0, fingerprints=bool(info["fingerprints"]),
                         command=tuple(info.get("command", ())), argv=tuple(info.get("argv", ())),
                         outcome="interrupted", exit_code=KILLED_STATUS, link=info.get("link"))
    own = spooled_run(spool, meta, t0)
    parts = read_parts(folder)
    main = Process(info.get("pid"), None, "main", tuple(info.get("argv", ())),
                   note="killed: recovered by `offload-prof recover` from what it had written (every 0.2 s)",
                   complete=False)
    run = merge(own, main, t0, parts, read_unrecorded(folder))
    c = run.columns
    from ..trace.columns import saturating_add

    wall = int(saturating_add(c.start_ns, c.duration_ns).max()) if len(c) else 0
    return Run(replace(run.meta, wall_ns=max(wall, run.meta.wall_ns, 0)), run.records)
