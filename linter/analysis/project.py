"""Kernel signature records and the cross-file index: plain data, no LibCST.

Cached results carry these records (a file's exported kernels), so they live
in a module that a warm run can unpickle without importing the parser.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from typing import TYPE_CHECKING, Mapping

if TYPE_CHECKING:
    import libcst as cst

ACCESSES = ("In", "Out", "InOut", "Owned")
WRITES = ("Out", "InOut", "Owned")


@dataclass(frozen=True)
class KernelParam:
    name: str
    access: str | None  # In | Out | InOut | Owned, None for a scalar

    @property
    def is_array(self) -> bool:
        return self.access is not None


@dataclass(frozen=True)
class KernelSig:
    name: str
    qualname: str
    params: tuple[KernelParam, ...]

    def digest(self) -> str:
        text = self.qualname + "(" + ",".join(f"{p.name}:{p.access}" for p in self.params) + ")"
        return hashlib.sha1(text.encode()).hexdigest()[:16]

    def bind(self, args: tuple[cst.Arg, ...]) -> list[tuple[KernelParam, cst.Arg]] | None:
        """Pair launch arguments with parameters; None when the call cannot be matched."""
        pairs: list[tuple[KernelParam, cst.Arg]] = []
        by_name = {p.name: p for p in self.params}
        position = 0
        for arg in args:
            if arg.star:
                return None
            if arg.keyword is None:
                if position >= len(self.params):
                    return None
                pairs.append((self.params[position], arg))
                position += 1
            else:
                param = by_name.get(arg.keyword.value)
                if param is None:
                    return None
                pairs.append((param, arg))
        return pairs



class KernelIndex:
    """Kernels of every linted file, by qualified name (`pkg.kernels.daxpy`)."""

    def __init__(self, sigs: Mapping[str, KernelSig] | None = None) -> None:
        self.sigs: dict[str, KernelSig] = dict(sigs or {})
        self._by_tail: dict[str, list[str]] = {}
        for key in self.sigs:
            parts = key.split(".")
            for i in range(1, len(parts)):
                self._by_tail.setdefault(".".join(parts[i:]), []).append(key)

    def lookup(self, qualname: str) -> KernelSig | None:
        """Exact name first; else a unique file whose dotted name ends the same way.

        A script that does `from kernels import daxpy` next to `kernels.py`
        inside package `pkg` names the module `kernels`, the linter `pkg.kernels`.
        """
        sig = self.sigs.get(qualname)
        if sig is not None:
            return sig
        keys = self._by_tail.get(qualname, [])
        return self.sigs[keys[0]] if len(keys) == 1 else None
