"""The offload-prof TUI (`offload-prof tui`, `offload-prof demo`): the only package that imports Textual.

Layers, bottom up: `session` (the traces and their aggregates, computed
once), `grid` and `tables` (table models: arrays, no text until a row is
on screen), `headline` (the totals and ratio), then the widgets
(`gridview`, `timeline`, `findings`, `help`) and `app`. The first four
import no Textual, so the CLI can build a session, and tests can check
what the views hold, without starting an app.
"""
