"""The Jupyter magics: `%load_ext profiler`, then `%%offload_prof` records a cell and shows its report.

    %load_ext profiler

    %%offload_prof --mode naive
    for _ in range(100):
        offload(daxpy, y, x, 2.0)

The cell runs as any cell does (IPython's own `run_cell`, so its
variables land in the notebook and an exception shows its traceback),
recorded by the same sources as `offload-prof run`: offload_core's events
on any backend, or CUPTI on NVIDIA (`--source cupti`). What follows is
the HTML report's own pieces (`profiler.outputs.html.page.cell_html`: the
verdict, totals, the call sites that copied most and the findings with
their expected savings), with call sites named as Jupyter names cells in
tracebacks (`Cell In[3], line 4`) and the line counted as the editor
shows it, the magic's line included. Where no HTML can be shown (a
terminal IPython), the cell's value prints as the text report.

`%offload_prof_guard` turns the transfer guard (`profiler.guard`) on for
the cells that follow: each runs inside its own `no_transfers(...)` scope,
opened before the cell and closed after it by IPython's `pre_run_cell` and
`post_run_cell` events, so the scope lives in the cell's own context (a
kernel may run each cell in a task of its own, where a scope opened by an
earlier cell would not be seen) and a forbidden copy raises at the cell's
line. `%offload_prof_guard off` ends it after the cell it is in.

This module imports IPython, so only the extension loader imports it.
"""

from __future__ import annotations

import linecache
import sys
from dataclasses import dataclass, replace
from typing import Any, Callable, Sequence

from IPython.core.error import UsageError
from IPython.core.magic import Magics, cell_magic, line_magic, magics_class
from IPython.core.magic_arguments import argument, magic_arguments, parse_argstring

from .analysis.diagnosis import analyse
from .errors import ProfilerError
from .guard import NoTransfers, Rules
from .analysis.detectors import Finding
from .analysis.verdict import Verdict
from .guard.records import name_sites
from .outputs.html.page import Analysed, cell_html
from .outputs.html.parts import Where
from .outputs.report import render_report
from .trace.model import Run
from .trace.records import Link, Site, relative_file


@dataclass(frozen=True, repr=False)
class CellReport:
    """What `%%offload_prof` gives back: rich HTML in a notebook, the text report elsewhere, and the run itself."""

    run: Run
    html: str
    text: str

    def _repr_html_(self) -> str:
        return self.html

    def __repr__(self) -> str:
        return self.text


def register(ipython: Any) -> None:
    """Add the magics to an IPython shell (`%load_ext profiler` calls this through the package)."""
    ipython.register_magics(OffloadProfMagics)


def calling_cell(shell: Any) -> str:
    """`In[3]`: the cell this magic runs in, as IPython names it in that cell's tracebacks.

    Taken from the cell's own code on the call stack, because the shell's
    execution count during a cell differs between kernels (ipykernel 7
    counts the running cell already, IPython's terminal does not).
    """
    frame = sys._getframe(1)
    while frame is not None:
        name = shell.compile.format_code_name(frame.f_code.co_filename)
        if name is not None:
            return str(name[1])
        frame = frame.f_back
    return f"In[{shell.execution_count}]"


def cell_where(shell: Any, body: str, cell: str, cwd: str) -> Where:
    """Call sites as Jupyter names them: `Cell In[3], line 4 in step` for code of a cell, `app.py:9 in f` otherwise.

    The magic's body is compiled apart from its cell, without the magic's
    line and under the next execution number, so a site in the body is
    named after the magic's own cell (`cell`) and one line further down,
    where the editor shows it.
    """
    transformed = shell.transform_cell(body)

    def where(site: Site | None) -> str:
        if site is None:
            return "(no call site)"
        name = shell.compile.format_code_name(site.file)
        function = "" if site.function == "<module>" else f" in {site.function}"
        if name is None:
            return f"{relative_file(site.file, cwd)}:{site.line}{function}"
        if "".join(linecache.getlines(site.file)) == transformed:
            return f"Cell {cell}, line {site.line + 1}{function}"
        return f"{name[0]} {name[1]}, line {site.line}{function}"

    return where


