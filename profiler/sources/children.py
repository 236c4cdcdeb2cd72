"""Recording the target's child processes: every process records itself, into its own part.

`offload-prof run` runs the target in its own process, so its events are
recorded there; a child process (multiprocessing with any start method, a
DataLoader worker, `subprocess.run([sys.executable, ...])`) is another
interpreter, or a fork that no longer shares the recorder's memory. Each
one therefore records itself and appends to a part file of its own as it
runs (`parts`, `partrecorders`), and the target's process reads the parts
(`gathering`) and merges them (`merge`) when the run ends. This module
knows when a process starts, forks and ends; `handover` what the target
passes on:

* **Fresh interpreters** find `startup/sitecustomize.py` first on
  `PYTHONPATH` and read `OFFLOAD_PROF_CHILDREN`, both set by `run` for the
  target and inherited by everything it starts. The start-up hook only
  arms a post-import hook (`postimport`): recording begins when the child
  imports offload_core or PyTorch (`--source offload`; PyTorch for its
  torch.distributed calls, `collectives`) or a CUDA library (`--source
  cupti`), so the resource tracker, a `git` call or any child that never
  touches a GPU library records nothing and writes nothing.
* **Forks** (`os.fork`, multiprocessing's fork and forkserver start
  methods) run `os.register_at_fork`'s child hook: the copy of the
  parent's recorder is dropped and the child starts its own part.
* **Ends.** Normal exits write the part's end from `atexit`. Nothing
  Python-level runs after `os._exit()` (every multiprocessing child ends
  that way) or a SIGKILL, so offload_core's events are appended to the
  part by a flusher thread every 0.2 s while the child runs,
  and `os._exit` is wrapped while recording so that the rest, and the end,
  are written first. SIGTERM (`with Pool(...)`'s exit, `terminate()`)
  would end a child as abruptly, so a recording child's main thread gets
  a SIGTERM handler that writes the rest and the end (`signal`), then
  puts the handler it replaced back and sends the signal again, so that
  the child still dies of it (or hands over to the program's own handler,
  which then decides). A fork of the target does not keep `run`'s SIGTERM
  handler (which raises in the target): it gets the one the target had
  before. A child killed with SIGKILL leaves what it recorded up to its
  last flush, and is named in the trace (`Process.complete` false) and in
  a warning. A child still running when the target ends (a DataLoader's
  persistent workers) is given two flush intervals to append what it
  holds before the parts are read.
* **CUPTI** cannot follow a fork, and a fork of a process that has
  initialised CUDA cannot use CUDA (CUDA's own rule), so such forks are
  listed in the trace as not recorded, without a warning: nothing can be
  missing. A fresh child records with its own CUPTI session from its first
  import of a CUDA library to its end (not streamed: a killed CUDA child
  is named as such). The forkserver process never starts one, so that its
  forks can still use CUDA.
* **Children that cannot be recorded** are named: `subprocess.Popen` is
  wrapped while recording to spot a Python child started with an
  environment without the profiler's variables, or with `-I`, `-E` or
  `-S` (which skip the start-up hook), and, with CUPTI, a program that is
  not Python but names a CUDA library in its file (`handover`; a `uname`
  or `git` call is no GPU work). Each leaves a note in the run's folder.

Nothing here may raise into the program: a failure to record a child is
a note on stderr and that child goes unrecorded.
"""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
from dataclasses import replace
from pathlib import Path
from time import perf_counter_ns
from types import FrameType
from typing import Any, Callable, Literal

from .handover import ENV, STARTUP, Settings, Source, popen_command, popen_env, unrecordable
from .gathering import Gathered, remove_folder, settled_parts
from .partrecorders import CuptiPart, EventPart, argv
from .parts import Unrecorded, write_unrecorded
from . import collectives
from .postimport import PostImport
from .sigterm import Watch

#: top-level packages whose import starts a CUPTI recording in a child
CUDA_LIBRARIES = ("cupy", "cupyx", "torch", "numba", "jax", "jaxlib", "cuda", "tensorflow")
#: top-level packages whose import starts recording offload_core's events in a child: offload_core, and
#: PyTorch, whose torch.distributed calls reach the same bus (`collectives`) in a rank that uses no offload_core
OFFLOAD_TRIGGERS = ("offload_core", "torch")


