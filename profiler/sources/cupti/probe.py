"""Whether CUPTI tracing can run here, and if not, one line that says what is missing.

`--source cupti` needs two things a base install does not have: the
`cupti` extra (cupti-python) and an NVIDIA GPU with its driver. Both are
checked before the target starts, and every problem found is named in one
`ProfilerError` (the CLI prints it and exits 2), e.g.

    --source cupti needs the cupti extra (pip install 'offload-guard[cupti]'): No module named 'cupti';
    and an NVIDIA GPU: libcuda.so.1 not found (no NVIDIA driver; on AMD GPUs record with rocprofv3 and
    `offload-prof import-rocprof`)

The driver is asked through ctypes (`cuInit`, `cuDeviceGetName`), not
through cupti-python or CuPy, so that the GPU check also works, and says
the right thing, where the extra is missing, and so that probing creates
no CUDA context before CUPTI is listening. A CUPTI that refuses to start
(another client attached, no permission) is said the same way, in one
line with what to do (`explain`; a recording's or the guard's session).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import importlib
import sys
from importlib import metadata
from dataclasses import dataclass
from types import ModuleType
from typing import Callable

from ...errors import ProfilerError

EXTRA_HINT = "pip install 'offload-guard[cupti]'"
AMD_HINT = "on AMD GPUs record with rocprofv3 and `offload-prof import-rocprof`"
CUDA_ERROR_NO_DEVICE = 100


@dataclass(frozen=True)
class Driver:
    """What the CUDA driver said: the device name and the driver's CUDA version, or the problem."""

    device: str = ""
    version: str = ""
    problem: str = ""


def driver_library_names() -> tuple[str, ...]:
    if sys.platform.startswith("win"):
        return ("nvcuda.dll",)
    if sys.platform == "darwin":
        return ()
    return ("libcuda.so.1", "libcuda.so")


def load_driver(names: tuple[str, ...] | None = None,
                loader: Callable[[str], ctypes.CDLL] = ctypes.CDLL) -> ctypes.CDLL | None:
    for name in names if names is not None else driver_library_names():
        try:
            return loader(name)
        except OSError:
            continue
    return None


def query_driver(lib: ctypes.CDLL | None, names: tuple[str, ...] | None = None) -> Driver:
    """Initialise the driver and describe device 0; `problem` says why not."""
    names = names if names is not None else driver_library_names()
    if lib is None:
        lib_name = names[0] if names else "the CUDA driver"
        return Driver(problem=f"{lib_name} not found (no NVIDIA driver; {AMD_HINT})")
    rc = lib.cuInit(0)
    if rc == CUDA_ERROR_NO_DEVICE:
        return Driver(problem="the NVIDIA driver reports no CUDA device")
    if rc != 0:
        return Driver(problem=f"the NVIDIA driver failed to initialise (CUDA error {rc})")
    count = ctypes.c_int(0)
    if lib.cuDeviceGetCount(ctypes.byref(count)) != 0 or count.value < 1:
        return Driver(problem="the NVIDIA driver reports no CUDA device")
    device = ctypes.c_int(0)
    name = ctypes.create_string_buffer(256)
    label = "NVIDIA GPU"
    if lib.cuDeviceGet(ctypes.byref(device), 0) == 0 and lib.cuDeviceGetName(name, 256, device) == 0:
        label = name.value.decode(errors="replace") or label
    version = ctypes.c_int(0)
    text = ""
    if lib.cuDriverGetVersion(ctypes.byref(version)) == 0 and version.value:
        text = f"{version.value // 1000}.{version.value % 1000 // 10}"
    if count.value > 1:
        label = f"{label} (+{count.value - 1} more)"
    return Driver(device=label, version=text)


def import_cupti() -> tuple[ModuleType | None, str]:
    """(cupti-python's `cupti.cupti` module, "") or (None, why it cannot be imported)."""
    try:
        module = importlib.import_module("cupti.cupti")
    except ImportError as exc:
        return None, str(exc) or type(exc).__name__
    except Exception as exc:  # a broken install raises anything from its extension modules
        return None, f"{type(exc).__name__}: {exc}"
    missing = [n for n in ("activity_enable", "activity_register_callbacks", "activity_flush_all", "subscribe",
                           "enable_callback", "unsubscribe", "ActivityKind", "get_timestamp") if not hasattr(module, n)]
    if missing:
        return None, f"the installed cupti-python lacks {', '.join(missing)} (need cupti-python 12.6 or newer)"
    return module, ""


def require() -> tuple[ModuleType, Driver]:
    """cupti-python and the driver, or a `ProfilerError` naming everything that is missing."""
    module, why = import_cupti()
    driver = query_driver(load_driver())
    problems = []
    if module is None:
        problems.append(f"the cupti extra ({EXTRA_HINT}): {why}")
    if driver.problem:
        problems.append(f"an NVIDIA GPU: {driver.problem}")
    if problems:
        raise ProfilerError("--source cupti needs " + "; and ".join(problems))
    assert module is not None
    return module, driver


def version_mismatch(version: Callable[[str], str] = metadata.version) -> str:
    """What to do when cupti-python and the pip-installed libcupti (nvidia-cuda-cupti) are different releases.

    cupti-python decodes activity records with the structure layouts of
    its own CUPTI release; an older libcupti writes shorter records, which
    cannot be read. "" when both are installed as the same major.minor
    release, or when either is not a pip distribution (a toolkit's
    libcupti), where nothing can be said.
    """
    try:
        python_side, library = version("cupti-python"), version("nvidia-cuda-cupti")
    except metadata.PackageNotFoundError:
        return ""
    if python_side.split(".")[:2] == library.split(".")[:2]:
        return ""
    major_minor = ".".join(library.split(".")[:2])
    return (f"cupti-python {python_side} reads the records of CUPTI {'.'.join(python_side.split('.')[:2])}, but "
            f"libcupti is nvidia-cuda-cupti {library}: pip install 'cupti-python=={major_minor}.*' (or upgrade "
            "nvidia-cuda-cupti to match)")


def explain(cupti: ModuleType, exc: BaseException) -> str:
    """A CUPTI error as one line, with what to do for the errors a user can fix."""
    status = getattr(exc, "status", None)
    result = getattr(cupti, "Result", None)
    name = ""
    if status is not None and result is not None:
        try:
            name = result(status).name
        except (ValueError, TypeError):
            name = ""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "MULTIPLE_SUBSCRIBERS" in name or "MULTIPLE_SUBSCRIBERS" in text:
        return (f"{text} (another CUPTI client is attached: Nsight Systems/Compute, torch.profiler or another "
                f"offload-prof; run without it)")
    if "INSUFFICIENT_PRIVILEGES" in name or "INSUFFICIENT_PRIVILEGES" in text:
        return f"{text} (this user may not trace the GPU; see NVIDIA's ERR_NVGPUCTRPERM notes)"
    return text