def cell_sites(shell: Any, body: str, cell: str) -> Callable[[Site | None], Site | None]:
    """Call sites renamed for the text report as `cell_where` names them: the cell's name as the file, the line as the
    editor shows it (`Cell In[3]:4 in <module>`), so the text names the cell and line the HTML names.

    The text report prints a site's file and line as they are; a cell's
    code has a file of IPython's (`/tmp/ipykernel_.../123.py`, or
    `<ipython-input-3-...>`) and its lines counted without the magic's.
    """
    transformed = shell.transform_cell(body)

    def renamed(site: Site | None) -> Site | None:
        if site is None:
            return None
        name = shell.compile.format_code_name(site.file)
        if name is None:
            return site
        if "".join(linecache.getlines(site.file)) == transformed:
            return replace(site, file=f"Cell {cell}", line=site.line + 1)
        return replace(site, file=f"{name[0]} {name[1]}")

    return renamed


def cell_text(run: Run, findings: Sequence[Finding], judged: Verdict | None, rename: Callable[[Site | None], Site | None],
              *, path: str, link: Link | None, top: int) -> str:
    """The text report of a cell's run with its call sites renamed (`cell_sites`); the run itself is left as it is."""
    records = tuple(replace(r, site=rename(r.site)) if r.site is not None else r for r in run.records)
    shown = [replace(f, site=rename(f.site)) for f in findings]
    if judged is not None:
        judged = replace(judged, causes=tuple(replace(c, site=rename(c.site)) for c in judged.causes))
    return render_report(Run(run.meta, records), shown, path=path, link=link, top=top, judged=judged)


class CellGuard:
    """The transfer guard around each cell after `%offload_prof_guard`, until `%offload_prof_guard off`."""

    def __init__(self, shell: Any) -> None:
        self.shell = shell
        #: the rules later cells run under; None: off
        self.rules: Rules | None = None
        self.scope: NoTransfers | None = None
        self._registered = False

    def turn_on(self, rules: Rules) -> None:
        self.rules = rules
        if not self._registered:
            self.shell.events.register("pre_run_cell", self.before_cell)
            self.shell.events.register("post_run_cell", self.after_cell)
            name_sites(self.cell_line)  # for as long as the kernel lives, as the events are
            self._registered = True

    def cell_line(self, site: Site) -> str | None:
        """`Cell In[4], line 2 in f`: a line of a cell as Jupyter names it (not its temporary file); None elsewhere."""
        name = self.shell.compile.format_code_name(site.file)
        if name is None:
            return None
        function = "" if site.function == "<module>" else f" in {site.function}"
        return f"{name[0]} {name[1]}, line {site.line}{function}"

    def turn_off(self) -> None:
        self.rules = None  # the cell running now keeps its scope until it ends

    def before_cell(self, info: Any) -> None:
        if self.rules is not None and self.scope is None:
            scope = NoTransfers(self.rules, summary=True)
            try:
                scope.__enter__()
            except Exception as exc:  # a source that cannot start: say so, and run the cell unguarded
                print(f"offload-prof guard: {exc}", file=sys.stderr)
                return
            self.scope = scope

    def after_cell(self, result: Any) -> None:
        scope, self.scope = self.scope, None
        if scope is None:
            return
        error = getattr(result, "error_in_exec", None)
        try:
            scope.__exit__(type(error) if error is not None else None, error,
                           error.__traceback__ if error is not None else None)
        except Exception as exc:  # what could not be raised at a line of the cell: shown, as IPython cannot raise it
            print(f"{type(exc).__name__}: {exc}", file=sys.stderr)


