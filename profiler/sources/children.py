"""Recording the target's child processes: every process records itself, into its own part.

`offload-prof run` runs the target in its own process, so its events are
recorded there; a child process (multiprocessing with any start method, a
DataLoader worker, `subprocess.run([sys.executable, ...])`) is another
interpreter, or a fork that no longer shares the recorder's memory. Each
one therefore records itself and appends to a part file of its own as it
runs (`parts`), and the target's process merges the parts when the run
ends (`merge`):

* **Fresh interpreters** find `startup/sitecustomize.py` first on
  `PYTHONPATH` and read `OFFLOAD_PROF_CHILDREN`, both set by `run` for the
  target and inherited by everything it starts. The start-up hook only
  arms a post-import hook (`PostImport`): recording begins when the child
  imports offload_core (`--source offload`) or a CUDA library (`--source
  cupti`), so the resource tracker, a `git` call or any child that never
  touches a GPU library records nothing and writes nothing.
* **Forks** (`os.fork`, multiprocessing's fork and forkserver start
  methods) run `os.register_at_fork`'s child hook: the copy of the
  parent's recorder is dropped and the child starts its own part.
* **Ends.** Normal exits write the part's end from `atexit`. Nothing
  Python-level runs after `os._exit()` (every multiprocessing child ends
  that way) or a SIGKILL, so offload_core's events are appended to the
  part by a flusher thread every `FLUSH_INTERVAL_S` while the child runs,
  and `os._exit` is wrapped while recording so that the rest, and the end,
  are written first. A killed child leaves what it recorded up to its
  last flush.
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
  not Python but names a CUDA library in its file (`may_use_cuda`; a
  `uname` or `git` call is no GPU work). Each leaves a note in the run's
  folder.

Nothing here may raise into the program: a failure to record a child is
a note on stderr and that child goes unrecorded.
"""

from __future__ import annotations

import atexit
import importlib.abc
import importlib.machinery
import importlib.util
import inspect
import json
import os
import re
import shlex
import sys
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from time import perf_counter_ns
from types import ModuleType
from typing import Any, Callable, Literal, Sequence

from .parts import End, Hello, PartWriter, Row, Unrecorded, write_unrecorded

#: the variable `run` sets for the target; every process that inherits it records itself
ENV = "OFFLOAD_PROF_CHILDREN"
#: the folder `PYTHONPATH` gets, holding the start-up hook
STARTUP = Path(__file__).resolve().parent / "startup"
#: seconds between two appends of a child's events to its part
FLUSH_INTERVAL_S = 0.2
#: top-level packages whose import starts a CUPTI recording in a child
CUDA_LIBRARIES = ("cupy", "cupyx", "torch", "numba", "jax", "jaxlib", "cuda", "tensorflow")
Source = Literal["offload", "cupti"]


@dataclass(frozen=True)
class Settings:
    """What a child needs to record itself: the run's folder, the source, fingerprints, where profiler lives."""

    folder: str
    source: Source
    fingerprints: bool
    root: str
    #: every launch's call site (CUPTI) rather than a sample (`run --every-launch`)
    every_launch: bool = False

    def encode(self) -> str:
        return json.dumps({"folder": self.folder, "source": self.source, "fingerprints": self.fingerprints,
                           "root": self.root, "every_launch": self.every_launch})

    @classmethod
    def decode(cls, text: str) -> Settings:
        data = json.loads(text)
        if data.get("source") not in ("offload", "cupti"):
            raise ValueError(f"unknown source {data.get('source')!r}")
        return cls(str(data["folder"]), data["source"], bool(data["fingerprints"]), str(data["root"]),
                   bool(data.get("every_launch", False)))


