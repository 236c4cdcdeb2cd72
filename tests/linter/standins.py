"""Stand-ins for CuPy, PyTorch and Numba CUDA that model what a device array is, for checking that a fix keeps behaviour.

A `safe` fix promises that the program computes the same thing after it as
before. CI has no GPU, so the before and after programs run against these
modules instead: a device array is a NumPy array tagged with its device,
and each creator follows the real library's documented defaults (CuPy
mirrors NumPy's signatures and dtypes; PyTorch creators default to
float32, and `device=` places the tensor; Numba's `device_array` is an
uninitialised `to_device`). Only what the linter's fixes touch is
modelled: creators, `asarray`, `to_device`, `device_array`, `.cuda()`,
`.to(...)`.

Uninitialised memory (`numpy.empty`, `cupy.empty`, `device_array`) may
hold anything, so a fix may swap one such creator for another; to compare
runs, every one of them is filled with the same byte, 0x5A, which no
creator of defined values produces.
"""

from __future__ import annotations

import sys
import types
from typing import Any

import numpy as np
import pytest

CREATORS = ("zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace")
_real_empty = np.empty


def empty(shape: Any, dtype: Any = float, order: str = "C", **kwargs: Any) -> np.ndarray:
    """`numpy.empty` with its undefined contents made one recognisable pattern."""
    a = _real_empty(shape, dtype=dtype, order=order, **kwargs)
    a.view(np.uint8)[...] = 0x5A
    return a


class DeviceArray:
    """An array on a device: its values and where they live."""

    def __init__(self, data: np.ndarray, device: str) -> None:
        self.data = data
        self.device = device

    def state(self) -> tuple[Any, ...]:
        """What a program can observe of it."""
        return (type(self).__name__, self.device, self.data.dtype.str, self.data.shape, self.data.tobytes())


def _device(name: Any) -> str:
    return "cpu" if name is None else "cuda" if str(name).startswith("cuda") else str(name)


def cupy() -> types.ModuleType:
    """`cupy`: NumPy's creators and `asarray`, returning arrays on the GPU."""
    module = types.ModuleType("cupy")

    class ndarray(DeviceArray):  # noqa: N801  (CuPy's name)
        pass

    def wrap(name: str) -> Any:
        fn = empty if name == "empty" else getattr(np, name)
        return lambda *args, **kwargs: ndarray(np.asarray(fn(*args, **kwargs)), "cuda")

    for name in CREATORS:
        setattr(module, name, wrap(name))
    module.asarray = lambda a, dtype=None: ndarray(np.array(a, dtype=dtype), "cuda")  # type: ignore[attr-defined]
    module.ndarray = ndarray  # type: ignore[attr-defined]
    return module


def torch() -> types.ModuleType:
    """`torch`: creators with PyTorch's float32 default and `device=`, tensors with `.cuda()` and `.to()`."""
    module = types.ModuleType("torch")
    module.float32, module.float64, module.int64 = np.float32, np.float64, np.int64  # type: ignore[attr-defined]

    class Tensor(DeviceArray):
        def cuda(self) -> Tensor:
            return Tensor(self.data.copy(), "cuda")

        def to(self, device: Any = None, **kwargs: Any) -> Tensor:
            return Tensor(self.data.copy(), _device(kwargs.get("device", device)))

    def size(args: tuple[Any, ...]) -> Any:
        return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args

    def creator(fill: Any) -> Any:
        def make(*args: Any, dtype: Any = None, device: Any = None) -> Tensor:
            return Tensor(fill(size(args), dtype or np.float32), _device(device))
        return make

    module.zeros = creator(lambda s, d: np.zeros(s, dtype=d))  # type: ignore[attr-defined]
    module.ones = creator(lambda s, d: np.ones(s, dtype=d))  # type: ignore[attr-defined]
    module.empty = creator(lambda s, d: empty(s, dtype=d))  # type: ignore[attr-defined]
    module.full = lambda shape, value, dtype=None, device=None: creator(  # type: ignore[attr-defined]
        lambda s, d: np.full(s, value, dtype=d))(*shape, dtype=dtype, device=device)
    module.Tensor = Tensor  # type: ignore[attr-defined]
    return module


def numba() -> types.ModuleType:
    """`numba` with `numba.cuda`: `to_device` copies up, `device_array` allocates (uninitialised) on the GPU."""
    module = types.ModuleType("numba")
    cuda = types.ModuleType("numba.cuda")

    class DeviceNDArray(DeviceArray):
        pass

    cuda.to_device = lambda a: DeviceNDArray(np.array(a), "cuda")  # type: ignore[attr-defined]
    cuda.device_array = lambda shape, dtype=float: DeviceNDArray(empty(shape, dtype=dtype), "cuda")  # type: ignore[attr-defined]
    module.cuda = cuda  # type: ignore[attr-defined]
    return module


def install(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make `import cupy`, `import torch` and `from numba import cuda` find the stand-ins (for one test)."""
    nb = numba()
    for name, module in (("cupy", cupy()), ("torch", torch()), ("numba", nb), ("numba.cuda", nb.cuda)):
        monkeypatch.setitem(sys.modules, name, module)
    monkeypatch.setattr(np, "empty", empty)


def run(program: str) -> dict[str, Any]:
    """Run `program` (stand-ins installed) and return the state of every device array it left in its namespace."""
    namespace: dict[str, Any] = {}
    exec(compile(program, "<example>", "exec"), namespace)
    return {name: value.state() for name, value in namespace.items() if isinstance(value, DeviceArray)}
