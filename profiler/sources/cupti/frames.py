"""Which Python frame issued a CUDA call: the first one outside the GPU libraries.

A CUPTI callback runs on the thread that made the CUDA call, with that
thread's Python stack intact: `cp.asarray(x)` shows up as CuPy's Python
frames on top of the user's line. The user's line is the call site the
trace names, so the walk skips frames whose code lives in a library
folder (CuPy, PyTorch, Numba, NumPy, cuda-python, cupti-python, and
offload_core and this profiler themselves; offload_core's suite counts as
user code, as its events do).

The walk runs inside every callback, so it is kept cheap: library-ness is
decided once per file and cached, and a frame is only touched for
its code, line and instruction offset. Threads without Python frames
(PyTorch's autograd workers launch the backward kernels from C++) borrow
the main thread's stack: the main thread is then waiting in the call that
started the work (`loss.backward()`), which is the line to blame.
"""

from __future__ import annotations

import importlib.util
import os
import sys
import threading
from types import CodeType, FrameType
from typing import Iterable

#: packages whose frames are never a call site
LIBRARIES = ("cupy", "cupyx", "cupy_backends", "torch", "numba", "numba_cuda", "llvmlite", "numpy", "cuda",
             "cupti", "fastrlock", "triton", "jax", "jaxlib", "profiler", "offload_core")
#: a user frame: (file, line, function), and an instruction key telling two calls of one statement apart
SiteKey = tuple[str, int, str]
Instr = tuple[int, int]


def library_folders(names: Iterable[str] = LIBRARIES) -> tuple[str, ...]:
    """Install folders (with a trailing separator) of the named packages that exist, found without importing them.

    The standard library's thread machinery is added too: a worker thread a
    library started (PyTorch's pin-memory thread) has only library frames
    above `threading.py`, and should borrow the main thread's site.
    """
    out: list[str] = [os.path.abspath(threading.__file__),
                      os.path.join(os.path.dirname(os.path.abspath(threading.__file__)), "concurrent", "futures", "")]
    for name in names:
        try:
            spec = importlib.util.find_spec(name)
        except (ImportError, ValueError):
            continue
        if spec is None:
            continue
        for folder in spec.submodule_search_locations or ():
            out.append(os.path.join(os.path.abspath(folder), ""))
    return tuple(dict.fromkeys(out))


class FrameFilter:
    """Finds the user frame of the current thread (or of the main thread) below a callback."""

    def __init__(self, folders: Iterable[str] | None = None, keep: Iterable[str] = ()) -> None:
        self.folders = tuple(folders) if folders is not None else library_folders()
        #: folders inside a library that still count as user code (offload_core's suite drivers)
        self.keep = tuple(keep) if keep else _default_keep(self.folders)
        self._library: dict[str, bool] = {}
        self._main = threading.main_thread().ident

    def is_library(self, code: CodeType) -> bool:
        # keyed by file name: equal code objects of two files compare equal, and names are interned
        file = code.co_filename
        known = self._library.get(file)
        if known is None:
            known = file.startswith("<frozen ") or (file.startswith(self.folders) and not file.startswith(self.keep))
            self._library[file] = known
        return known

    def user_frame(self, frame: FrameType | None) -> FrameType | None:
        """The first non-library frame from `frame` outwards; the main thread's if this thread has none."""
        library = self._library
        f = frame
        while f is not None:
            code = f.f_code
            lib = library.get(code.co_filename)
            if lib is None:
                lib = self.is_library(code)
            if not lib:
                return f
            f = f.f_back
        if threading.get_ident() == self._main:
            return None
        main = sys._current_frames().get(self._main) if self._main is not None else None
        f = main
        while f is not None:
            if not self.is_library(f.f_code):
                return f
            f = f.f_back
        return None

    def site(self, frame: FrameType | None) -> tuple[SiteKey | None, Instr | None]:
        """(file, line, function) of the user frame and its (frame id, instruction offset)."""
        f = self.user_frame(frame)
        if f is None:
            return None, None
        code = f.f_code
        return (code.co_filename, f.f_lineno, code.co_name), (id(f), f.f_lasti)


def _default_keep(folders: tuple[str, ...]) -> tuple[str, ...]:
    keep = []
    for folder in folders:
        if folder.rstrip(os.sep).endswith(os.sep + "offload_core"):
            keep.append(os.path.join(folder, "suite", ""))
    return tuple(keep)