# ------------------------------------------------------------------ this process's state
class _Here:
    """What this process does for the recording; one per process, reset in a fork's child."""

    def __init__(self) -> None:
        self.settings: Settings | None = None
        self.start: Literal["main", "fork", "exec"] = "main"
        self.part: EventPart | CuptiPart | None = None
        #: the target's process: finishes the whole run when the target calls os._exit
        self.on_os_exit: Callable[[int], None] | None = None
        #: the target's process: drops its recorder's subscription in a fork
        self.detach_main: Callable[[], None] | None = None
        #: CUDA was initialised in this process (a CUPTI recording started): its forks cannot use it
        self.cuda_initialised = False
        #: a CUPTI start put off in the forkserver process, for its forks to make
        self.deferred = False
        self.trigger: PostImport | None = None
        self.hooks = False
        #: the SIGTERM handler `_on_sigterm` replaced (a program's own, or SIG_DFL); None while it is not installed
        self.sigterm_previous: Any = None
        #: this process's part is being ended on the main thread: a SIGTERM now waits for that, then ends the process
        self.ending = False
        self.pending_signal: int | None = None
        #: the handler started since the watch last asked (`sigterm.Watch`)
        self.sigterm_seen = False
        self.watch: Watch | None = None

    # ---- starting
    def begin_child(self, settings: Settings, start: Literal["fork", "exec"]) -> None:
        self.settings = settings
        self.start = start
        names = OFFLOAD_TRIGGERS if settings.source == "offload" else CUDA_LIBRARIES
        loaded = next((n for n in names if n in sys.modules), None)
        if loaded is not None:
            self.record(loaded)
        else:
            self.trigger = PostImport(names, self.record).install()

    def record(self, name: str) -> None:
        """Start recording this process (the first GPU library was imported)."""
        settings = self.settings
        if settings is None or self.part is not None:
            return
        start = "exec" if self.start != "fork" else "fork"
        try:
            if settings.source == "offload":
                self.part = EventPart(settings.folder, settings.fingerprints, start, settings.max_records)
            else:
                if _in_forkserver():
                    self.deferred = True
                    return
                self.cuda_initialised = True
                self.part = CuptiPart(settings.folder, settings.fingerprints, settings.every_launch, start)
            self.arm_sigterm()
        except Exception as exc:
            self._note(Unrecorded(os.getppid(), argv(), f"could not record: {type(exc).__name__}: {exc}",
                                  os.getpid(), start))

    def _note(self, note: Unrecorded) -> None:
        if self.settings is None:
            return
        try:
            write_unrecorded(self.settings.folder, replace(note, at_ns=perf_counter_ns()))
        except OSError as exc:
            sys.stderr.write(f"offload-prof: {note.argv and ' '.join(note.argv)}: {note.why} ({exc})\n")

    # ---- ending
    def end(self, how: Literal["exit", "os._exit", "exec", "signal"], code: int | None) -> None:
        part, self.part = self.part, None
        if part is None:
            return
        self.ending = True
        try:
            part.end(how, code)
        except FileNotFoundError:  # the run's folder is gone: the target ended before this child, nothing reads it
            pass
        except Exception as exc:  # the program's exit must not fail for the profiler
            sys.stderr.write(f"offload-prof: pid {os.getpid()}: could not finish its part: {type(exc).__name__}: {exc}\n")
        finally:
            self.ending = False
            signum, self.pending_signal = self.pending_signal, None
            if signum is not None:  # a SIGTERM came while the part was being ended: it ends the process now
                _die_of(signum, self.sigterm_previous)

    # ---- SIGTERM
    def arm_sigterm(self) -> None:
        """Have SIGTERM write this process's records before it ends the process (a pool's workers end that way).

        Only the main thread may set a handler; a recording started on
        another thread keeps what its flusher writes (and is named if
        killed). A program that ignores SIGTERM keeps ignoring it.
        """
        if self.sigterm_previous is not None or threading.current_thread() is not threading.main_thread():
            return
        try:
            current = signal.getsignal(signal.SIGTERM)
            # a fork of the target inherits `run`'s handler, meant for the target alone: take the one before it
            current = getattr(current, "offload_prof_previous", current)
            if current is signal.SIG_IGN:
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                return
            signal.signal(signal.SIGTERM, _on_sigterm)
        except (ValueError, OSError):  # not the main interpreter, or no such signal here
            return
        self.sigterm_previous = signal.SIG_DFL if current is None else current
        try:
            self.watch = Watch.start(_sigterm_handled)
        except OSError:
            self.watch = None

    def disarm_in_fork(self) -> None:
        """In a fork's child: the parent's handler state and watch are not this process's (it arms its own)."""
        watch, self.watch = self.watch, None
        if watch is not None:
            watch.forget()
        previous, self.sigterm_previous = self.sigterm_previous, None
        try:
            if previous is not None and signal.getsignal(signal.SIGTERM) is _on_sigterm:
                signal.signal(signal.SIGTERM, previous)
        except (ValueError, OSError):
            pass
        self.sigterm_seen = False
        self.ending = False
        self.pending_signal = None

    def on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.sigterm_seen = True
        previous = self.sigterm_previous
        if self.ending:  # the main thread was interrupted while ending the part: it finishes, then ends the process
            self.pending_signal = signum
            return
        if callable(previous):  # the program's own handler decides what SIGTERM does: what was recorded goes first
            part = self.part
            if part is not None:
                try:
                    part.flush()
                except Exception:
                    pass
            previous(signum, frame)
            return
        self.end("signal", signum)
        _die_of(signum, previous)

    # ---- forks
    def before_fork(self) -> None:
        part = self.part
        if part is not None:
            part.lock.acquire()

    def after_fork_parent(self) -> None:
        part = self.part
        if part is not None:
            part.lock.release()

    def after_fork_child(self) -> None:
        settings = self.settings
        if settings is None:
            return
        self.disarm_in_fork()
        _drop_targets_sigterm()
        if self.detach_main is not None:
            try:
                self.detach_main()
            except Exception:
                pass
        self.detach_main = None
        self.on_os_exit = None
        if self.part is not None:
            self.part.abandon()
            self.part = None
        parent_had_cuda = self.cuda_initialised or (self.start == "main" and settings.source == "cupti")
        self.start = "fork"
        self.cuda_initialised = False
        if settings.source == "cupti" and parent_had_cuda:
            if self.trigger is not None:
                self.trigger.remove()
            self._note(Unrecorded(os.getppid(), argv(), "a fork of a process that initialised CUDA, which cannot "
                                  "use CUDA itself (CUPTI does not follow fork() either): nothing to record",
                                  os.getpid(), "fork", warn=False))
            return
        if settings.source == "offload" and "offload_core" in sys.modules:
            self.record("offload_core")
        elif self.deferred:
            self.deferred = False
            self.record("")

    # ---- children started with subprocess
    def popen_started(self, popen: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        settings = self.settings
        if settings is None:
            return
        command = popen_command(args, kwargs)
        why = unrecordable(command, popen_env(args, kwargs), settings.source)
        if why:
            self._note(Unrecorded(os.getpid(), tuple(command), why,
                                  getattr(popen, "pid", None), "exec"))


HERE = _Here()
_REAL_EXIT = os._exit
_REAL_POPEN_INIT: Any = None


def _drop_targets_sigterm() -> None:
    """In a fork of the target: SIGTERM as the target had it before `run` made it raise in the target."""
    if threading.current_thread() is not threading.main_thread():
        return
    try:
        current = signal.getsignal(signal.SIGTERM)
        if hasattr(current, "offload_prof_previous"):
            previous = current.offload_prof_previous  # type: ignore[union-attr]
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)
    except (ValueError, OSError):
        pass


