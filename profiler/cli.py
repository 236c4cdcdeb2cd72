"""`offload-prof`: the profiler's command line.

Each subcommand is a pair of functions registered in `COMMANDS`: one adds
its parser, one runs it and returns the exit status. Later subcommands
(`tui`, `demo`) register the same way without touching the others.

Exit statuses: `run` passes the target's own status on; `gate` returns 0
(pass), 1 (regression) or 2; everything else 0 on success. Any bad input
(a missing or malformed file, a bad option value) is a one-line
`offload-prof: error: ...` on stderr and status 2, never a traceback.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from dataclasses import asdict
from pathlib import Path
from typing import Any, Callable, Sequence

from . import __version__
from .errors import ProfilerError

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[Callable[[Any], argparse.ArgumentParser], Handler]] = {}

#: options of `run` that take a value, so that the target's own arguments can be split off
_RUN_VALUE_OPTIONS = {"-o", "--output", "--mode", "--link", "--source"}
DEFAULT_TRACE = "offload-prof.json"


def command(name: str, help: str) -> Callable[[Handler], Handler]:
    """Register a subcommand; the decorated function's `configure` attribute adds its options."""
    def register(handler: Handler) -> Handler:
        def add(sub: Any) -> argparse.ArgumentParser:
            p: argparse.ArgumentParser = sub.add_parser(name, help=help, description=help)
            getattr(handler, "configure", lambda _: None)(p)
            p.set_defaults(handler=handler)
            return p

        COMMANDS[name] = (add, handler)
        return handler

    return register


