"""The analysis room: pure functions of a `Run` (and, for modelled costs, a `Link`).

`summary` (totals, per call site and per kernel), `launches` (every launch
as columns), `detectors` (the runtime rules OFF5xx) and `diagnosis` (a
run's findings and verdict, as every report and view asks for them). They read the
trace room and the rule catalog, and nothing that records, renders or
draws: sources, outputs and the TUI sit above them.
"""
