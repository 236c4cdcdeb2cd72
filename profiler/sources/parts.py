"""Parts: what one process of a recorded run wrote, one file per process, appended to as it goes.

A run whose target starts child processes is recorded by every process
for itself (`children`), and no process can count on running any Python
at its end: a child killed with SIGKILL runs nothing, one that calls
`os._exit()` (every multiprocessing child does) skips `atexit`. So each
process appends what it recorded to its own part file while it runs, in
self-contained chunks, and the target's process reads every part when the
run ends (`read_parts`) and merges them into one trace (`merge`).

A chunk is a 4-byte length and a pickle of `(tag, payload)`, written with
one `os.write` on a file opened for appending: a process killed in the
middle of a write leaves a short last chunk, which the reader drops, and
everything before it stands. Tags: `hello` (who the process is), `records`
(a batch of record rows), `rank` (its place in a distributed job, again
at its end, once the device it used is known) and `end` (how it ended). Pickle is safe here
because the folder is made by `offload-prof run` for this run alone
(mode 0700) and only this user's processes write into it.

Record rows are plain tuples in `Record`'s field order, with times on
the host's `perf_counter_ns` clock (which all processes of one machine
share) and the call site as a `(file, line, function)` tuple; the merge
makes them relative to the run's start and interns the sites.
"""

from __future__ import annotations

import os
import pickle
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator, Literal

from ..trace.records import Rank
#: one record of a part: Record's fields in order up to `fingerprint` (then, from a CUPTI part, `device` and
#: `peer`), `start_ns` absolute, `site` a (file, line, function) tuple
Row = tuple[Any, ...]
Tag = Literal["hello", "records", "rank", "end", "meta", "dropped"]
_LENGTH = struct.Struct("<I")
PART_SUFFIX = ".part"
UNRECORDED_SUFFIX = ".unrecorded"


@dataclass(frozen=True)
class Hello:
    """Who wrote a part: pid, parent pid, how the process began, its command line, its name (multiprocessing's) and rank."""

    pid: int
    parent: int
    start: Literal["fork", "exec"]
    argv: tuple[str, ...]
    name: str = ""
    rank: Rank | None = None


@dataclass(frozen=True)
class End:
    """How a process ended: `exit` (normal interpreter exit), `os._exit`, `exec` (replaced by another program), or
    `signal` (SIGTERM: it wrote its records, then died of the signal; `code` is the signal's number).

    `code` is None where the process could not know it (`atexit` does not see the status `sys.exit` passes on).
    """

    how: Literal["exit", "os._exit", "exec", "signal"]
    code: int | None = None
    #: records the process made past `run --max-records` and did not keep
    dropped: int = 0


@dataclass(frozen=True)
class Part:
    """Everything one process wrote: who it was, its records in issue order, and its end if it got there."""

    path: Path
    hello: Hello
    rows: tuple[Row, ...] = ()
    end: End | None = None
    #: bytes at the end of the file that did not form a whole chunk (the process died while writing)
    torn: int = 0
    #: the process's rank as it said last (a `rank` chunk at its end names the device), else as its hello said
    rank: Rank | None = None
    #: its process was still running when the part was read (the target ended first): no end is no loss
    running: bool = False
    #: records past `run --max-records` it did not keep, as its last `dropped` chunk (or its end) counted them
    dropped: int = 0

    @property
    def complete(self) -> bool:
        """Whether the part holds all its process recorded: it ended normally or is still running, and no write was torn."""
        return (self.end is not None or self.running) and not self.torn


class PartWriter:
    """Appends chunks to one process's part file; created lazily, so a process that records nothing writes nothing.

    `hello` is called when the file is created, so that it describes the
    process as it is by then (a multiprocessing child has its name only
    once its bootstrap ran, after the fork that started its recording).
    """

    def __init__(self, folder: str | os.PathLike[str], hello: Callable[[], Hello]) -> None:
        self.folder = Path(folder)
        self.hello = hello
        self._fd: int | None = None
        self.path: Path | None = None

    def write(self, tag: Tag, payload: Any) -> None:
        fd = self._open()
        os.write(fd, encode_chunk(tag, payload))

    def _open(self) -> int:
        if self._fd is None:
            hello = self.hello()
            # pid and a counter: a pid the system hands out again (or a process that exec'd) gets its own file
            for n in range(1000):
                path = self.folder / f"{hello.pid}-{n}{PART_SUFFIX}"
                try:
                    self._fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_EXCL, 0o600)
                except FileExistsError:
                    continue
                self.path = path
                break
            else:  # pragma: no cover - a thousand parts of one pid
                raise OSError(f"no free part file name for pid {hello.pid} in {self.folder}")
            data = pickle.dumps(("hello", hello), protocol=pickle.HIGHEST_PROTOCOL)
            os.write(self._fd, _LENGTH.pack(len(data)) + data)
        return self._fd

    def close(self) -> None:
        """Close the file; `forget` in a forked child, whose descriptor is its parent's."""
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
            self._fd = None

    def forget(self) -> None:
        """Drop the descriptor without closing a file this process does not own (after a fork)."""
        if self._fd is not None:
            try:
                os.close(self._fd)  # the child's copy of the descriptor; the parent's stays open
            except OSError:
                pass
        self._fd = None
        self.path = None


