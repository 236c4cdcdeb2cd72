"""The table model behind every list in the TUI: columns, sides, and the filtered, sorted row order.

A view of 10^6 launches cannot hold 10^6 rows of text, so a `Table`
holds only arrays: a row is a *key* (a launch ordinal, a kernel, a call
site, a finding), `order` is the array of keys left after filtering (by
text, and by a `Scope` another view chose: the findings of one rank) and
sorting, and text is made by `Column.text` for the rows on screen only.
Sorting is one `numpy.lexsort` over a column's sort values, filtering one
mask per side; both are milliseconds at 10^6 rows.

A table has *sides*: the shared columns that name the key (`#`,
`kernel`, `call site`) and one side per run, so the naive and the batched
run of a key sit on one line and scroll together. A side maps each key to
its own entity (`entity[key]`, -1 where the run has none: a kernel only
one run launched), and its columns read that entity.

`fit_columns` decides which columns a width shows: the least important
go first, run sides always show the same columns so they read as mirror
images, and flexible text columns take the room left.

This module imports no Textual: `profiler.tui.gridview` draws it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

Match = Callable[[str], np.ndarray]


@dataclass(frozen=True)
class Column:
    """One column of a side.

    `text(entity)` is the cell; `values` the per-entity sort key (numbers,
    or text ranks); `width` the cells' natural width; a `flex` column
    shrinks down to `min_width` and takes spare room up to `width`.
    Columns with a lower `priority` are kept when the terminal is narrow.
    """

    key: str
    title: str
    text: Callable[[int], str]
    values: np.ndarray
    width: int
    align: str = "right"
    priority: int = 5
    flex: bool = False
    min_width: int = 4

    @property
    def label(self) -> str:
        return self.title


@dataclass(frozen=True)
class Side:
    """A group of columns over one kind of entity: a run's launches, kernels, call sites, or the row keys."""

    title: str
    columns: tuple[Column, ...]
    entity: np.ndarray
    match: Match | None = None
    shared: bool = False
    #: how sort menus name the side ("naive"); the title when empty
    name: str = ""

    def __post_init__(self) -> None:
        assert all(c.values.shape[0] >= int(self.entity.max(initial=-1)) + 1 for c in self.columns), \
            f"{self.title}: a column has fewer values than the side has entities"


@dataclass(frozen=True)
class Scope:
    """The rows a choice made in another view keeps (Enter on rank 1 keeps rank 1's findings), and how to name it.

    Kept apart from the text filter so that typing a filter narrows the
    chosen rank's rows rather than replacing the choice.
    """

    label: str
    #: per key, whether the row is kept
    keep: np.ndarray


@dataclass(frozen=True)
class SortSpec:
    side: int
    column: int
    descending: bool


