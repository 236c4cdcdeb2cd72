"""Hand-built CUPTI captures: what a recording of a few known statements contains."""

from __future__ import annotations

from dataclasses import dataclass, field

from profiler.sources.cupti.activity import ApiCall, Capture, Copy, Kernel, Memset, Sync

T0 = 1_000_000


@dataclass
class Builder:
    """Appends calls and their activity records in issue order, with rising correlation ids and times."""

    file: str = "/work/app.py"
    t: int = T0 + 1000
    corr: int = 0
    calls: dict[int, ApiCall] = field(default_factory=dict)
    copies: list[Copy] = field(default_factory=list)
    kernels: list[Kernel] = field(default_factory=list)
    syncs: list[Sync] = field(default_factory=list)
    memsets: list[Memset] = field(default_factory=list)

    def _call(self, name: str, role: str, line: int, instr: int | None = None, **kw: object) -> int:
        self.corr += 1
        site = (self.file, line, "main") if line else None
        self.calls[self.corr] = ApiCall(self.corr, name, role, site, (1, instr if instr is not None else line * 10),
                                        enter_ns=self.t, **kw)  # type: ignore[arg-type]
        return self.corr

    def _span(self, ns: int) -> tuple[int, int]:
        start = self.t + 100
        self.t = start + ns
        return start, self.t

    def h2d(self, line: int, nbytes: int, host: int, fp: str | None = "f0", kind: str = "pageable",
            sync: bool = False) -> int:
        c = self._call("cudaMemcpy_v3020" if sync else "cudaMemcpyAsync_v3020", "copy", line, synchronous=sync,
                       src=host, count=nbytes, fingerprint=fp)
        self.copies.append(Copy(c, 0, "h2d", kind, "device", nbytes, *self._span(1000)))
        return c

    def d2h(self, line: int, nbytes: int, host: int, *, sync: bool = True, kind: str = "pageable",
            instr: int | None = None, fp: str | None = None) -> int:
        c = self._call("cudaMemcpy_v3020" if sync else "cudaMemcpyAsync_v3020", "copy", line, instr,
                       synchronous=sync, dst=host, count=nbytes, fingerprint=fp)
        self.t += 5000  # waiting for the kernels before it
        self.copies.append(Copy(c, 0, "d2h", "device", kind, nbytes, *self._span(800)))
        return c

    def unheard_d2h(self, named: int, nbytes: int = 4) -> None:
        """A `.item()` copy whose calls CUPTI did not call back for: its record names call `named` instead."""
        self.t += 5000
        self.copies.append(Copy(named, 0, "d2h", "device", "pageable", nbytes, *self._span(800)))

    def kernel(self, line: int, name: str = "k") -> int:
        c = self._call("cuLaunchKernel", "launch", line)
        self.kernels.append(Kernel(c, name, *self._span(3000)))
        return c

    def sync(self, line: int, instr: int | None = None, type: str = "stream") -> int:
        c = self._call("cudaStreamSynchronize_v3020", "sync", line, instr)
        self.syncs.append(Sync(c, type, *self._span(200)))
        return c

    def d2d(self, line: int, nbytes: int) -> int:
        c = self._call("cudaMemcpyAsync_v3020", "copy", line)
        self.copies.append(Copy(c, 0, "d2d", "device", "device", nbytes, *self._span(100)))
        return c

    def memset(self, line: int, nbytes: int) -> int:
        c = self._call("cuMemsetD8Async", "memset", line)
        self.memsets.append(Memset(c, nbytes, "device", *self._span(100)))
        return c

    def capture(self, shuffle: bool = True) -> Capture:
        # CUPTI delivers records grouped by kind and buffer, not in issue order
        copies = self.copies[::-1] if shuffle else self.copies
        return Capture(T0, self.t + 1000, dict(self.calls), tuple(copies), tuple(self.memsets),
                       tuple(self.kernels), tuple(self.syncs))
