"""`GridView`: a virtual table widget that draws a `grid.Table` one screen line at a time.

Textual's DataTable keeps every row as renderables, which for 10^6
launches costs seconds and gigabytes before the first frame. GridView is
a Line API `ScrollView`: its virtual height is the table's row count, and
`render_line` formats only the rows on screen, so opening, scrolling and
jumping to the end cost the same at 10 rows and at 10^6.

The sides of the table (shared key columns, then one side per run) share
one cursor and one scroll position, which is how the naive and the batched
run of a launch stay on one line. Columns are fitted to the width by
`grid.fit_columns`. Two header lines stay put while rows scroll: the side titles, and the
column titles with the sort arrow and the column cursor.
"""

from __future__ import annotations

from rich.segment import Segment
from rich.style import Style
from textual import events
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.reactive import reactive
from textual.scroll_view import ScrollView
from textual.strip import Strip

from .grid import SEPARATOR, Placed, Scope, Table, clip, fit_columns

HEADER = 2


class GridView(ScrollView, can_focus=True):
    """A virtual, sortable, filterable table over a `grid.Table`."""

    BINDINGS = [
        Binding("up,k", "cursor(-1)", "Up", show=False),
        Binding("down,j", "cursor(1)", "Down", show=False),
        Binding("pageup", "page(-1)", "Page up", show=False),
        Binding("pagedown", "page(1)", "Page down", show=False),
        Binding("home,g", "jump(0)", "First row", show=False),
        Binding("end,G", "jump(-1)", "Last row", show=False),
        Binding("left,h", "column(-1)", "Column left", show=False),
        Binding("right,l", "column(1)", "Column right", show=False),
        Binding("s", "sort", "Sort", tooltip="sort by the highlighted column; again to reverse"),
        Binding("o", "unsort", "Original order", show=False),
        Binding("enter", "select", "Open", show=False),
    ]

    COMPONENT_CLASSES = {"grid--title", "grid--header", "grid--sorted", "grid--column-cursor", "grid--cursor",
                         "grid--separator", "grid--absent"}

    DEFAULT_CSS = """
    GridView { overflow-x: hidden; overflow-y: auto; }
    GridView > .grid--title { text-style: bold; }
    GridView > .grid--header { text-style: bold; color: $text-muted; }
    GridView > .grid--sorted { text-style: bold underline; color: $accent; }
    GridView > .grid--column-cursor { background: $boost; text-style: bold reverse; }
    GridView > .grid--cursor { background: $accent 30%; }
    GridView:focus > .grid--cursor { background: $accent 60%; }
    GridView > .grid--separator { color: $panel-lighten-2; }
    GridView > .grid--absent { color: $text-disabled; }
    """

    cursor: reactive[int] = reactive(0, always_update=True, init=False)

    class Highlighted(Message):
        """The cursor moved to the row of `key`."""

        def __init__(self, grid: GridView, key: int | None) -> None:
            super().__init__()
            self.grid = grid
            self.key = key

    class Selected(Message):
        """Enter was pressed on the row of `key`."""

        def __init__(self, grid: GridView, key: int) -> None:
            super().__init__()
            self.grid = grid
            self.key = key

    def __init__(self, table: Table, *, id: str | None = None) -> None:
        super().__init__(id=id)
        self.table = table
        self.column_cursor = 0
        self._placed: list[Placed] = []
        self._placed_width = -1
        self._starts: set[int] = set()
        #: rows formatted since mount: what the benchmark and the tests read to see virtualisation work
        self.rows_rendered = 0

    # ------------------------------------------------------------ data
    def set_table(self, table: Table) -> None:
        self.table = table
        self._placed_width = -1
        self.column_cursor = 0
        self._rows_changed(keep=None)

    def _rows_changed(self, keep: int | None) -> None:
        """After a sort or filter: keep the cursor on the same key where it is still listed."""
        self.virtual_size = Size(self.size.width, len(self.table) + HEADER)
        row = self.table.row_of(keep) if keep is not None else None
        self.cursor = 0 if row is None else row
        self._scroll_to_cursor(center=True)
        self.refresh()

    def current_key(self) -> int | None:
        if not len(self.table):
            return None
        return self.table.key_at(min(self.cursor, len(self.table) - 1))

    def sort_by(self, side: int, column: int, descending: bool | None = None) -> None:
        keep = self.current_key()
        self.table.sort_by(side, column, descending)
        self._rows_changed(keep)

    def apply_filter(self, text: str) -> None:
        keep = self.current_key()
        self.table.set_filter(text)
        self._rows_changed(keep)

    def apply_scope(self, scope: Scope | None) -> None:
        keep = self.current_key()
        self.table.set_scope(scope)
        self._rows_changed(keep)

    # ------------------------------------------------------------ layout
    def placed(self) -> list[Placed]:
        width = self.scrollable_content_region.width or self.size.width
        if width != self._placed_width:
            self._placed = fit_columns(self.table, width)
            self._placed_width = width
            firsts: dict[int, int] = {}
            for p in self._placed:
                firsts.setdefault(p.side, p.x)
            self._starts = set(list(firsts.values())[1:])
            self.column_cursor = min(self.column_cursor, max(len(self._placed) - 1, 0))
        return self._placed

    def on_resize(self, event: events.Resize) -> None:
        self._placed_width = -1
        self.virtual_size = Size(event.size.width, len(self.table) + HEADER)
        self._scroll_to_cursor()

    @property
    def page_rows(self) -> int:
        return max(self.scrollable_content_region.height - HEADER, 1)

    # ------------------------------------------------------------ drawing
    def render_line(self, y: int) -> Strip:
        width = self.scrollable_content_region.width
        base = self.rich_style
        if y == 0:
            return self._titles(width, base)
        if y == 1:
            return self._headers(width, base)
        row = int(self.scroll_offset.y) + y - HEADER
        if row >= len(self.table):
            return Strip.blank(width, base)
        return self._row(row, width, base)

    def _style(self, name: str) -> Style:
        return self.get_component_rich_style(name)

    def _segments(self, width: int, base: Style, cells: list[tuple[int, str, Style]]) -> Strip:
        """Segments for (x, text, style) cells: a separator before each side but the first, blanks elsewhere."""
        segments: list[Segment] = []
        x = 0
        starts = self._starts
        sep = base + self._style("grid--separator")
        for cx, text, style in cells:
            if cx in starts and cx - x >= len(SEPARATOR):
                segments.append(Segment(" " * (cx - x - len(SEPARATOR)), base))
                segments.append(Segment(SEPARATOR, sep))
            elif cx > x:
                segments.append(Segment(" " * (cx - x), base))
            segments.append(Segment(text, base + style))
            x = cx + len(text)
        return Strip(segments).crop_extend(0, width, base)

    def _titles(self, width: int, base: Style) -> Strip:
        spans: dict[int, tuple[int, int]] = {}
        for p in self.placed():
            lo, hi = spans.get(p.side, (p.x, p.x + p.width))
            spans[p.side] = (min(lo, p.x), max(hi, p.x + p.width))
        cells = []
        for si, (lo, hi) in spans.items():
            title = self.table.sides[si].title
            cells.append((lo, clip(title, hi - lo, "left"), self._style("grid--title")))
        return self._segments(width, base, cells)

    def _headers(self, width: int, base: Style) -> Strip:
        sort = self.table.sort
        cells = []
        for n, p in enumerate(self.placed()):
            col = self.table.sides[p.side].columns[p.column]
            title = col.title
            style = self._style("grid--header")
            if sort is not None and (sort.side, sort.column) == (p.side, p.column):
                title = f"{title}{'▼' if sort.descending else '▲'}"
                style = self._style("grid--sorted")
            if n == self.column_cursor and self.has_focus:
                style = style + self._style("grid--column-cursor")
            cells.append((p.x, clip(title, p.width, col.align), style))
        return self._segments(width, base, cells)

    def _row(self, row: int, width: int, base: Style) -> Strip:
        self.rows_rendered += 1
        texts = self.table.cells(row)
        plain = Style()
        row_style = self._style("grid--cursor") if row == self.cursor else plain
        absent = self._style("grid--absent")
        cells = []
        for p in self.placed():
            side = texts[p.side]
            col = self.table.sides[p.side].columns[p.column]
            if side is None:
                cells.append((p.x, clip("·" if col.align == "right" else "", p.width, col.align), absent + row_style))
            else:
                cells.append((p.x, clip(side[p.column], p.width, col.align), row_style))
        strip = self._segments(width, base, cells)
        if row == self.cursor:
            # the highlight runs the whole width, gaps and separators included
            strip = Strip([Segment(s.text, (s.style or plain) + row_style) for s in strip], strip.cell_length)
        return strip

    # ------------------------------------------------------------ cursor
    def watch_cursor(self, old: int, new: int) -> None:
        self.refresh()
        self.post_message(self.Highlighted(self, self.current_key()))

    def _scroll_to_cursor(self, center: bool = False) -> None:
        rows = self.page_rows
        top = int(self.scroll_offset.y)
        if center:
            top = max(self.cursor - rows // 2, 0)
        elif self.cursor < top:
            top = self.cursor
        elif self.cursor >= top + rows:
            top = self.cursor - rows + 1
        self.scroll_to(y=top, animate=False, force=True)

    def move_to(self, row: int) -> None:
        n = len(self.table)
        if n == 0:
            return
        self.cursor = max(0, min(row, n - 1))
        self._scroll_to_cursor()

    def action_cursor(self, step: int) -> None:
        self.move_to(self.cursor + step)

    def action_page(self, step: int) -> None:
        self.move_to(self.cursor + step * self.page_rows)

    def action_jump(self, where: int) -> None:
        self.move_to(0 if where == 0 else len(self.table) - 1)

    def action_column(self, step: int) -> None:
        self.column_cursor = max(0, min(self.column_cursor + step, len(self.placed()) - 1))
        self.refresh()

    def action_sort(self) -> None:
        placed = self.placed()
        if placed:
            p = placed[self.column_cursor]
            self.sort_by(p.side, p.column)

    def action_unsort(self) -> None:
        keep = self.current_key()
        self.table.unsort()
        self._rows_changed(keep)

    def action_select(self) -> None:
        key = self.current_key()
        if key is not None:
            self.post_message(self.Selected(self, key))

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def on_click(self, event: events.Click) -> None:
        y = event.y
        if y == 1:
            for n, p in enumerate(self.placed()):
                if p.x <= event.x < p.x + p.width:
                    self.column_cursor = n
                    self.sort_by(p.side, p.column)
                    return
        elif y >= HEADER:
            row = int(self.scroll_offset.y) + y - HEADER
            if row < len(self.table):
                if row == self.cursor and event.chain == 2:
                    self.action_select()
                self.move_to(row)
