"""The call site of a CUDA call: the first frame outside the libraries."""

from __future__ import annotations

import os
import sys
import threading

from profiler.sources.cupti.frames import FrameFilter, library_folders

from .fakelib import fakecupti

LIB = os.path.join(os.path.dirname(fakecupti.__file__), "")


def _library_function():  # type: ignore[no-untyped-def]
    """`call(fn)`: calls `fn(frame)` from inside a function whose code lives in the library folder."""
    namespace: dict[str, object] = {"sys": sys}
    code = compile("def call(fn):\n    return fn(sys._getframe())\n"
                   "def twice(fn):\n    return fn(sys._getframe()), fn(sys._getframe())\n",
                   os.path.join(LIB, "fakecupti.py"), "exec")
    exec(code, namespace)
    return namespace["call"], namespace["twice"]


through_library, twice_through_library = _library_function()


def test_library_frames_are_skipped() -> None:
    frames = FrameFilter(folders=(LIB,))
    site, instr = through_library(frames.site)  # the site
    line = sys._getframe().f_lineno - 1
    assert site == (os.path.abspath(__file__), line, "test_library_frames_are_skipped")
    assert instr is not None and instr[0] == id(sys._getframe())


def test_one_user_call_is_one_instruction_two_are_two() -> None:
    # x.item() is one call of the user's frame that makes two CUDA calls (copy, then sync)
    frames = FrameFilter(folders=(LIB,))
    first, second = twice_through_library(frames.site)
    a = through_library(frames.site)[1]
    b = through_library(frames.site)[1]
    assert first == second and first[1] is not None
    assert a != b and a != first[1], "between two calls of the user's frame the program may run"


def test_frozen_frames_are_library_and_kept_folders_are_not() -> None:
    frames = FrameFilter(folders=(LIB,), keep=(os.path.join(LIB, "keep", ""),))
    assert frames.is_library(compile("x", "<frozen importlib._bootstrap>", "eval"))
    assert not frames.is_library(compile("x", "<string>", "eval"))
    assert not frames.is_library(compile("x", os.path.join(LIB, "keep", "suite.py"), "eval"))
    assert frames.is_library(compile("x", os.path.join(LIB, "lib.py"), "eval"))


def test_a_thread_without_user_frames_borrows_the_main_threads_site() -> None:
    frames = FrameFilter(folders=(LIB, os.path.join(os.path.dirname(threading.__file__), "threading.py")))
    found: list[object] = []
    go = threading.Event()
    namespace: dict[str, object] = {"sys": sys, "found": found, "frames": frames, "go": go}
    code = compile("def work():\n    go.wait()\n    found.append(frames.site(sys._getframe()))\n",
                   os.path.join(LIB, "w.py"), "exec")
    exec(code, namespace)
    worker = threading.Thread(target=namespace["work"])  # type: ignore[arg-type]
    worker.start()
    go.set() or worker.join()  # the main thread waits here: the line to blame
    line = sys._getframe().f_lineno - 1
    (site, _), = found  # type: ignore[misc]
    assert site[:2] == (os.path.abspath(__file__), line)


def test_default_folders_name_the_gpu_libraries_and_the_profiler() -> None:
    folders = library_folders()
    here = os.path.dirname(os.path.abspath(__file__))
    assert any(f.rstrip(os.sep).endswith(os.sep + "profiler") for f in folders)
    assert any(f.rstrip(os.sep).endswith(os.sep + "numpy") for f in folders)
    assert not any(here.startswith(f) for f in folders), "tests/profiler is user code"
    frames = FrameFilter()
    assert any(k.endswith(os.path.join("offload_core", "suite", "")) for k in frames.keep)