@dataclass
class Table:
    """Keys `0..keys-1`, the sides that show them, and the current filter and sort."""

    sides: tuple[Side, ...]
    keys: int
    noun: str = "rows"
    order: np.ndarray = field(init=False)
    sort: SortSpec | None = field(default=None, init=False)
    filter_text: str = field(default="", init=False)
    scope: Scope | None = field(default=None, init=False)

    def __post_init__(self) -> None:
        for s in self.sides:
            assert s.entity.shape[0] == self.keys, f"{s.title}: entity map of {s.entity.shape[0]} for {self.keys} keys"
        self.order = np.arange(self.keys, dtype=np.int64)

    def __len__(self) -> int:
        return int(self.order.shape[0])

    def counted(self, n: int) -> str:
        """`1 launch`, `31 launches`: the noun singular for one."""
        singular = {"launches": "launch", "kernels": "kernel", "call sites": "call site", "findings": "finding",
                    "rows": "row"}
        return f"{n:,} {singular.get(self.noun, self.noun) if n == 1 else self.noun}"

    # --------------------------------------------------------- queries
    def key_at(self, row: int) -> int:
        return int(self.order[row])

    def row_of(self, key: int) -> int | None:
        """Where `key` is now (None when filtered out)."""
        hits = np.flatnonzero(self.order == key)
        return int(hits[0]) if hits.size else None

    def cells(self, row: int) -> list[list[str] | None]:
        """The texts of one row, per side (None where the side has no entity for the key)."""
        key = self.key_at(row)
        out: list[list[str] | None] = []
        for side in self.sides:
            entity = int(side.entity[key])
            out.append(None if entity < 0 else [c.text(entity) for c in side.columns])
        return out

    def column_names(self) -> list[tuple[int, int, str]]:
        """(side, column, "title (side)") of every sortable column, for menus and the command palette."""
        out = []
        for si, side in enumerate(self.sides):
            for ci, col in enumerate(side.columns):
                label = side.name or side.title
                suffix = f" ({label})" if label and not side.shared else ""
                out.append((si, ci, f"{col.title}{suffix}"))
        return out

    def describe_sort(self) -> str:
        if self.sort is None:
            return ""
        name = next(n for s, c, n in self.column_names() if (s, c) == (self.sort.side, self.sort.column))
        return f"sorted by {name} {'▼' if self.sort.descending else '▲'}"

    # --------------------------------------------------------- changes
    def sort_by(self, side: int, column: int, descending: bool | None = None) -> None:
        """Sort by a column; the same column again flips the direction (numbers start largest first)."""
        if descending is None:
            same = self.sort is not None and (self.sort.side, self.sort.column) == (side, column)
            col = self.sides[side].columns[column]
            descending = (not self.sort.descending) if same and self.sort else col.align == "right"
        self.sort = SortSpec(side, column, descending)
        self._apply()

    def unsort(self) -> None:
        self.sort = None
        self._apply()

    def set_filter(self, text: str) -> None:
        self.filter_text = text.strip()
        self._apply()

    def set_scope(self, scope: Scope | None) -> None:
        assert scope is None or scope.keep.shape[0] == self.keys, "a scope names every key"
        self.scope = scope
        self._apply()

    def _apply(self) -> None:
        keys = np.arange(self.keys, dtype=np.int64)
        if self.scope is not None:
            keys = keys[self.scope.keep]
        needle = self.filter_text.lower()
        if needle:
            mask = np.zeros(self.keys, dtype=bool)
            for side in self.sides:
                if side.match is None:
                    continue
                hit = side.match(needle)
                present = side.entity >= 0
                mask[present] |= hit[side.entity[present]]
            keys = keys[mask[keys]]
        if self.sort is not None and keys.size:
            side = self.sides[self.sort.side]
            col = side.columns[self.sort.column]
            entity = side.entity[keys]
            absent = entity < 0
            values = col.values[np.maximum(entity, 0)]
            if self.sort.descending:
                values = -(values.astype(np.int64) if values.dtype.kind == "u" else values)
            # absent entities last either way; ties keep key order (stable)
            keys = keys[np.lexsort((keys, values, absent))]
        self.order = keys


# ------------------------------------------------------------------ helpers
def text_match(labels: Sequence[str], codes: np.ndarray) -> Match:
    """Filter by substring over a categorical column: test each distinct label once, then map the codes."""
    lowered = [label.lower() for label in labels]

    def match(needle: str) -> np.ndarray:
        hit = np.array([needle in label for label in lowered] + [False], dtype=bool)
        return hit[codes]  # code -1 reads the trailing False

    return match


def ranks(labels: Sequence[str]) -> np.ndarray:
    """Sort values for a text column: each label's rank in case-insensitive order."""
    order = sorted(range(len(labels)), key=lambda i: (labels[i].lower(), labels[i]))
    out = np.empty(len(labels), dtype=np.int64)
    out[order] = np.arange(len(labels))
    return out


# ------------------------------------------------------------------ layout
GAP = 1  # between columns
SEPARATOR = " │ "


@dataclass(frozen=True)
class Placed:
    side: int
    column: int
    x: int
    width: int


