"""What a transfer guard forbids (`Rules`), what it caught (`Violation`), and the errors and warnings it raises.

These are plain values, shared by the scopes that hold them, the sources
that report to them and the pytest marker and `offload-prof run` that
summarise them, so they sit below all of those and import nothing of
theirs. A `Violation` carries the user's line (`Site`), the library call
that moved the data and the CUDA call or offload_core operation below
it, because a guard's one job is to say which line to change.
"""

from __future__ import annotations

import linecache
import os
from collections import Counter
from dataclasses import dataclass, field
from typing import Callable, Literal

from offload_core.sites import Site

from ..units import fmt_bytes, parse_size

Mode = Literal["raise", "warn", "log"]
SourceName = Literal["auto", "offload", "cupti"]
Kind = Literal["h2d", "d2h", "sync"]
MODES: tuple[str, ...] = ("raise", "warn", "log")
SOURCES: tuple[str, ...] = ("auto", "offload", "cupti")
KINDS: tuple[str, ...] = ("h2d", "d2h", "sync")
#: a D2H of at most this many bytes reads one element (complex128 is the widest scalar): a "scalar read"
SCALAR_BYTES = 16
#: how the user's lines are named where a file name means nothing to them (a notebook's cells, whose code
#: lives in temporary files): each returns the name of a site, or None to leave it to the next; see `name_sites`
SITE_NAMERS: list[Callable[[Site], str | None]] = []


def name_sites(namer: Callable[[Site], str | None]) -> Callable[[], None]:
    """Name the sites `namer` knows its own way in guard messages (`Cell In[3], line 2`); returns the undo."""
    SITE_NAMERS.append(namer)

    def undo() -> None:
        if namer in SITE_NAMERS:
            SITE_NAMERS.remove(namer)
    return undo


class TransferGuardError(RuntimeError):
    """A copy or sync that a `no_transfers` scope forbids, raised at the user's line that made it.

    `violations` holds the first one (the message's) and any the same call
    made before the exception could surface (PyTorch's `.item()` is a copy
    and a sync).
    """

    def __init__(self, message: str, violations: list[Violation]) -> None:
        super().__init__(message)
        self.violations = violations


class TransferGuardWarning(UserWarning):
    """A forbidden copy or sync under `mode="warn"`, shown at the user's line, once per line."""


class GuardSourceWarning(RuntimeWarning):
    """The guard cannot see some copies here (no CUPTI, a library's own guard is on): said once, in one line."""


@dataclass(frozen=True, slots=True)
class Rules:
    """One `no_transfers(...)` call's settings, checked once when it is made."""

    h2d: bool = True
    d2h: bool = True
    syncs: bool = False
    mode: Mode = "raise"
    min_bytes: int = 0
    allow_scalars: bool = False
    source: SourceName = "auto"

    @classmethod
    def make(cls, *, h2d: bool = True, d2h: bool = True, syncs: bool = False, mode: str = "raise",
             min_bytes: int | str = 0, allow_scalars: bool = False, source: str = "auto") -> Rules:
        """Rules from user input; `ValueError`/`TypeError` with a one-line message for a bad value."""
        for name, value in (("h2d", h2d), ("d2h", d2h), ("syncs", syncs), ("allow_scalars", allow_scalars)):
            if not isinstance(value, bool):
                raise TypeError(f"no_transfers({name}=...) takes True or False, got {value!r}")
        if mode not in MODES:
            raise ValueError(f"no_transfers(mode={mode!r}): use one of {', '.join(MODES)}")
        if source not in SOURCES:
            raise ValueError(f"no_transfers(source={source!r}): use one of {', '.join(SOURCES)}")
        if not (h2d or d2h or syncs):
            raise ValueError("no_transfers() forbids nothing: set h2d, d2h or syncs")
        size = parse_size(min_bytes, "no_transfers(min_bytes)")
        return cls(h2d, d2h, syncs, mode, size, allow_scalars, source)  # type: ignore[arg-type]

    def forbids(self, kind: str) -> bool:
        return (self.h2d and kind == "h2d") or (self.d2h and kind == "d2h") or (self.syncs and kind == "sync")

    def spec(self) -> str:
        """How the scope was asked for, as it would be written: `no_transfers(h2d=True, ...)`."""
        parts = [f"{k}={getattr(self, k)!r}" for k in ("h2d", "d2h", "syncs", "mode")]
        if self.min_bytes:
            parts.append(f"min_bytes={self.min_bytes}")
        if self.allow_scalars:
            parts.append("allow_scalars=True")
        return f"no_transfers({', '.join(parts)})"


