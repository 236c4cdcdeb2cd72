"""What one file means: its names, its calls, its device values, its loops and its kernels, built together.

The checks ask questions ("is this call a host->device copy?", "is `d` a
device array?", "which array does `t` alias?", "what does this loop
change?"); each part answers one kind, lazily and with its own memo, so a
file that has no loop never pays for loop analysis:

- `names`: imports, bindings, local functions, views of one array;
- `calls`: the catalog applied to a call (`Calls.classify`), regions, launches;
- `values`: which expressions are device arrays (owned by `calls`: the two
  questions recurse into each other);
- `loops`: what a loop changes, invariance, rare branches;
- `kernels`: kernel signatures, local and from other files;
- `functions`: what each call runs, and which functions run once per iteration.

Device-ness is a small flow-insensitive taint pass per scope: a name is a
device value of library L when some assignment gives it the result of an L
copy or allocation, an operation on an L device value, or a method of one.
Nothing else is a device value, which is what keeps `dict.get("k")` and
`queue.get()` from looking like `cupy.ndarray.get()`. Comparisons are not
taint sources on purpose: `(pred == labels).sum().item()` in a training loop
is the idiom the rules must leave alone.
"""

from __future__ import annotations

from typing import Mapping

from .apis import ApiIndex
from .callgraph import Hot
from .calls import Calls
from .functions import Functions
from .kernels import Kernels
from .loops import LoopFacts
from .names import Names
from .project import KernelIndex
from .scopes import ModuleIndex
from .values import DeviceValues


class Semantics:
    """The analysis of one file; create one per lint."""

    def __init__(self, idx: ModuleIndex, apis: ApiIndex, foreign: KernelIndex, path: str = "",
                 hot: Mapping[str, Hot] | None = None, handed: Mapping[str, Mapping[str, str]] | None = None) -> None:
        self.idx = idx
        self.names = Names(idx, apis)
        self.kernels = Kernels(self.names, foreign)
        self.calls = Calls(self.names, apis)
        self.values: DeviceValues = self.calls.values
        self.values.handed = handed or {}
        self.loops = LoopFacts(self.names, self.calls, self.kernels)
        self.functions = Functions(self.names, self.loops, path, hot, self.values)