def _sigterm_handled() -> bool:
    """For the watch: whether the handler started since last asked, or is no longer this process's handler."""
    seen, HERE.sigterm_seen = HERE.sigterm_seen, False
    try:
        return seen or signal.getsignal(signal.SIGTERM) is not _on_sigterm
    except (ValueError, OSError):
        return True


def _on_sigterm(signum: int, frame: FrameType | None) -> None:
    """A recording child's SIGTERM handler (`_Here.arm_sigterm`)."""
    HERE.on_sigterm(signum, frame)


def _die_of(signum: int, previous: Any) -> None:
    """End this process by `signum` as it would have ended unprofiled: the replaced handler back, the signal again."""
    if callable(previous):
        previous(signum, None)
        return
    signal.signal(signum, signal.SIG_DFL)
    signal.raise_signal(signum)
    _REAL_EXIT(128 + signum)  # only reached where the signal is blocked in this thread: end as the shell would say


def _os_exit(code: int) -> None:
    """`os._exit` while recording: write what this process recorded (or the whole trace, in the target's), then exit."""
    try:
        finish = HERE.on_os_exit
        HERE.on_os_exit = None
        if finish is not None:
            finish(code)
        else:
            HERE.end("os._exit", code)
    finally:
        _REAL_EXIT(code)


def _at_exit() -> None:
    HERE.end("exit", None)


def install_hooks() -> None:
    """Once per process: fork hooks, the exit hooks, the `subprocess.Popen` check (inert while not recording)."""
    if HERE.hooks:
        return
    HERE.hooks = True
    os.register_at_fork(before=HERE.before_fork, after_in_parent=HERE.after_fork_parent,
                        after_in_child=HERE.after_fork_child)
    atexit.register(_at_exit)
    os._exit = _os_exit
    _wrap_popen()
    collectives.install()


