"""The API knowledge of the linter: which calls copy, allocate, synchronise or launch.

Everything here comes from `rules/apis/*.yaml` (plus the user's
`extend-apis` files) through `offload_core.catalog`; the linter has no
library names of its own beyond the offload_core entry points it analyses.
The index is built once per run and shipped to worker processes, so it holds
plain frozen records and dictionaries only.

Lookups are by qualified name (after import resolution) for `call` entries,
with `module.*` wildcards as the fallback that says "every other function of
this module returns a device array", and by attribute name for `method`
entries, which only apply in files that import one of their library's
modules: `x.cuda()` in a file that never imports torch is somebody else's
`cuda`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Iterable, Mapping

from offload_core.catalog import ApiEntry, ApiFile, ApiKind

DIRECTION = {"h2d": "host->device", "d2h": "device->host"}


@dataclass(frozen=True)
class Api:
    """One catalog entry, with the linter's view of its extra keys."""

    library: str
    kind: ApiKind
    display: str
    call: str | None
    method: str | None
    receiver: str | None
    arg: int | None  # the argument holding the copied data; None: the receiver (methods) or arg 0
    device_arg: int | None
    device_kwarg: str | None
    device_namespace: str | None
    factory: bool
    returns: str | None  # "host" | "device" | None (from the kind)
    direction_arg: int | None = None  # cudaMemcpy(dst, src, n, kind): the argument naming the direction
    blocking: bool = False  # the host waits for it (a copy back to pageable memory, a sync)
    unless_false: str | None = None  # a keyword that, given `False`, makes the call copy nothing (project helpers)
    advice: str | None = None  # what to do instead, where the rule's own advice does not fit (`cupy.bincount`)
    collective: bool = False  # a project helper that all-reduces its argument (`reduce_tensor`): OFF303's, not a sync

    @property
    def direction(self) -> str:
        return DIRECTION.get(self.kind, self.kind)

    @property
    def is_copy(self) -> bool:
        return self.kind in DIRECTION

    @property
    def result_on_device(self) -> bool:
        if self.returns is not None:
            return self.returns == "device"
        return self.kind in ("h2d", "alloc")


def _api(entry: ApiEntry) -> Api:
    extra: Mapping[str, Any] = entry.extra
    display = str(extra.get("display") or entry.call or f"{entry.library} .{entry.method}()")
    arg = extra.get("arg")
    return Api(
        library=entry.library,
        kind=entry.kind,
        display=display,
        call=entry.call,
        method=entry.method,
        receiver=entry.receiver,
        arg=arg if isinstance(arg, int) else None,
        device_arg=extra.get("device_arg") if isinstance(extra.get("device_arg"), int) else None,
        device_kwarg=str(extra["device_kwarg"]) if extra.get("device_kwarg") else None,
        device_namespace=str(extra["device_namespace"]) if extra.get("device_namespace") else None,
        factory=bool(extra.get("factory", False)),
        returns=str(extra["returns"]) if extra.get("returns") in ("host", "device") else None,
        direction_arg=extra.get("direction_arg") if isinstance(extra.get("direction_arg"), int) else None,
        blocking=entry.blocking,
        advice=str(extra["advice"]) if extra.get("advice") else None,
    )


@dataclass(frozen=True)
class ApiIndex:
    """Every known API, indexed for the lookups the checks make."""

    calls: Mapping[str, Api]
    # calls of another library that copy only when given a device value of this one (`implicit: true`):
    # `np.asarray(numba_device_array)` downloads through __array__
    implicit: Mapping[str, tuple[Api, ...]]
    wildcards: tuple[tuple[str, Api], ...]  # (module prefix with trailing dot, api), longest first
    methods: Mapping[str, tuple[Api, ...]]
    modules: Mapping[str, str]  # top-level module name -> library
    prefilter: re.Pattern[str]

    @classmethod
    def from_files(cls, files: Iterable[ApiFile]) -> ApiIndex:
        calls: dict[str, Api] = {}
        implicit: dict[str, list[Api]] = {}
        wildcards: list[tuple[str, Api]] = []
        methods: dict[str, list[Api]] = {}
        modules: dict[str, str] = {}
        for api_file in files:
            for module in api_file.modules:
                modules[module.split(".")[0]] = api_file.library
            for entry in api_file.entries:
                api = _api(entry)
                if entry.call is not None and entry.extra.get("implicit"):
                    implicit.setdefault(entry.call, []).append(api)
                elif entry.call is not None and entry.call.endswith(".*"):
                    wildcards.append((entry.call[:-1], api))
                elif entry.call is not None:
                    calls[entry.call] = api
                elif entry.method is not None:
                    methods.setdefault(entry.method, []).append(api)
        wildcards.sort(key=lambda item: -len(item[0]))
        names = sorted(modules, key=len, reverse=True)
        # array-agnostic code may import none of them and still compute on CuPy (`xp = device.xp`,
        # `xp = ndi.module()`, `from aspire.numeric import xp`; values.py)
        words = [re.escape(n) for n in names] + ["get_array_module"]
        pattern = re.compile(r"\b(?:" + "|".join(words) + r")\b|\.xp\b|\b(?:xp|ncp)\s*=[^=]"
                             r"|\bimport\b[^\n]*\b(?:xp|ncp)\b")
        return cls(
            calls=calls,
            implicit={k: tuple(v) for k, v in implicit.items()},
            wildcards=tuple(wildcards),
            methods={k: tuple(v) for k, v in methods.items()},
            modules=modules,
            prefilter=pattern,
        )

    def mentions_api(self, text: str) -> bool:
        """The cheap text prefilter: can this file import any known library at all?"""
        return self.prefilter.search(text) is not None

    def call(self, qualname: str) -> Api | None:
        """The entry for a qualified call name, exact match first, then the module wildcard."""
        api = self.calls.get(qualname)
        if api is not None:
            return api
        for prefix, wild in self.wildcards:
            if qualname.startswith(prefix):
                return wild
        return None

    def method(self, name: str, libraries: frozenset[str]) -> tuple[Api, ...]:
        """Method entries of that name whose library the file imports."""
        return tuple(a for a in self.methods.get(name, ()) if a.library in libraries)

    def library_of(self, qualname: str) -> str | None:
        return self.modules.get(qualname.split(".")[0])
