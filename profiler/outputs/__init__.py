"""The outputs room: what the profiler writes for people and machines, from a `Run` and its analyses.

`report` (text and JSON reports, `compare`), `html` (the self-contained
HTML page and the notebook's cell report, built from one set of parts), `chrome` (Chrome Trace Event
JSON for Perfetto), `flat` (the records as plain JSON objects), `baseline` and `budget` (what the gate checks against)
and `gate` (the CI checks and their text, JSON and GitHub renderings).
They read the trace and analysis rooms; the TUI and the commands sit
above them.
"""
