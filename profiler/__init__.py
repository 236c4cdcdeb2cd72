"""profiler: records copies and launches, finds runtime anti-patterns, shows and gates them.

The package is laid out in rooms by role, each importing only the rooms
below it (the order is checked on the real import graph by
tests/test_import_graph.py and described in docs/design.md):

* `profiler.trace`: the data model every other room reads (`Run`,
  `Record`, `Site`, `Meta`, `Link`), its columns and its file format.
* `profiler.sources`: what turns a running program into a `Run`:
  offload_core's `Recorder`, CUPTI, rocprofv3 import, the target runner,
  the suite recording, calibration.
* `profiler.analysis`: pure functions of a `Run`: summaries, the
  per-launch table, the runtime detectors OFF501-OFF507.
* `profiler.guard`: the transfer guard (`no_transfers`, `allow`): scopes
  in which copies and syncs are mistakes, raised at the user's line.
* `profiler.outputs`: reports, the Chrome export, baselines, budgets and
  the gate.
* `profiler.tui`: the Textual app.
* `profiler.commands`: one module per `offload-prof` command, listed in
  `profiler.commands.COMMANDS`; `profiler.cli` builds the parser from it.

`profiler.errors`, `profiler.units`, `profiler.files` (bounded, safe
reading of input files and atomic writing of output files) and
`profiler.version` sit below every room;
`profiler.cli`, `profiler.pytest_plugin` (the pytest fixture and marker),
`profiler.model` (the trace model under its public name),
`profiler.notebook` (the Jupyter magics) and this package's own module
above them. `import profiler` loads none of them (the pytest plugin is
imported by every pytest run of an environment that has offload-guard
installed).

`%load_ext profiler` in IPython or Jupyter calls `load_ipython_extension`,
which registers `%%offload_prof` (`profiler.notebook`).
"""

from __future__ import annotations

from typing import Any

from .version import __version__

__all__ = ["__version__", "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """Register the profiler's magics with `ipython` (what `%load_ext profiler` calls)."""
    from .notebook import register

    register(ipython)
