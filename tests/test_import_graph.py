"""The real import graph of offload_core, linter and profiler: no circle, and no import that runs upward.

The layer order is the `layers` block of docs/design.md, read here, so the
documentation and the check cannot drift apart. Every import statement
counts (module level, deferred, type-only); see tests/importgraph.py.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from .importgraph import PACKAGES, ROOT, Edge, cycles, internal_edges, module_files

DESIGN = ROOT / "docs" / "design.md"



@dataclass(frozen=True)
class Room:
    package: str
    name: str
    rank: int
    modules: tuple[str, ...]  # absolute module names; each covers itself and its submodules

    @property
    def key(self) -> str:
        return f"{self.package}.{self.name}"

    def covers(self, module: str) -> bool:
        return any(module == m or (module.startswith(m + ".") and m != self.package) for m in self.modules)


@dataclass(frozen=True)
class Layers:
    package_rank: dict[str, int]
    rooms: tuple[Room, ...]
    #: source (package or package.room) -> the rooms of other packages it may import
    uses: dict[str, frozenset[str]]

    def room_of(self, module: str) -> Room:
        found = [r for r in self.rooms if r.package == module.split(".")[0] and r.covers(module)]
        if len(found) != 1:
            names = ", ".join(r.key for r in found) or "no room"
            raise LookupError(f"{module} is in {names}; docs/design.md must place it in exactly one room")
        return found[0]


def read_layers() -> Layers:
    text = DESIGN.read_text(encoding="utf-8")
    block = re.search(r"^```layers\n(.*?)^```", text, flags=re.M | re.S)
    assert block is not None, "docs/design.md has no ```layers block"
    package_rank: dict[str, int] = {}
    rooms: list[Room] = []
    uses: dict[str, frozenset[str]] = {}
    section = ""
    rank = 0
    for raw in block.group(1).splitlines():
        line = raw.split("#", 1)[0].rstrip()
        if not line:
            continue
        if line.startswith("packages:"):
            for n, group in enumerate(line.split(":", 1)[1].split("<")):
                for name in group.split(","):
                    package_rank[name.strip()] = n
        elif not line.startswith(" "):
            section, rank = line.strip(), 0
        elif section == "uses":
            sources, targets = line.split("->")
            for source in sources.split():
                uses[source] = frozenset(targets.split())
        else:
            for part in line.split("|"):
                name, modules = part.split("=")
                absolute = tuple(section if m == "." else f"{section}.{m}" for m in modules.split())
                rooms.append(Room(section, name.strip(), rank, absolute))
            rank += 1
    return Layers(package_rank, tuple(rooms), uses)


def violation(layers: Layers, e: Edge) -> str | None:
    """Why `e` breaks the layer order, or None."""
    src, dst = layers.room_of(e.source), layers.room_of(e.target)
    if src.package != dst.package:
        if layers.package_rank[dst.package] >= layers.package_rank[src.package]:
            return f"{e}: {src.package} may not import {dst.package}"
        for key in (src.key, src.package):
            allowed = layers.uses.get(key)
            if allowed is not None and dst.key not in allowed:
                return f"{e}: {src.key} may use only {', '.join(sorted(allowed))} of other packages, not {dst.key}"
        return None
    if src == dst or dst.rank < src.rank:
        return None
    where = "the same rank" if dst.rank == src.rank else "a higher room"
    return f"{e}: {src.key} imports {dst.key}, {where}"


def test_design_md_places_every_module_in_exactly_one_room() -> None:
    layers = read_layers()
    assert set(layers.package_rank) == set(PACKAGES)
    problems = []
    for module in sorted(module_files()):
        try:
            layers.room_of(module)
        except LookupError as exc:
            problems.append(str(exc))
    assert not problems, "\n".join(problems)
    for room in layers.rooms:
        assert any(room.covers(m) for m in module_files()), f"{room.key} names no existing module"


def test_no_import_runs_upward() -> None:
    layers = read_layers()
    problems = [v for v in (violation(layers, e) for e in internal_edges()) if v is not None]
    assert not problems, "\n".join(problems)


def test_no_import_circle() -> None:
    graph: dict[str, set[str]] = {}
    for e in internal_edges():
        graph.setdefault(e.source, set()).add(e.target)
    found = cycles(graph)
    assert not found, "import circles: " + "; ".join(" <-> ".join(c) for c in found)


# ------------------------------------------------------------------------------------------
# The checks must be able to fail: each rule, on a graph that breaks it.
def _edge(source: str, target: str, **kw: bool) -> Edge:
    return Edge(source, target, 1, kw.get("deferred", False), kw.get("type_only", False))


@pytest.mark.parametrize("source, target, why", [
    ("profiler.trace.model", "profiler.analysis.summary", "a higher room"),
    ("profiler.tui.app", "profiler.commands.tui", "a higher room"),
    ("profiler.analysis.summary", "profiler.sources.recorder", "the same rank"),
    ("profiler.trace.records", "offload_core.events", "may use only offload_core.shared"),
    ("linter.cli", "offload_core.launch", "may use only offload_core.shared"),
    ("offload_core.catalog", "linter.cli", "offload_core may not import linter"),
    ("linter.outputs.formats", "profiler.outputs.gate", "linter may not import profiler"),
    ("offload_core.residency", "offload_core.capture", "a higher room"),
])
def test_upward_and_sideways_imports_are_reported(source: str, target: str, why: str) -> None:
    layers = read_layers()
    for how in ({}, {"deferred": True}, {"type_only": True}):
        found = violation(layers, _edge(source, target, **how))
        assert found is not None and why in found


@pytest.mark.parametrize("source, target", [
    ("profiler.commands.run", "profiler.sources.recorder"),
    ("profiler.sources.recorder", "offload_core.events"),
    ("profiler.trace.model", "profiler.trace.tracefile"),
    ("offload_core.region", "offload_core.capture"),
    ("linter.outputs.formats", "offload_core.github"),
])
def test_downward_imports_pass(source: str, target: str) -> None:
    assert violation(read_layers(), _edge(source, target)) is None


def test_circles_are_found_whatever_their_length() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"d", "a"}, "e": {"f"}, "f": {"e"}, "g": set()}
    assert cycles(graph) == [["a", "b", "c"], ["e", "f"]]
