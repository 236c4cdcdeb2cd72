"""offload_core: ownership-annotated kernels whose copies follow from their annotations.

    from offload_core import kernel, In, InOut, offload, region

    @kernel
    def daxpy(y: InOut, x: In, a: float) -> None:
        y += a * x

    offload(daxpy, y, x, 2.0)          # naive: copies x and y in, y back, syncs
    with region(x, y):                 # batched: maps x and y once
        for _ in range(100):
            offload(daxpy, y, x, 2.0)  # no copies
    # y is copied back once at exit; x is not (no launch wrote it)

The backend (`OFFLOAD_BACKEND=auto|numpy|cupy`), the mode
(`OFFLOAD_MODE=batched|naive`) and every copy, launch and region edge
(`offload_core.events`) are described in docs/design.md and the README.

The package also holds what the linter and the profiler share with the
runtime but which needs none of it: the rule catalog loader
(`offload_core.catalog`), call sites (`offload_core.sites`), event kinds
(`offload_core.kinds`) and GitHub workflow annotations
(`offload_core.github`). So that `offload-lint`, which imports the
catalog, does not start the runtime and NumPy, the names below are
imported on first use (PEP 562 `__getattr__`), not when the package is.
"""

from __future__ import annotations

import importlib
import sys
import types
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from . import events
    from .annotations import In, InOut, Out, Owned
    from .errors import AliasError, BackendError, BorrowError, DeviceMemoryError, OffloadError, UseAfterMoveError
    from .kernels import RawKernel, kernel
    from .launch import offload
    from .region import region
    from .settings import get_backend, get_mode, set_backend, set_mode

__version__ = "0.1.0"

#: public name -> the submodule that defines it (None: the name is the submodule)
_HOMES: dict[str, str | None] = {
    "events": None,
    "In": "annotations", "InOut": "annotations", "Out": "annotations", "Owned": "annotations",
    "AliasError": "errors", "BackendError": "errors", "BorrowError": "errors", "DeviceMemoryError": "errors",
    "OffloadError": "errors", "UseAfterMoveError": "errors",
    "RawKernel": "kernels", "kernel": "kernels",
    "offload": "launch",
    "get_backend": "settings", "get_mode": "settings", "set_backend": "settings", "set_mode": "settings",
}

__all__ = sorted([*_HOMES, "region"])


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name, "")
    if home == "":
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    module = importlib.import_module(f".{home or name}", __name__)
    value = module if home is None else getattr(module, name)
    globals()[name] = value  # later lookups are plain attribute reads
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


class _Package(types.ModuleType):
    """The package's module type: `region` is both a submodule and the public context manager.

    The import system binds a submodule to its package's attribute when it
    first loads it (`offload_core.region` the module, as soon as anything
    imports `offload_core.region`), which must not replace the public name.
    A data descriptor on the module's type wins over that binding, so the
    name always answers the context manager, as it did when the package
    imported it eagerly.
    """

    @property
    def region(self) -> Any:
        return importlib.import_module(".region", __name__).region

    @region.setter
    def region(self, value: Any) -> None:
        """The import system binding the submodule: the public name stays the context manager."""


sys.modules[__name__].__class__ = _Package