@magics_class
class OffloadProfMagics(Magics):  # type: ignore[misc]  # IPython is untyped
    """`%%offload_prof`: record one cell and show its report; `%offload_prof_guard`: guard the cells that follow."""

    def __init__(self, shell: Any) -> None:
        super().__init__(shell)
        self.guard = CellGuard(shell)

    @magic_arguments()  # type: ignore[misc]
    @argument("state", nargs="?", choices=("on", "off"), default="on", help="on (the default) or off")
    @argument("--mode", choices=("raise", "warn", "log"), default="raise",
              help="raise a TransferGuardError at the line (default), warn once per line, or log a summary per cell")
    @argument("--syncs", action="store_true", help="forbid syncs too")
    @argument("--allow-h2d", action="store_true", help="let host->device copies through")
    @argument("--allow-d2h", action="store_true", help="let device->host copies through")
    @argument("--min-bytes", default="0", help="let smaller copies through (4096, 64 KiB)")
    @argument("--allow-scalars", action="store_true", help="let one-element reads for control flow through")
    @argument("--source", choices=("auto", "offload", "cupti"), default="auto",
              help="what sees the copies: offload_core's events, CUPTI (NVIDIA), or both where they can run")
    @line_magic  # type: ignore[misc]
    def offload_prof_guard(self, line: str) -> None:
        """Forbid host<->device copies (and, with --syncs, syncs) in the cells after this one."""
        args = parse_argstring(self.offload_prof_guard, line)
        if args.state == "off":
            was = self.guard.rules is not None
            self.guard.turn_off()
            print("offload-prof: the transfer guard is off after this cell" if was else
                  "offload-prof: the transfer guard was not on")
            return
        try:
            rules = Rules.make(h2d=not args.allow_h2d, d2h=not args.allow_d2h, syncs=args.syncs, mode=args.mode,
                               min_bytes=args.min_bytes, allow_scalars=args.allow_scalars, source=args.source)
        except (TypeError, ValueError) as exc:
            raise UsageError(str(exc)) from None
        self.guard.turn_on(rules)
        print(f"offload-prof: the transfer guard is on for the cells after this one: {rules.spec()} "
              "(`%offload_prof_guard off` ends it)")

    @magic_arguments()  # type: ignore[misc]
    @argument("--mode", choices=("naive", "batched"),
              help="run the cell with offload_core in this mode (default: as set); the mode is restored afterwards")
    @argument("--source", choices=("offload", "cupti"), default="offload",
              help="offload: offload_core's events (any backend); cupti: every CUDA copy, kernel and sync of the "
                   "process (NVIDIA GPU and the cupti extra)")
    @argument("--top", type=int, default=5, help="call sites to list, at least 1 (default: 5)")
    @argument("--link", help="model copy costs on this link profile (default on NumPy runs: pcie5-x16)")
    @argument("--no-model", action="store_true", help="show measured figures only")
    @argument("--no-fingerprints", dest="fingerprints", action="store_false",
              help="do not digest copied bytes (faster; OFF502/OFF503 then cannot run)")
    @argument("-o", "--output", help="also save the trace to this file, for `offload-prof compare`, `tui` or `gate`")
    @cell_magic  # type: ignore[misc]
    def offload_prof(self, line: str, cell: str) -> CellReport:
        """Record the cell (offload_core's events, or CUPTI) and show its verdict, call sites and findings."""
        args = parse_argstring(self.offload_prof, line)
        if args.top < 1:
            raise UsageError(f"--top must be at least 1, got {args.top}")
        try:
            return self._record(args, line, cell)
        except ProfilerError as exc:
            raise UsageError(str(exc)) from None

    def _record(self, args: Any, line: str, cell: str) -> CellReport:
        import offload_core

        from pathlib import Path

        from .commands.common import check_writable, model_link, save_trace
        from .sources.recorder import Recorder
        from .trace.link import calibrated, resolve

        cell_name = calling_cell(self.shell)
        if args.output:  # before the cell runs, not after
            check_writable(Path(args.output))
        stored: Link | None = resolve(args.link) if args.link else None
        previous = offload_core.get_mode()
        if args.mode:
            offload_core.set_mode(args.mode)
        try:
            if args.source == "cupti":
                from .sources.cupti import CuptiRecorder

                recorder: Recorder | CuptiRecorder = CuptiRecorder(fingerprints=args.fingerprints)
                backend = "cupy"
            else:
                recorder = Recorder(fingerprints=args.fingerprints)
                backend = offload_core.get_backend().name
            recorder.start()
            try:
                result = self.shell.run_cell(cell, store_history=False)
            finally:
                recorder.stop()
        finally:
            offload_core.set_mode(previous)
        failed = bool(result.error_before_exec or result.error_in_exec)
        run = recorder.run(command=("%%offload_prof", *line.split()), argv=(cell_name,),
                           outcome="exception" if failed else "ok", exit_code=1 if failed else 0,
                           link=stored or calibrated(backend))
        link = model_link(run, args.link, args.no_model)
        findings, judged = analyse(run, link)
        if args.output:
            save_trace(run, Path(args.output))
        title = f"offload-prof: cell {cell_name}" + (" (it raised: the report covers what ran)" if failed else "")
        html = cell_html(Analysed(run, args.output or "", "", tuple(findings), judged),
                         where=cell_where(self.shell, cell, cell_name, run.meta.cwd), link=link, top=args.top, title=title)
        text = cell_text(run, findings, judged, cell_sites(self.shell, cell, cell_name),
                         path=args.output or f"cell {cell_name}", link=link, top=args.top)
        return CellReport(run, html, text)