def configure(fn: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
    def attach(handler: Handler) -> Handler:
        handler.configure = fn  # type: ignore[attr-defined]
        return handler

    return attach


# ------------------------------------------------------------------- run
def _run_options(p: argparse.ArgumentParser) -> None:
    p.usage = ("offload-prof run [--source offload|cupti] [--mode naive|batched|both] [-o PATH] [--no-fingerprints] "
               "(-- script.py | -m module) [ARGS ...]")
    p.add_argument("--source", choices=("offload", "cupti"), default="offload",
                   help="offload: offload_core's events (any backend); cupti: every CUDA copy, memset, kernel and "
                        "sync of the process via CUPTI, plain CuPy/PyTorch/Numba included (NVIDIA GPU and the "
                        "cupti extra; default: %(default)s)")
    p.add_argument("--mode", choices=("naive", "batched", "both"),
                   help="OFFLOAD_MODE for the target; 'both' runs it twice in fresh processes (default: as set)")
    p.add_argument("-o", "--output", default=DEFAULT_TRACE,
                   help="trace file (default: %(default)s; with --mode both NAME.naive.json and NAME.batched.json)")
    p.add_argument("--no-fingerprints", dest="fingerprints", action="store_false",
                   help="do not digest copied bytes (faster; OFF502/OFF503 then cannot run)")
    p.add_argument("--link", help="link profile to store with the trace (default: this machine's calibration)")
    p.epilog = "The target runs in this process with its own argv, sys.path[0] and __main__."


@command("run", "run a Python script or module and record its copies, launches and syncs")
@configure(_run_options)
def cmd_run(args: argparse.Namespace) -> int:
    from .runner import Target

    target: Target = args.target
    target.check()
    output = Path(args.output)
    if args.mode == "both":
        return _run_both(args, target, output)
    _check_writable(output)
    return _run_here(args, target, output)


def _check_writable(path: Path) -> None:
    parent = path.parent if str(path.parent) else Path(".")
    if not parent.is_dir():
        raise ProfilerError(f"{path}: folder {parent} does not exist")
    if path.is_dir():
        raise ProfilerError(f"{path}: is a directory; give a file name for the trace")


def _run_here(args: argparse.Namespace, target: Any, output: Path) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from .trace.link import calibrated, resolve
    from .recorder import Recorder
    from .runner import Outcome, run_target, signals_deferred

    cupti = getattr(args, "source", "offload") == "cupti"
    try:
        if args.mode:
            os.environ["OFFLOAD_MODE"] = args.mode
            offload_core.set_mode(args.mode)
        # CUPTI needs no offload_core backend; choosing one would create a CUDA context before CUPTI listens
        backend_name = "cupy" if cupti else offload_core.get_backend().name
        offload_core.get_mode()
    except (OffloadError, ValueError) as exc:
        raise ProfilerError(str(exc)) from None
    link = resolve(args.link) if args.link else calibrated(backend_name)
    if cupti:
        from .cupti import CuptiRecorder

        recorder: Any = CuptiRecorder(fingerprints=args.fingerprints).start()
    else:
        recorder = Recorder(fingerprints=args.fingerprints).start()
    outcome = Outcome("interrupted", 130, "KeyboardInterrupt")
    try:
        outcome = run_target(target)
    finally:
        recorder.stop()
        with signals_deferred():
            run = recorder.run(command=["offload-prof", *args.raw_argv], argv=target.argv, outcome=outcome.outcome,
                               exit_code=outcome.exit_code, link=link)
            try:
                run.save(output)
            except OSError as exc:
                raise ProfilerError(f"{output}: cannot write trace ({exc.strerror or exc})") from None
        sys.stdout.flush()
        kinds = {k: 0 for k in ("h2d", "d2h", "launch")}
        for r in run.records:
            if r.kind in kinds:
                kinds[r.kind] += 1
        print(f"offload-prof: wrote {output} ({len(run.records)} records: {kinds['h2d']} H2D, {kinds['d2h']} D2H, "
              f"{kinds['launch']} launches; backend {run.meta.backend}, mode {run.meta.mode}; "
              f"target {outcome.outcome}, exit {outcome.exit_code})", file=sys.stderr)
        for note in getattr(recorder, "notes", lambda: [])():
            print(f"offload-prof: {note}", file=sys.stderr)
    return outcome.exit_code


def both_paths(output: Path) -> tuple[Path, Path]:
    """`run.json` -> (`run.naive.json`, `run.batched.json`); `x.json.gz` keeps its `.json.gz`."""
    name = output.name
    for suffix in (".json.gz", ".json"):
        if name.endswith(suffix):
            stem, ext = name[: -len(suffix)], suffix
            break
    else:
        stem, ext = name, ".json"
    return output.with_name(f"{stem}.naive{ext}"), output.with_name(f"{stem}.batched{ext}")


def _run_both(args: argparse.Namespace, target: Any, output: Path) -> int:
    paths = both_paths(output)
    _check_writable(paths[0])
    status = 0
    for mode, path in zip(("naive", "batched"), paths):
        cmd = [sys.executable, "-m", "profiler", "run", "--source", args.source, "--mode", mode, "-o", str(path)]
        if not args.fingerprints:
            cmd.append("--no-fingerprints")
        if args.link:
            cmd += ["--link", args.link]
        print(f"offload-prof: running the {mode} path in a fresh process ...", file=sys.stderr, flush=True)
        try:
            code = subprocess.run(cmd + target.command(), env=dict(os.environ, OFFLOAD_MODE=mode)).returncode
        except KeyboardInterrupt:
            return 130
        if code < 0:
            code = 128 - code  # killed by a signal, as a shell reports it
        status = status or code
    print(f"offload-prof: compare them with: offload-prof compare {paths[0]} {paths[1]}", file=sys.stderr)
    return status


def split_run_argv(argv: Sequence[str]) -> tuple[list[str], Any]:
    """Split `run`'s own options from the target (`-- script ARGS`, `script ARGS` or `-m module ARGS`)."""
    from .runner import Target

    i = 0
    while i < len(argv):
        tok = argv[i]
        if tok == "--":
            rest = list(argv[i + 1:])
            return list(argv[:i]), Target("script", rest[0], tuple(rest[1:])) if rest else None
        if tok == "-m":
            if i + 1 >= len(argv):
                raise ProfilerError("run: -m needs a module name")
            return list(argv[:i]), Target("module", argv[i + 1], tuple(argv[i + 2:]))
        if tok.startswith("-m") and not tok.startswith("--"):
            return list(argv[:i]), Target("module", tok[2:], tuple(argv[i + 1:]))
        if tok in _RUN_VALUE_OPTIONS:
            i += 2
            continue
        if tok.startswith("-") and tok != "-":
            i += 1
            continue
        return list(argv[:i]), Target("script", tok, tuple(argv[i + 1:]))
    return list(argv), None


# ---------------------------------------------------------------- report
def _load(path: str) -> Any:
    from .trace.model import Run

    return Run.load(path)


def _model(run: Any, spec: str | None, no_model: bool) -> Any:
    from .trace.link import model_for

    return None if no_model else model_for(run, spec)[0]


def _report_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a trace written by `offload-prof run`")
    p.add_argument("--link", help="model copy costs on this link profile (name or file; default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=int, default=10, help="call sites to list (default: %(default)s)")
    p.add_argument("--format", choices=("text", "json"), default="text", help="output format (default: %(default)s)")


@command("report", "totals, top call sites by copy time and findings of one trace")
@configure(_report_options)
def cmd_report(args: argparse.Namespace) -> int:
    from .analysis.detectors import detect
    from .outputs.report import render_report
    from .analysis.summary import by_site, totals

    run = _load(args.trace)
    link = _model(run, args.link, args.no_model)
    findings = detect(run, link=link)
    if args.format == "json":
        doc = {"trace": args.trace, "meta": asdict(run.meta), "link": None if link is None else asdict(link),
               "totals": asdict(totals(run, link)), "sites": [asdict(s) for s in by_site(run, link)[: args.top]],
               "findings": [asdict(f) for f in findings]}
        sys.stdout.write(json.dumps(doc, indent=1) + "\n")
    else:
        sys.stdout.write(render_report(run, findings, path=args.trace, link=link, top=args.top))
    return 0


def _compare_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("naive", help="trace of the naive path (or any first run)")
    p.add_argument("batched", help="trace of the batched path (or any second run)")
    p.add_argument("--link", help="model copy costs on this link profile (default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=int, default=10, help="call sites to list (default: %(default)s)")


@command("compare", "two traces side by side, with the ratios of wall time, copy time, bytes and counts")
@configure(_compare_options)
def cmd_compare(args: argparse.Namespace) -> int:
    from .analysis.detectors import detect
    from .outputs.report import render_compare

    a, b = _load(args.naive), _load(args.batched)
    link = _model(a, args.link, args.no_model)
    sys.stdout.write(render_compare(a, b, detect(a, link=link), detect(b, link=link),
                                    paths=(args.naive, args.batched), link=link, top=args.top))
    return 0


def _export_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("traces", nargs="+", metavar="TRACE", help="one or more traces (several become separate processes)")
    p.add_argument("--chrome", action="store_true", required=True,
                   help="write Chrome Trace Event JSON (opens in Perfetto and chrome://tracing)")
    p.add_argument("-o", "--output", help="output file (default: the first trace's name with .chrome.json)")


@command("export", "convert traces to Chrome Trace Event JSON for Perfetto")
@configure(_export_options)
def cmd_export(args: argparse.Namespace) -> int:
    from .outputs.chrome import export

    runs = [_load(t) for t in args.traces]
    out = Path(args.output) if args.output else Path(args.traces[0]).with_suffix("").with_suffix(".chrome.json")
    _check_writable(out)
    export(runs, out)
    print(f"offload-prof: wrote {out} ({len(runs)} run(s)); open it at https://ui.perfetto.dev", file=sys.stderr)
    return 0


# ------------------------------------------------------------- calibrate
def _calibrate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("auto", "numpy", "cupy"), help="backend to measure (default: OFFLOAD_BACKEND or auto)")
    p.add_argument("--size", default="64MiB", help="bytes per bandwidth copy (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=5, help="repeats per figure; the median is kept (default: %(default)s)")
    p.add_argument("--name", help="profile name (default: local-BACKEND, which recordings on this machine pick up)")
    p.add_argument("-o", "--output", help="profile file (default: the user's profile folder)")
    p.add_argument("--dry-run", action="store_true", help="measure and print, save nothing")


@command("calibrate", "measure this machine's copy bandwidths, small-copy latency and launch overhead")
@configure(_calibrate_options)
def cmd_calibrate(args: argparse.Namespace) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from .calibrate import describe, measure
    from .trace.link import save_link, user_dir
    from .units import parse_size

    try:
        size = parse_size(args.size, "--size")
    except ValueError as exc:
        raise ProfilerError(str(exc)) from None
    if size < 4096 or args.repeats < 1:
        raise ProfilerError("--size must be at least 4 KiB and --repeats at least 1")
    try:
        if args.backend:
            offload_core.set_backend(args.backend)
        link = measure(size=size, repeats=args.repeats, name=args.name,
                       progress=lambda m: print(f"offload-prof: {m} ...", file=sys.stderr, flush=True))
    except OffloadError as exc:
        raise ProfilerError(str(exc)) from None
    sys.stdout.write(describe(link))
    if not args.dry_run:
        path = Path(args.output) if args.output else user_dir() / f"{link.name}.yaml"
        try:
            save_link(link, path)
        except OSError as exc:
            raise ProfilerError(f"{path}: cannot write link profile ({exc.strerror or exc})") from None
        print(f"offload-prof: saved {path}", file=sys.stderr)
    return 0


@command("links", "list the link profiles (shipped and calibrated) reports can model costs on")
def cmd_links(args: argparse.Namespace) -> int:
    from .trace.link import available, load_link

    for name, path in sorted(available().items()):
        try:
            source = load_link(path).source
        except ProfilerError as exc:
            source = f"unreadable: {exc}"
        print(f"{name:<16} {path}\n{'':<16} {source}")
    return 0


# ------------------------------------------------------------------ gate
def _gate_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("run", help="the trace to check")
    p.add_argument("--baseline", help="baseline file (or a trace) to compare counts and bytes with, exactly")
    p.add_argument("--budget", help="YAML budget: absolute limits and time tolerances")
    p.add_argument("--time", action="append", default=[], metavar="FIELD:TOL",
                   help="also gate a time on the baseline, e.g. copy:20%% or wall:5ms (repeatable)")
    p.add_argument("--allow-fewer", action="store_true", help="pass when copies went down (default: exact both ways)")
    p.add_argument("--update-baseline", action="store_true", help="write the run's baseline to --baseline and pass")
    p.add_argument("--format", choices=("text", "github", "json"), default="text", help="output format (default: %(default)s)")


@command("gate", "fail CI on copy regressions against a baseline and a budget (exit 0 pass, 1 regression, 2 bad input)")
@configure(_gate_options)
def cmd_gate(args: argparse.Namespace) -> int:
    from .outputs.baseline import Baseline
    from .outputs.budget import load_budget, parse_tolerance
    from .outputs.gate import checks_for, evaluate, render

    run = _load(args.run)
    if args.update_baseline:
        if not args.baseline:
            raise ProfilerError("--update-baseline needs --baseline PATH to write")
        path = Baseline.from_run(run).save(args.baseline)
        print(f"offload-prof: wrote baseline {path} ({len(Baseline.from_run(run).flows)} flows)", file=sys.stderr)
        return 0
    if not args.baseline and not args.budget:
        raise ProfilerError("gate needs --baseline BASE and/or --budget FILE to check the run against")
    baseline = Baseline.load(args.baseline) if args.baseline else None
    budget = load_budget(args.budget) if args.budget else None
    tolerances = [parse_tolerance(t) for t in args.time]
    if (tolerances or (budget is not None and budget.times)) and baseline is None:
        raise ProfilerError("time tolerances compare with a baseline; pass --baseline")
    result = evaluate(checks_for(run, baseline, budget, tolerances, args.allow_fewer))
    sys.stdout.write(render(result, args.format))
    return result.exit_code


# ---------------------------------------------------------- import-rocprof
def _import_rocprof_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("results", help="rocprofv3 JSON output (--output-format json), e.g. out/HOST/PID_results.json")
    p.add_argument("-o", "--output", default=DEFAULT_TRACE, help="trace file to write (default: %(default)s)")
    p.add_argument("--pid", type=int, help="the process to import when the file holds several")
    p.epilog = ("Record with: rocprofv3 --kernel-trace --memory-copy-trace --hip-runtime-trace --output-format json "
                "-d out -- python app.py")


@command("import-rocprof", "convert rocprofv3 JSON output (AMD GPUs) into a trace for report, compare and gate")
@configure(_import_rocprof_options)
def cmd_import_rocprof(args: argparse.Namespace) -> int:
    from .cupti.rocprof import load_rocprof

    output = Path(args.output)
    _check_writable(output)
    run = load_rocprof(args.results, pid=args.pid, command=["offload-prof", *args.raw_argv])
    try:
        run.save(output)
    except OSError as exc:
        raise ProfilerError(f"{output}: cannot write trace ({exc.strerror or exc})") from None
    kinds = {k: sum(1 for r in run.records if r.kind == k) for k in ("h2d", "d2h", "launch", "sync")}
    print(f"offload-prof: wrote {output} ({len(run.records)} records: {kinds['h2d']} H2D, {kinds['d2h']} D2H, "
          f"{kinds['launch']} launches, {kinds['sync']} syncs; {run.meta.device})", file=sys.stderr)
    return 0
# `tui` and `demo` live beside the TUI; importing them registers them here.
from .tui import commands as _tui_commands  # noqa: E402,F401


# ------------------------------------------------------------------ main
def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="offload-prof",
        description="Record host<->device copies of offload_core programs, find runtime anti-patterns, gate CI.",
    )
    parser.add_argument("--version", action="version", version=f"offload-prof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for add, _ in COMMANDS.values():
        add(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    from offload_core.catalog import CatalogError

    raw = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser()
    try:
        if raw and raw[0] == "run":
            opts, target = split_run_argv(raw[1:])
            args = parser.parse_args(["run", *opts])
            if target is None:
                raise ProfilerError("run needs a target: -- script.py [ARGS] or -m module [ARGS]")
            args.target = target
        else:
            args = parser.parse_args(raw)
        args.raw_argv = raw
        return int(args.handler(args))
    except (ProfilerError, CatalogError) as exc:
        print(f"offload-prof: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("offload-prof: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # `offload-prof report x | head`
        sys.stderr.close()
        return 0


if __name__ == "__main__":
    raise SystemExit(main())
