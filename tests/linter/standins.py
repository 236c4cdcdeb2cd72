"""Stand-ins for CuPy and PyTorch that model what a device array is, for checking that a fix keeps behaviour.

A `safe` fix promises that the program computes the same thing after it as
before. CI has no GPU, so the before and after programs run against these
modules instead: a device array is a NumPy array tagged with its device,
and each creator follows the real library's documented defaults (CuPy
mirrors NumPy's signatures and dtypes; PyTorch creators default to
float32, and `device=` places the tensor). Only what the linter's fixes
touch is modelled: creators, `asarray`, `.cuda()`, `.to(...)`.
"""

from __future__ import annotations

import types
from typing import Any

import numpy as np

CREATORS = ("zeros", "ones", "empty", "full", "eye", "identity", "arange", "linspace")


class DeviceArray:
    """An array on a device: its values and where they live."""

    def __init__(self, data: np.ndarray, device: str) -> None:
        self.data = data
        self.device = device

    def state(self, values: bool = True) -> tuple[Any, ...]:
        """What a program can observe; `values=False` for arrays whose contents are undefined (empty)."""
        return (type(self).__name__, self.device, self.data.dtype.str, self.data.shape,
                self.data.tobytes() if values else None)


def cupy() -> types.ModuleType:
    """`cupy`: NumPy's creators and `asarray`, returning arrays on the GPU."""
    module = types.ModuleType("cupy")

    class ndarray(DeviceArray):  # noqa: N801  (CuPy's name)
        pass

    def wrap(name: str) -> Any:
        fn = getattr(np, name)
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
            where = kwargs.get("device", device)
            return Tensor(self.data.copy(), "cuda" if str(where).startswith("cuda") else str(where))

    def size(args: tuple[Any, ...]) -> Any:
        return args[0] if len(args) == 1 and isinstance(args[0], (tuple, list)) else args

    def creator(fill: Any) -> Any:
        def make(*args: Any, dtype: Any = None, device: Any = None) -> Tensor:
            data = fill(size(args), dtype or np.float32)
            return Tensor(data, "cpu" if device is None else ("cuda" if str(device).startswith("cuda") else str(device)))
        return make

    module.zeros = creator(lambda s, d: np.zeros(s, dtype=d))  # type: ignore[attr-defined]
    module.ones = creator(lambda s, d: np.ones(s, dtype=d))  # type: ignore[attr-defined]
    module.empty = creator(lambda s, d: np.empty(s, dtype=d))  # type: ignore[attr-defined]
    module.full = lambda shape, value, dtype=None, device=None: creator(  # type: ignore[attr-defined]
        lambda s, d: np.full(s, value, dtype=d))(*shape, dtype=dtype, device=device)
    module.Tensor = Tensor  # type: ignore[attr-defined]
    module.device = lambda name: name  # type: ignore[attr-defined]
    return module


def observe(namespace: dict[str, Any], undefined: frozenset[str] = frozenset()) -> dict[str, Any]:
    """The state of every array a program left in its namespace (`undefined`: names holding `empty` arrays)."""
    return {name: value.state(values=name not in undefined) for name, value in namespace.items()
            if isinstance(value, DeviceArray)}
