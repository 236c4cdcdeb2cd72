"""The guard's two sources of copies and syncs, started with the first open scope and stopped with the last.

* offload_core's events, on every backend: a watcher (`events.watch`)
  hears of each copy and sync as `offload()` or a region issues it, on the
  issuing thread, before any device timing is known.
* CUPTI, on NVIDIA, for plain CuPy, PyTorch and Numba code: a listener
  (`profiler.sources.cupti.listeners`) hears of each CUDA copy and sync
  call on entry, on the calling thread. It rides on a running recording
  (`offload-prof run --source cupti`) or starts a listening-only session.

Both find the user's frame the way the CUPTI source finds a call site (the
first frame outside the GPU libraries, offload_core and the profiler) and
hand it to `state.report`. A CUDA copy made from inside offload_core is
left to offload_core's event, so one copy is never reported twice.

`source="auto"` (the default) uses offload_core's events always and CUPTI
where it can start; where it cannot and a GPU library (CuPy, PyTorch,
JAX, Numba) is loaded, the guard cannot see that library's copies and
says so once, in one line (`GuardSourceWarning`). `source="cupti"` where
CUPTI cannot start is refused with a one-line `GuardSourceError`.

Interplay: where `jax.transfer_guard` or PyTorch's sync debug mode is
already on, that library reports its own transfers or syncs; the guard
says so once and leaves them to it (`Interplay`).
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from types import FrameType
from typing import Any, Callable

from ..errors import ProfilerError
from .records import GuardSourceWarning, Rules
from .state import report


class GuardSourceError(ProfilerError):
    """`source="cupti"` where CUPTI cannot run (no cupti extra, no NVIDIA GPU, another CUPTI client): one line."""


#: modules whose copies only CUPTI can see
GPU_LIBRARIES = ("cupy", "torch", "jax", "numba")
_OFFLOAD_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                            "offload_core", "")


class Frames:
    """The user frame below a callback, the library call it made, and whether offload_core made it."""

    def __init__(self, filter_: Any = None) -> None:
        self._filter = filter_

    @property
    def filter(self) -> Any:
        if self._filter is None:
            from ..sources.cupti.frames import FrameFilter

            self._filter = FrameFilter()
        return self._filter

    def find(self, frame: FrameType | None) -> tuple[FrameType | None, str, bool]:
        """(the user frame or None, the library function it called or "", whether offload_core's code is between)."""
        is_library = self.filter.is_library
        called: FrameType | None = None
        in_offload = False
        f = frame
        while f is not None:
            code = f.f_code
            if not is_library(code):
                return f, _name(called), in_offload
            if code.co_filename.startswith(_OFFLOAD_DIR):
                in_offload = True
            called = f
            f = f.f_back
        return None, _name(called), in_offload


def _name(frame: FrameType | None) -> str:
    if frame is None:
        return ""
    module = frame.f_globals.get("__name__", "")
    qualname = getattr(frame.f_code, "co_qualname", frame.f_code.co_name)
    return f"{module}.{qualname}" if module else qualname


FRAMES = Frames()


# ------------------------------------------------------------------ offload_core
def _on_event(row: tuple[Any, ...]) -> None:
    kind = row[0]
    if kind != "h2d" and kind != "d2h" and kind != "sync":
        return
    from .state import STACK

    if not STACK.get():  # this thread or task has no scope: the common case, one lookup
        return
    frame, _, _ = FRAMES.find(sys._getframe(1))
    kernel, param, region = row[5], row[7], row[11]
    if kernel is not None:
        call = f"offload({kernel})" + (f" parameter {param}" if param and kind != "sync" else "")
    elif region is not None:
        call = f"region copy of {param}" if param and kind != "sync" else "region"
    else:
        call = "offload_core"
    report(kind, row[1], frame, call, "", "offload_core")  # type: ignore[arg-type]


# ------------------------------------------------------------------------ CUPTI
class Interplay:
    """Which libraries guard themselves right now (checked when a scope opens)."""

    def __init__(self) -> None:
        self.jax_guard = False
        self.torch_syncs = False

    def refresh(self) -> list[str]:
        """Re-read the libraries' settings; the notes to say about them."""
        from .state import STACK

        notes = []
        if any(getattr(e, "jax", False) for e in STACK.get()):
            return notes  # the guard's own: an enclosing scope turned JAX's guard on
        self.jax_guard = _jax_guard_on()
        if self.jax_guard:
            notes.append("jax.transfer_guard is on: JAX's transfers are left to it")
        self.torch_syncs = _torch_sync_debug_on()
        if self.torch_syncs:
            notes.append("torch.cuda.set_sync_debug_mode is on: PyTorch reports syncs itself, so this guard "
                         "does not report syncs")
        return notes


INTERPLAY = Interplay()


def _jax_guard_on() -> bool:
    """Whether JAX's transfer guard is set to anything but `allow` for host<->device copies on this thread.

    `jax.config`'s attributes read the value in force on the calling
    thread: a `jax.transfer_guard(...)` context's, else the process-wide
    setting (`jax.config.update`, `JAX_TRANSFER_GUARD`). Everything is
    read through the loaded `jax` module, never by importing JAX's
    private modules, which may be another JAX than the one in use.
    """
    config = getattr(sys.modules.get("jax"), "config", None)
    if config is None:
        return False
    for name in ("jax_transfer_guard", "jax_transfer_guard_host_to_device", "jax_transfer_guard_device_to_host"):
        try:
            value = getattr(config, name)
        except Exception:  # a JAX without this setting
            continue
        if value not in (None, "allow"):
            return True
    return False


def _torch_sync_debug_on() -> bool:
    torch = sys.modules.get("torch")
    if torch is None:
        return False
    try:
        return bool(torch.cuda.is_available() and torch.cuda.get_sync_debug_mode() != 0)
    except Exception:
        return False


def _on_cuda(api: Any, direction: str | None, count: int | None, frame: FrameType | None) -> None:
    from .state import STACK

    if not STACK.get():
        return
    role = api.role
    if role == "sync":
        if INTERPLAY.torch_syncs:
            return
        kind = "sync"
    elif direction == "h2d" or direction == "d2h":
        kind = direction
    else:
        return
    user, called, in_offload = FRAMES.find(frame)
    if in_offload:  # offload_core's own event reports it, with the kernel and parameter
        return
    if INTERPLAY.jax_guard and called.startswith(("jax.", "jaxlib.")):
        return
    report(kind, count, user, called or api.name, api.name, "cupti")


class Sources:
    """The sources in use: started by the first open scope, stopped after the last; notes said once per process."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._users = 0
        self._unwatch: Callable[[], None] | None = None
        self._cupti_users = 0
        self._unlisten: Callable[[], None] | None = None
        #: why CUPTI cannot run here ("" once it has run); None until first asked
        self.cupti_problem: str | None = None
        self._said: set[str] = set()
        self._named: set[str] = set()  # the libraries a blind-spot note has named
        #: how to start CUPTI listening: returns the stop function or raises ProfilerError (tests replace it)
        self.start_cupti: Callable[[], Callable[[], None]] = _start_cupti

    def acquire(self, rules: Rules) -> tuple[bool, list[str]]:
        """Start what `rules.source` needs: (whether CUPTI listens for this scope, the interplay notes to say once).

        What the scope cannot see is `blind_spots`, asked once the scope
        knows what else guards it. Release with `release(that bool)`.
        """
        with self._lock:
            if self._users == 0:
                from offload_core import events

                self._unwatch = events.watch(_on_event)
            self._users += 1
            try:
                cupti = self._acquire_cupti(rules)
            except BaseException:
                self._release_offload()
                raise
        return cupti, INTERPLAY.refresh()

    def _acquire_cupti(self, rules: Rules) -> bool:
        if rules.source == "offload":
            return False
        if self._cupti_users == 0:
            if not self.cupti_problem:  # a machine that could not run CUPTI once is not asked again
                try:
                    self._unlisten = self.start_cupti()
                    self.cupti_problem = ""
                except ProfilerError as exc:
                    self.cupti_problem = str(exc).replace("--source cupti needs", "CUPTI needs", 1)
            if self.cupti_problem:
                if rules.source == "cupti":
                    raise GuardSourceError(f"no_transfers(source='cupti'): {self.cupti_problem}")
                return False
        self._cupti_users += 1
        return True

    def blind_spots(self, rules: Rules, cupti: bool, covered: tuple[str, ...] = ()) -> list[str]:
        """What a scope that runs without CUPTI cannot see: the GPU libraries loaded now (said at entry and exit).

        `covered` names the libraries the scope guards by other means (JAX's
        own guard, turned on by a `raise` scope). At exit too, because a
        program guarded as a whole (`OFFLOAD_GUARD`) imports its libraries
        after the scope has opened. Each library is named once per process:
        one imported after an earlier note gets a note of its own, not a
        second copy of the whole list.
        """
        if cupti or rules.source != "auto" or not self.cupti_problem:
            return []
        loaded = [m for m in GPU_LIBRARIES if m in sys.modules and m not in covered and m not in self._named]
        if not loaded:
            return []
        self._named.update(loaded)
        return [f"the transfer guard sees only offload_core's copies here, not those of {', '.join(loaded)}: "
                f"{self.cupti_problem}"]

    def release(self, cupti: bool) -> None:
        with self._lock:
            if cupti:
                self._cupti_users -= 1
                if self._cupti_users == 0 and self._unlisten is not None:
                    self._unlisten()
                    self._unlisten = None
            self._release_offload()

    def _release_offload(self) -> None:
        self._users -= 1
        if self._users == 0 and self._unwatch is not None:
            self._unwatch()
            self._unwatch = None

    def say(self, note: str) -> None:
        """A `GuardSourceWarning` with `note` at the user's line that opened the scope, once per process."""
        if note in self._said:
            return
        self._said.add(note)
        frame, _, _ = FRAMES.find(sys._getframe(1))
        if frame is None:
            warnings.warn(GuardSourceWarning(f"offload guard: {note}"), stacklevel=2)
            return
        warnings.warn_explicit(GuardSourceWarning(f"offload guard: {note}"), GuardSourceWarning,
                               frame.f_code.co_filename, frame.f_lineno, frame.f_globals.get("__name__"))

    @property
    def active(self) -> bool:
        return self._users > 0


def _start_cupti() -> Callable[[], None]:
    from ..sources.cupti.listening import listen
    from ..sources.cupti.probe import require

    cupti, _ = require()
    return listen(_on_cuda, cupti)


SOURCES = Sources()
