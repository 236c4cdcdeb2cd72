"""What `offload-prof run` hands the target's children, and which children it cannot reach.

A child records itself only if it inherits two things from the target:
`OFFLOAD_PROF_CHILDREN` (`ENV`, the encoded `Settings`: the run's folder,
the source, fingerprints, where the profiler lives) and the start-up
folder (`STARTUP`) first on `PYTHONPATH`, whose `sitecustomize` starts the
recording (`profiler.sources.children`). `unrecordable` says, from a
child's command line and environment as `subprocess.Popen` was given
them, why it will not: an environment of its own without them, an
interpreter option that skips `sitecustomize`, or (with CUPTI) a program
that is not Python but may use CUDA (`may_use_cuda`).
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shlex
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Sequence

#: the variable `run` sets for the target; every process that inherits it records itself
ENV = "OFFLOAD_PROF_CHILDREN"
#: the folder `PYTHONPATH` gets, holding the start-up hook
STARTUP = Path(__file__).resolve().parent / "startup"
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
    #: the most records a process keeps (`run --max-records`); 0: no cap
    max_records: int = 0

    def encode(self) -> str:
        return json.dumps({"folder": self.folder, "source": self.source, "fingerprints": self.fingerprints,
                           "root": self.root, "every_launch": self.every_launch, "max_records": self.max_records})

    @classmethod
    def decode(cls, text: str) -> Settings:
        data = json.loads(text)
        if data.get("source") not in ("offload", "cupti"):
            raise ValueError(f"unknown source {data.get('source')!r}")
        return cls(str(data["folder"]), data["source"], bool(data["fingerprints"]), str(data["root"]),
                   bool(data.get("every_launch", False)), int(data.get("max_records", 0)))


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

        init = subprocess.Popen.__init__
        _POPEN_PARAMS = inspect.signature(getattr(init, "__wrapped__", init))
    try:
        return dict(_POPEN_PARAMS.bind(None, *args, **kwargs).arguments)
    except TypeError:
        return {}


def popen_command(args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[str]:
    """The command line `subprocess.Popen(*args, **kwargs)` ran (a shell command split into words)."""
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


def popen_env(args: tuple[Any, ...], kwargs: dict[str, Any]) -> dict[str, str] | None:
    """The environment `subprocess.Popen(*args, **kwargs)` gave its child; None when it inherited the parent's."""
    env = _bound(args, kwargs).get("env")
    if env is None:
        return None
    return {os.fsdecode(k): os.fsdecode(v) for k, v in dict(env).items()}
