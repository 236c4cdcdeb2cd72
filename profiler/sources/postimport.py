"""A post-import hook: run a callback right after the first of some packages has been imported.

A child of the target starts recording when it first imports the library
that can make GPU work (offload_core, or a CUDA library with CUPTI), so
that a child that never does (multiprocessing's resource tracker, a
`git` call) pays nothing. The hook must not import the module itself
from inside the import system's lookup (the import in progress would then
load it a second time), so it looks the module up through the other
finders, wraps its loader, and calls back once the module's own code has
run.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType
from typing import Any, Callable, Sequence


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