def _wrap_popen() -> None:
    global _REAL_POPEN_INIT
    import subprocess

    if _REAL_POPEN_INIT is not None:
        return
    real = _REAL_POPEN_INIT = subprocess.Popen.__init__

    def __init__(self: Any, *args: Any, **kwargs: Any) -> None:
        real(self, *args, **kwargs)
        try:
            HERE.popen_started(self, args, kwargs)
        except Exception:
            pass

    __init__.__wrapped__ = real  # type: ignore[attr-defined]
    __init__.__doc__ = real.__doc__
    subprocess.Popen.__init__ = __init__  # type: ignore[method-assign]


def _unwrap() -> None:
    """The target's process after the run: `os._exit` and `subprocess.Popen` as they were."""
    global _REAL_POPEN_INIT
    if os._exit is _os_exit:
        os._exit = _REAL_EXIT
    if _REAL_POPEN_INIT is not None:
        import subprocess

        subprocess.Popen.__init__ = _REAL_POPEN_INIT  # type: ignore[method-assign]
        _REAL_POPEN_INIT = None


def _in_forkserver() -> bool:
    """Whether this is multiprocessing's forkserver process, whose forks must still be able to use CUDA."""
    frame = sys._getframe(1)
    while frame is not None:
        code = frame.f_code
        if code.co_name == "main" and code.co_filename.endswith(os.path.join("multiprocessing", "forkserver.py")):
            return True
        frame = frame.f_back  # type: ignore[assignment]
    return False


# ------------------------------------------------------------------ the two ends
def start_child(text: str) -> None:
    """The start-up hook of a fresh interpreter: arm this process's recording (called by `startup/sitecustomize`)."""
    settings = Settings.decode(text)
    install_hooks()
    HERE.begin_child(settings, "exec")


class ChildRecording:
    """The target's side: lets every child record itself while the target runs, and gathers the parts after.

    `start` makes the run's folder (private to this user), exports
    `OFFLOAD_PROF_CHILDREN` and puts the start-up hook first on
    `PYTHONPATH` for everything the target starts, and arms this process's
    fork and exit hooks; `stop` restores all of that and reads what the
    children wrote.
    """

    def __init__(self, source: Source, fingerprints: bool, every_launch: bool = False, max_records: int = 0,
                 place: Path | None = None, prefix: str = "offload-prof-run-") -> None:
        self.source: Source = source
        self.fingerprints = fingerprints
        self.every_launch = every_launch
        #: each process keeps at most this many records (0: no cap)
        self.max_records = max_records
        #: where the run's folder is made (None: the temporary folder), and its name's start
        self.place = place
        self.prefix = prefix
        self.folder: Path | None = None
        self._saved: dict[str, str | None] = {}
        self.started_ns = 0
        self.kept: Path | None = None

    def start(self, *, on_os_exit: Callable[[int], None], detach: Callable[[], None]) -> ChildRecording:
        import tempfile

        self.folder = Path(tempfile.mkdtemp(prefix=self.prefix, dir=self.place))
        root = str(Path(__file__).resolve().parents[2])
        settings = Settings(str(self.folder), self.source, self.fingerprints, root, self.every_launch,
                            self.max_records)
        self._saved = {k: os.environ.get(k) for k in (ENV, "PYTHONPATH")}
        os.environ[ENV] = settings.encode()
        os.environ["PYTHONPATH"] = os.pathsep.join([str(STARTUP), *filter(None, [self._saved["PYTHONPATH"]])])
        HERE.settings = settings
        HERE.start = "main"
        HERE.on_os_exit = on_os_exit
        HERE.detach_main = detach
        install_hooks()
        os._exit = _os_exit
        _wrap_popen()
        self.started_ns = perf_counter_ns()
        return self

    def stop(self, keep: bool = False) -> Gathered:
        """Stop arming children and read their parts; the folder is removed unless `keep` (then `remove` it once the
        trace is written: it holds the target's own spool too). Idempotent."""
        from .parts import read_unrecorded

        HERE.settings = None
        HERE.on_os_exit = None
        HERE.detach_main = None
        if HERE.trigger is not None:
            HERE.trigger.remove()
        _unwrap()
        for key, value in self._saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self._saved = {}
        folder, self.folder = self.folder, None
        if folder is None:
            return Gathered([], [])
        gathered = Gathered(settled_parts(folder), read_unrecorded(folder))
        if keep:
            self.kept = folder
        else:
            remove_folder(folder)
        return gathered

    def remove(self) -> None:
        """Remove the folder `stop(keep=True)` left."""
        folder, self.kept = self.kept, None
        if folder is not None:
            remove_folder(folder)