@dataclass(frozen=True, slots=True)
class Violation:
    """One forbidden copy or sync: what, how many bytes, at which user line, by which call, seen by which source.

    `site` is None when no user frame was on the stack (a copy made by a
    library's own thread of Python code); `call` names the library call
    (`offload(daxpy) parameter y`, `cupy._creation.from_data.asarray`),
    `api` the operation below it (`cudaMemcpyAsync_v3020`, offload_core's
    event kind).
    """

    kind: str
    nbytes: int | None
    site: Site | None
    call: str
    api: str
    source: str

    def what(self) -> str:
        if self.kind == "sync":
            return "sync"
        size = "unknown size" if self.nbytes is None else fmt_bytes(self.nbytes)
        return f"{self.kind.upper()} copy of {size}"

    def where(self) -> str:
        if self.site is None:
            return "(no user line on the stack)"
        for namer in SITE_NAMERS:
            name = namer(self.site)
            if name is not None:
                return name
        return f"{_short(self.site.file)}:{self.site.line} in {self.site.function}"

    def text(self) -> str:
        """The user's source line, stripped ("" when the file cannot be read)."""
        if self.site is None:
            return ""
        return linecache.getline(self.site.file, self.site.line).strip()

    def describe(self, rules: Rules) -> str:
        """The one-line message: line, what, bytes, library call, and the scope that forbids it."""
        text = self.text()
        code = f": `{text}`" if text else ""
        by = self.call if self.call == self.api or not self.api else f"{self.call} -> {self.api}"
        return f"{self.where()}{code}: {self.what()} by {by}, forbidden by {rules.spec()}"


@dataclass(frozen=True)
class Summary:
    """The violations of a scope grouped by line and kind, with counts and bytes (the log mode's and the marker's)."""

    rules: Rules
    violations: tuple[Violation, ...] = field(default=())

    def lines(self) -> list[str]:
        counts: Counter[tuple[str, str, str]] = Counter()
        sizes: Counter[tuple[str, str, str]] = Counter()
        texts: dict[tuple[str, str, str], str] = {}
        for v in self.violations:
            key = (v.where(), v.kind, v.call)
            counts[key] += 1
            sizes[key] += v.nbytes or 0
            texts.setdefault(key, v.text())
        out = []
        for key, n in counts.items():
            where, kind, call = key
            size = "" if kind == "sync" else f" ({fmt_bytes(sizes[key])})"
            noun = "sync" if kind == "sync" else f"{kind.upper()} cop{'y' if n == 1 else 'ies'}"
            if kind == "sync" and n != 1:
                noun = "syncs"
            code = f": `{texts[key]}`" if texts[key] else ""
            out.append(f"  {where}{code}: {n} {noun}{size} by {call}")
        return out

    def describe(self) -> str:
        n = len(self.violations)
        head = f"{n} forbidden transfer{'s' if n != 1 else ''} inside {self.rules.spec()}:"
        return "\n".join([head, *self.lines()])


def _short(path: str) -> str:
    """A path relative to the current folder when it lies below it (as tracebacks are read)."""
    try:
        rel = os.path.relpath(path)
    except ValueError:
        return path
    return path if rel.startswith("..") else rel
