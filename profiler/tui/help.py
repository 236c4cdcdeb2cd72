"""The help screen: every key binding of the app and its views, read from the bindings themselves.

Listing the bindings by hand would drift from what the keys do; this
screen walks the `BINDINGS` of the app and of each view's widget class,
so what it says is what is bound.
"""

from __future__ import annotations

from typing import Iterable

from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Static

KEY_NAMES = {"question_mark": "?", "slash": "/", "escape": "Esc", "enter": "Enter", "pageup": "PgUp",
             "pagedown": "PgDn", "home": "Home", "end": "End", "up": "↑", "down": "↓", "left": "←", "right": "→",
             "ctrl+p": "Ctrl+P", "tab": "Tab", "shift+tab": "Shift+Tab"}


def key_label(keys: str) -> str:
    return " ".join(KEY_NAMES.get(k.strip(), k.strip()) for k in keys.split(","))


def binding_rows(groups: Iterable[tuple[str, Iterable[BindingType]]]) -> list[tuple[str, str, str]]:
    """(group, keys, what) for every described binding."""
    rows = []
    for group, bindings in groups:
        for b in bindings:
            if not isinstance(b, Binding) or not b.description:
                continue
            what = b.description + (f": {b.tooltip}" if b.tooltip else "")
            rows.append((group, key_label(b.key), what))
    return rows


class HelpScreen(ModalScreen[None]):
    """A modal list of the bindings; any of Esc, q or ? closes it."""

    BINDINGS = [Binding("escape,q,question_mark", "dismiss", "Close")]

    def __init__(self, groups: list[tuple[str, Iterable[BindingType]]]) -> None:
        super().__init__()
        self.rows = binding_rows(groups)

    def compose(self) -> ComposeResult:
        table = Table(box=None, show_header=False, pad_edge=False, expand=True)
        table.add_column("keys", style="bold", no_wrap=True)
        table.add_column("what")
        last = None
        for group, keys, what in self.rows:
            if group != last:
                table.add_row(Text(group, style="bold underline"), "")
                last = group
            table.add_row(keys, what)
        with VerticalScroll(id="help-box"):
            yield Static(Text("offload-prof TUI: keys", style="bold"), id="help-title")
            yield Static(table, id="help-table")
            yield Static(Text("Esc, q or ? closes this screen", style="dim"), id="help-close")