# ------------------------------------------------------------------ what a child records
class EventPart:
    """offload_core's events of this process, appended to its part every `FLUSH_INTERVAL_S` and at its end."""

    def __init__(self, settings: Settings, start: Literal["fork", "exec"]) -> None:
        from offload_core import events

        self._events = events
        self.writer = PartWriter(settings.folder, lambda: _hello(start))
        self.pending: list[Any] = []
        self.lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._stop = threading.Event()
        self._fn = self.on_event
        self._unsubscribe = events.subscribe(self._fn, fingerprints=settings.fingerprints, rows=True)

    def on_event(self, event: Any) -> None:
        self.pending.append(event)
        if self._thread is None:
            self._thread = threading.Thread(target=self._loop, name="offload-prof-part", daemon=True)
            self._thread.start()

    def _loop(self) -> None:
        while not self._stop.wait(FLUSH_INTERVAL_S):
            self.flush()

    def flush(self) -> None:
        with self.lock:
            n = len(self.pending)
            if not n:
                return
            batch = self.pending[:n]
            del self.pending[:n]
            self.writer.write("records", event_rows(batch))

    def end(self, how: Literal["exit", "os._exit", "exec"], code: int | None) -> None:
        self._stop.set()
        try:
            self._events.flush()  # events still waiting for device timings
        finally:
            self._events.BUS.drop(self._fn)
            self.flush()
            if self.writer.path is not None:  # a child that recorded nothing writes nothing
                self.writer.write("end", End(how, code))
            self.writer.close()

    def abandon(self) -> None:
        """In a fork of this process: the parent's part is not the child's."""
        self._stop.set()
        self._events.BUS.drop(self._fn)
        self.writer.forget()
        self.pending = []


class CuptiPart:
    """A CUPTI recording of this process, written to its part when the process ends."""

    def __init__(self, settings: Settings, start: Literal["fork", "exec"]) -> None:
        from .cupti import CuptiRecorder

        self.recorder = CuptiRecorder(fingerprints=settings.fingerprints,
                                      launch_sites="all" if settings.every_launch else "sampled").start()
        self.writer = PartWriter(settings.folder, lambda: _hello(start))
        self.writer.write("records", [])  # the part exists from now on, so a child that dies is known
        self.lock = threading.Lock()

    def flush(self) -> None:
        """CUPTI's records are decoded once, at the end."""

    def end(self, how: Literal["exit", "os._exit", "exec"], code: int | None) -> None:
        self.recorder.stop()
        run = self.recorder.run()
        origin = self.recorder.origin_ns()
        rows: list[Row] = [(r.kind, r.start_ns + origin, r.duration_ns, r.nbytes, r.pinned, r.kernel, r.launch, r.param,
                            r.array, None if r.site is None else (r.site.file, r.site.line, r.site.function),
                            r.region, r.mode, r.fingerprint) for r in run.records]
        self.writer.write("records", rows)
        self.writer.write("end", End(how, code))
        self.writer.close()

    def abandon(self) -> None:
        self.writer.forget()


def event_rows(batch: Sequence[Any]) -> list[Row]:
    """offload_core's event rows as part rows (`Record`'s field order): absolute times, call sites as tuples."""
    out: list[Row] = []
    for kind, nbytes, pinned, start, duration, kernel, launch, param, array, cs, mode, region, fp in batch:
        out.append((kind, start, duration, nbytes, pinned, kernel, launch, param, array,
                    None if cs is None else (cs.file, cs.line, cs.function), region, mode, fp))
    return out


def _hello(start: Literal["fork", "exec"]) -> Hello:
    name = ""
    mp = sys.modules.get("multiprocessing")
    if mp is not None:
        try:
            name = mp.current_process().name
        except Exception:
            name = ""
    # a fork's command line is its parent's; sys.argv is the target's there, not the profiler's
    argv = tuple(sys.argv) if start == "fork" else _argv()
    return Hello(os.getpid(), os.getppid(), start, argv, "" if name == "MainProcess" else name)


# ------------------------------------------------------------------ imports that start a recording
class PostImport(importlib.abc.MetaPathFinder):
    """Calls `then(name)` once, right after the first of `names` (top-level packages) has been imported.

    The finder only looks the module up through the other finders and
    wraps its loader; the callback runs after the module's own code, so
    the callback may import it (and its submodules) freely.
    """

    def __init__(self, names: Sequence[str], then: Callable[[str], None]) -> None:
        self.names = frozenset(names)
        self.then = then
        self.fired = False
        self._busy = False

    def install(self) -> PostImport:
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)
        return self

    def remove(self) -> None:
        try:
            sys.meta_path.remove(self)
        except ValueError:
            pass

    def find_spec(self, fullname: str, path: Any = None, target: ModuleType | None = None) -> Any:
        if self.fired or self._busy or fullname not in self.names:
            return None
        self._busy = True
        try:
            spec = importlib.util.find_spec(fullname)
        finally:
            self._busy = False
        if spec is None or spec.loader is None:
            return None
        spec.loader = _ThenCall(spec.loader, self, fullname)
        return spec

    def fire(self, name: str) -> None:
        if self.fired:
            return
        self.fired = True
        self.remove()
        self.then(name)


