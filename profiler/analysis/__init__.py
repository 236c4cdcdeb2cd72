"""The analysis room: pure functions of a `Run` (and, for modelled costs, a `Link`).

`summary` (totals, per call site and per kernel), `launches` (every launch
as columns) and `detectors` (the runtime rules OFF5xx). They read the
trace room and the rule catalog, and nothing that records, renders or
draws: sources, outputs and the TUI sit above them.
"""