def encode_chunk(tag: Tag, payload: Any) -> bytes:
    """One chunk: its length, then the pickle of `(tag, payload)`, to be written with one `os.write`."""
    data = pickle.dumps((tag, payload), protocol=pickle.HIGHEST_PROTOCOL)
    return _LENGTH.pack(len(data)) + data


def read_chunks(path: str | os.PathLike[str]) -> Iterator[tuple[Tag, Any] | int]:
    """The chunks of a part file read one at a time (a spool of 10^6 records is never in memory whole), then the
    number of trailing bytes that form no whole chunk (if any)."""
    with open(path, "rb") as fh:
        while True:
            head = fh.read(_LENGTH.size)
            if len(head) < _LENGTH.size:
                if head:
                    yield len(head)
                return
            (n,) = _LENGTH.unpack(head)
            body = fh.read(n)
            if len(body) < n:
                yield _LENGTH.size + len(body)
                return
            try:
                yield pickle.loads(body)
            except Exception:
                yield _LENGTH.size + len(body)
                return


def chunks(raw: bytes) -> Iterator[tuple[Tag, Any] | int]:
    """The chunks of a part file's bytes, then the number of trailing bytes that form no whole chunk (if any)."""
    pos = 0
    size = len(raw)
    while pos + _LENGTH.size <= size:
        (n,) = _LENGTH.unpack_from(raw, pos)
        if pos + _LENGTH.size + n > size:
            break
        try:
            yield pickle.loads(raw[pos + _LENGTH.size: pos + _LENGTH.size + n])
        except Exception:  # a chunk cut short in a way the length did not catch: stop here
            break
        pos += _LENGTH.size + n
    if pos < size:
        yield size - pos


def read_part(path: Path) -> Part | None:
    """The part in `path`, or None when it holds no whole `hello` chunk (its process died at once)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return None
    hello: Hello | None = None
    rows: list[Row] = []
    end: End | None = None
    rank: Rank | None = None
    torn = dropped = 0
    for item in chunks(raw):
        if isinstance(item, int):
            torn = item
            break
        tag, payload = item
        if tag == "hello" and isinstance(payload, Hello):
            hello = payload
        elif tag == "records" and hello is not None:
            rows.extend(payload)
        elif tag == "rank" and isinstance(payload, Rank):
            rank = payload
        elif tag == "end" and isinstance(payload, End):
            end = payload
        elif tag == "dropped" and isinstance(payload, tuple) and payload and isinstance(payload[0], int):
            dropped = payload[0]  # (count, perf_counter_ns)
    if hello is None:
        return None
    return Part(path, hello, tuple(rows), end, torn, rank or hello.rank,
                dropped=max(dropped, end.dropped if end is not None else 0))


def read_parts(folder: str | os.PathLike[str]) -> list[Part]:
    """Every readable part in `folder`, in the order their processes started writing."""
    out = []
    for path in sorted(Path(folder).glob(f"*{PART_SUFFIX}")):
        part = read_part(path)
        if part is not None:
            out.append(part)
    return out


@dataclass(frozen=True)
class Unrecorded:
    """A child the profiler saw start but cannot record, noted by the process that started it.

    `warn` is False where nothing can be missing (a fork of a process that
    initialised CUDA cannot use CUDA), so the child is listed in the
    trace's metadata without a warning.
    """

    parent: int
    argv: tuple[str, ...]
    why: str
    pid: int | None = None
    start: Literal["fork", "exec"] = "exec"
    warn: bool = True
    #: when it was noted (`perf_counter_ns`), to list children in the order they started
    at_ns: int = 0


def write_unrecorded(folder: str | os.PathLike[str], note: Unrecorded) -> None:
    """Leave `note` in the run's folder, as a small file of its own (several processes may write at once)."""
    data = pickle.dumps(note, protocol=pickle.HIGHEST_PROTOCOL)
    path = Path(folder) / f"{note.parent}-{os.urandom(6).hex()}{UNRECORDED_SUFFIX}"
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.write(fd, data)
    finally:
        os.close(fd)


def read_unrecorded(folder: str | os.PathLike[str]) -> list[Unrecorded]:
    """Every note left by `write_unrecorded`, in the order they were written."""
    out = []
    for path in sorted(Path(folder).glob(f"*{UNRECORDED_SUFFIX}")):
        try:
            note = pickle.loads(path.read_bytes())
        except Exception:
            continue
        if isinstance(note, Unrecorded):
            out.append(note)
    return sorted(out, key=lambda n: n.at_ns)