class _ThenCall(importlib.abc.Loader):
    """A loader that runs the real one, puts it back in the module's spec, then fires its `PostImport`."""

    def __init__(self, loader: Any, hook: PostImport, name: str) -> None:
        self.loader = loader
        self.hook = hook
        self.name = name

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        create = getattr(self.loader, "create_module", None)
        return create(spec) if create is not None else None

    def exec_module(self, module: ModuleType) -> None:
        module.__loader__ = self.loader
        if module.__spec__ is not None:
            module.__spec__.loader = self.loader
        self.loader.exec_module(module)
        self.hook.fire(self.name)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.loader, name)


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

    # ---- starting
    def begin_child(self, settings: Settings, start: Literal["fork", "exec"]) -> None:
        self.settings = settings
        self.start = start
        names = ("offload_core",) if settings.source == "offload" else CUDA_LIBRARIES
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
                self.part = EventPart(settings, start)
            else:
                if _in_forkserver():
                    self.deferred = True
                    return
                self.cuda_initialised = True
                self.part = CuptiPart(settings, start)
        except Exception as exc:
            self._note(Unrecorded(os.getppid(), _argv(), f"could not record: {type(exc).__name__}: {exc}",
                                  os.getpid(), start))

    def _note(self, note: Unrecorded) -> None:
        if self.settings is None:
            return
        try:
            write_unrecorded(self.settings.folder, replace(note, at_ns=perf_counter_ns()))
        except OSError as exc:
            sys.stderr.write(f"offload-prof: {note.argv and ' '.join(note.argv)}: {note.why} ({exc})\n")

    # ---- ending
    def end(self, how: Literal["exit", "os._exit", "exec"], code: int | None) -> None:
        part, self.part = self.part, None
        if part is None:
            return
        try:
            part.end(how, code)
        except Exception as exc:  # the program's exit must not fail for the profiler
            sys.stderr.write(f"offload-prof: pid {os.getpid()}: could not finish its part: {type(exc).__name__}: {exc}\n")

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
            self._note(Unrecorded(os.getppid(), _argv(), "a fork of a process that initialised CUDA, which cannot "
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
        why = unrecordable(_popen_command(args, kwargs), _popen_env(args, kwargs), settings.source)
        if why:
            self._note(Unrecorded(os.getpid(), tuple(str(a) for a in _popen_command(args, kwargs)), why,
                                  getattr(popen, "pid", None), "exec"))


HERE = _Here()
_REAL_EXIT = os._exit
_REAL_POPEN_INIT: Any = None


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


# ------------------------------------------------------------------ which children cannot record themselves
_PYTHON = re.compile(r"^python(\d+(\.\d+)?)?[a-z]?(\.exe)?$")
#: options of the interpreter that skip the start-up hook: -I (isolated), -E (ignore PYTHON*), -S (no site)
_SKIPPING = set("IES")


def unrecordable(command: Sequence[str], env: dict[str, str] | None, source: Source) -> str:
    """Why a child started with `command` and `env` (None: inherited) cannot record itself; "" if it can."""
    if not command:
        return ""
    program = os.path.basename(str(command[0]))
    python = bool(_PYTHON.match(program)) or _same_file(str(command[0]), sys.executable)
    if not python:
        if source == "cupti" and may_use_cuda(str(command[0])):
            return "not a Python program, and it may use CUDA: what it does on the GPU is not recorded"
        return ""
    if env is not None and (ENV not in env or str(STARTUP) not in env.get("PYTHONPATH", "").split(os.pathsep)):
        return "started with an environment of its own, without the profiler's variables"
    flags = _skipping_flags(command[1:])
    if flags:
        return f"started with {' '.join('-' + f for f in sorted(flags))}, which skips the profiler's start-up hook"
    return ""


#: what a program that can load the CUDA driver or runtime carries in its file (also a static cudart's dlopen name)
_CUDA_NAMES = (b"libcuda.so", b"libcudart", b"nvcuda.dll", b"cudart64")
_CUDA_SCAN_LIMIT = 1 << 30


def may_use_cuda(program: str) -> bool:
    """Whether the executable `program` (a path or a name on PATH) names a CUDA library anywhere in its file.

    A program built with nvcc links the CUDA runtime statically, which then
    opens the driver by name, so the name is in the file even where the
    dynamic section lists no CUDA library. `uname`, `git` or `ldconfig`,
    which libraries start now and then, name none.
    """
    import mmap
    import shutil

    path = program if os.sep in program else shutil.which(program)
    if not path:
        return False
    try:
        with open(path, "rb") as fh:
            size = os.fstat(fh.fileno()).st_size
            if not 0 < size <= _CUDA_SCAN_LIMIT:
                return False
            with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as data:
                return any(data.find(name) >= 0 for name in _CUDA_NAMES)
    except (OSError, ValueError):
        return False


def _skipping_flags(args: Sequence[str]) -> set[str]:
    found: set[str] = set()
    skip_next = False
    for tok in (str(a) for a in args):
        if skip_next:
            skip_next = False
            continue
        if tok in ("-c", "-m", "-", "--") or not tok.startswith("-"):
            break
        if tok.startswith("--"):
            continue
        letters = tok[1:]
        for i, ch in enumerate(letters):
            if ch in "WX":  # an option with a value: the rest of the token, or the next one
                skip_next = i == len(letters) - 1
                break
            if ch in "cm":  # -c CMD / -m MOD glued to other flags: the program starts here
                return found
            if ch in _SKIPPING:
                found.add(ch)
    return found


def _same_file(a: str, b: str) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


_POPEN_PARAMS: inspect.Signature | None = None


def _bound(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, Any]:
    global _POPEN_PARAMS
    if _POPEN_PARAMS is None:
        import subprocess

        _POPEN_PARAMS = inspect.signature(_REAL_POPEN_INIT or subprocess.Popen.__init__)
    try:
        return dict(_POPEN_PARAMS.bind(None, *args, **kwargs).arguments)
    except TypeError:
        return {}


def _popen_command(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    bound = _bound(args, kwargs)
    cmd = bound.get("args")
    if bound.get("shell"):
        text = cmd if isinstance(cmd, str) else " ".join(str(c) for c in cmd or ())
        try:
            return shlex.split(text)
        except ValueError:
            return text.split()
    if isinstance(cmd, (str, bytes, os.PathLike)):
        cmd = [os.fsdecode(cmd)]
    out = [os.fsdecode(c) if isinstance(c, (bytes, os.PathLike)) else str(c) for c in cmd or ()]
    executable = bound.get("executable")
    if executable is not None and out:
        out[0] = os.fsdecode(executable)
    return out


def _popen_env(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, str] | None:
    env = _bound(args, kwargs).get("env")
    if env is None:
        return None
    return {os.fsdecode(k): os.fsdecode(v) for k, v in dict(env).items()}


def _argv() -> tuple[str, ...]:
    return tuple(getattr(sys, "orig_argv", None) or sys.argv)


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


@dataclass(frozen=True)
class Gathered:
    """What the children left: their parts and the notes about children that could not record."""

    parts: list[Any]
    unrecorded: list[Unrecorded]


class ChildRecording:
    """The target's side: lets every child record itself while the target runs, and gathers the parts after.

    `start` makes the run's folder (private to this user), exports
    `OFFLOAD_PROF_CHILDREN` and puts the start-up hook first on
    `PYTHONPATH` for everything the target starts, and arms this process's
    fork and exit hooks; `stop` restores all of that and reads what the
    children wrote.
    """

    def __init__(self, source: Source, fingerprints: bool, every_launch: bool = False) -> None:
        self.source: Source = source
        self.fingerprints = fingerprints
        self.every_launch = every_launch
        self.folder: Path | None = None
        self._saved: dict[str, str | None] = {}
        self.started_ns = 0

    def start(self, *, on_os_exit: Callable[[int], None], detach: Callable[[], None]) -> ChildRecording:
        import tempfile

        self.folder = Path(tempfile.mkdtemp(prefix="offload-prof-run-"))
        root = str(Path(__file__).resolve().parents[2])
        settings = Settings(str(self.folder), self.source, self.fingerprints, root, self.every_launch)
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

    def stop(self) -> Gathered:
        """Stop arming children and read their parts; the folder is removed. Idempotent."""
        from .parts import read_parts, read_unrecorded

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
        gathered = Gathered(read_parts(folder), read_unrecorded(folder))
        import shutil

        shutil.rmtree(folder, ignore_errors=True)
        return gathered
