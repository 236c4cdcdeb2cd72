"""The offload-prof TUI (`offload-prof tui`, `offload-prof demo`): the only package that imports Textual.

Layers, bottom up: `session` (the traces and their aggregates, computed
once), `grid` and `tables` (table models: arrays, no text until a row is
on screen), `headline` (the totals and ratio, laid out to the width),
`ranks` (a distributed job's slowest rank and the highlighted rank, for
the Ranks view's pane), then the widgets (`gridview`, `timeline`,
`findings`, `help`) and `app`. The first five import no Textual, so
tests can check what the views hold without starting an app. The TUI
reads the trace and analysis rooms and `profiler.phrases`; the `tui` and `demo`
commands (`profiler.commands`) start it.
"""