def fit_columns(table: Table, width: int) -> list[Placed]:
    """Which columns to show at `width`, where, and how wide (see the module docstring)."""
    sides = table.sides
    runs = [i for i, s in enumerate(sides) if not s.shared]
    shared = [i for i, s in enumerate(sides) if s.shared]
    # Run sides keep the same column set; a run column is identified by its index.
    shared_cols = {(si, ci) for si in shared for ci in range(len(sides[si].columns))}
    run_cols = set(range(len(sides[runs[0]].columns))) if runs else set()
    n_runs = max(len(runs), 1)

    def cell(c: Column, reserve: bool) -> int:
        # While less important columns are being dropped, the most important
        # flexible columns (the row's name) keep their natural width.
        if not c.flex:
            return c.width
        return c.width if reserve and c.priority == 0 else c.min_width

    def need(reserve: bool = False) -> int:
        total = 0
        for si in shared:
            cols = [sides[si].columns[ci] for ci in range(len(sides[si].columns)) if (si, ci) in shared_cols]
            total += sum(cell(c, reserve) for c in cols) + GAP * max(len(cols) - 1, 0)
        if runs:
            cols = [sides[runs[0]].columns[ci] for ci in sorted(run_cols)]
            total += n_runs * (sum(cell(c, reserve) for c in cols) + GAP * max(len(cols) - 1, 0))
        groups = len([si for si in shared if any((si, ci) in shared_cols for ci in range(len(sides[si].columns)))]) + len(runs)
        return total + len(SEPARATOR) * max(groups - 1, 0)

    def droppable() -> bool:
        return any(sides[si].columns[ci].priority > 0 for si, ci in shared_cols) or any(
            sides[runs[0]].columns[ci].priority > 0 for ci in run_cols)

    while (need(reserve=True) > width and droppable()) or (need() > width and len(shared_cols) + len(run_cols) > 1):
        candidates = [((sides[si].columns[ci].priority, 0, ci), ("s", si, ci)) for si, ci in shared_cols]
        candidates += [((sides[runs[0]].columns[ci].priority, 1, ci), ("r", 0, ci)) for ci in run_cols]
        _, (what, si, ci) = max(candidates)
        if what == "s":
            shared_cols.discard((si, ci))
        else:
            run_cols.discard(ci)

    # Widths: natural for fixed columns, min for flex, then share out the room left.
    widths: dict[tuple[int, int], int] = {}
    for si in shared:
        for ci in range(len(sides[si].columns)):
            if (si, ci) in shared_cols:
                c = sides[si].columns[ci]
                widths[(si, ci)] = c.min_width if c.flex else c.width
    for si in runs:
        for ci in run_cols:
            c = sides[si].columns[ci]
            widths[(si, ci)] = c.min_width if c.flex else c.width
    spare = width - need()
    # Flex columns grow to their natural width while room is left: shared ones
    # first, then run columns, by the same amount on every run side.
    for si in shared:
        for ci in range(len(sides[si].columns)):
            c = sides[si].columns[ci]
            if (si, ci) in widths and c.flex and spare > 0:
                grow = min(c.width - widths[(si, ci)], spare)
                widths[(si, ci)] += grow
                spare -= grow
    if runs:
        for ci in sorted(run_cols):
            grow = min(max(sides[si].columns[ci].width for si in runs) - widths[(runs[0], ci)], spare // len(runs))
            if sides[runs[0]].columns[ci].flex and grow > 0:
                for si in runs:
                    widths[(si, ci)] += grow
                spare -= grow * len(runs)
    out: list[Placed] = []
    x = 0
    for si in range(len(sides)):
        cols = [ci for ci in range(len(sides[si].columns)) if (si, ci) in widths]
        if not cols:
            continue
        if out:
            x += len(SEPARATOR)
        for n, ci in enumerate(cols):
            if n:
                x += GAP
            out.append(Placed(si, ci, x, widths[(si, ci)]))
            x += widths[(si, ci)]
        if si in runs and spare > 0 and len(runs) > 1:
            x += spare // len(runs)  # run sides get the leftover equally, so they line up as halves
    return out


def clip(text: str, width: int, align: str) -> str:
    if len(text) > width:
        return text[: max(width - 1, 0)] + "…" if width > 0 else ""
    return text.ljust(width) if align == "left" else text.rjust(width)
