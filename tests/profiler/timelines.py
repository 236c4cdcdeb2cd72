"""Hand-built timelines for the replay and verdict tests: records placed by hand, in microseconds."""

from __future__ import annotations

from dataclasses import dataclass, field

from profiler.model import Meta, Record, Run, Site

US = 1_000


def site(line: int, text: str = "") -> Site:
    return Site("/w/app.py", line, "main", text, 5)


@dataclass
class Timeline:
    """Records appended in issue order; times in µs; `run()` makes the Run."""

    backend: str = "cupti"
    records: list[Record] = field(default_factory=list)

    def add(self, kind: str, start_us: float, dur_us: float, line: int = 0, **kw: object) -> int:
        self.records.append(Record(kind, int(start_us * US), int(dur_us * US), site=site(line) if line else None,
                                   **kw))  # type: ignore[arg-type]
        return len(self.records) - 1

    def kernel(self, start_us: float, dur_us: float, line: int = 10, **kw: object) -> int:
        return self.add("launch", start_us, dur_us, line, kernel="k", **kw)

    def copy(self, kind: str, start_us: float, dur_us: float, line: int = 20, nbytes: int = 1 << 20,
             pinned: bool = True, **kw: object) -> int:
        return self.add(kind, start_us, dur_us, line, nbytes=nbytes, pinned=pinned, **kw)

    def sync(self, start_us: float, dur_us: float, line: int = 30) -> int:
        return self.add("sync", start_us, dur_us, line)

    def run(self, wall_us: float) -> Run:
        meta = Meta(backend=self.backend, device="test", mode="batched", started_at="2026-01-01T00:00:00Z",
                    wall_ns=int(wall_us * US), cwd="/w")
        return Run(meta, tuple(self.records))
