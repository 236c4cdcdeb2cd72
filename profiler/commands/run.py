"""`offload-prof run`: run a script or module in this process and record its copies, launches and syncs.

The target runs in-process with its own argv, `sys.path[0]` and
`__main__`; the trace is written even if it raises, exits, calls
`os._exit()` or is interrupted, and its exit status is passed on. Its
child processes record themselves (`profiler.sources.children`) and the
trace merges their parts. `--mode both` runs it twice, each path in a
fresh process, and names only the traces those processes wrote. `run`'s own options end where the
target begins (`-- script.py`, `script.py` or `-m module`), so the
target's arguments are split off before argparse sees them
(`split_run_argv`, called by `profiler.cli.main`).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Callable, Iterator, Sequence

from ..errors import ProfilerError
from .common import DEFAULT_TRACE, check_writable, positive_int, save_trace

if TYPE_CHECKING:
    from ..guard.scopes import NoTransfers
    from ..sources import Source
    from ..sources.gathering import Gathered
    from ..sources.parts import Unrecorded
    from ..sources.runner import Ending, Target
    from ..trace.model import Run
    from ..trace.records import Link

NAME = "run"
HELP = "run a Python script or module and record its copies, launches and syncs"

#: how much earlier than this rank another rank of its job may have started (file times against this clock)
_RANK_START_SLACK_NS = 10_000_000_000

#: options of `run` that take a value, so that the target's own arguments can be split off
_VALUE_OPTIONS = {"-o", "--output", "--mode", "--link", "--source", "--max-records"}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.usage = ("offload-prof run [--source offload|cupti] [--mode naive|batched|both] [-o PATH] [--no-fingerprints] "
               "[--every-launch] [--link NAME|FILE] [--max-records N] (-- script.py | -m module) [ARGS ...]")
    p.add_argument("--source", choices=("offload", "cupti"), default="offload",
                   help="offload: offload_core's events (any backend); cupti: every CUDA copy, memset, kernel and "
                        "sync of the process via CUPTI, plain CuPy/PyTorch/Numba included (NVIDIA GPU and the "
                        "cupti extra; default: %(default)s)")
    p.add_argument("--mode", choices=("naive", "batched", "both"),
                   help="OFFLOAD_MODE for the target; 'both' runs it twice in fresh processes (default: as set)")
    p.add_argument("-o", "--output", default=DEFAULT_TRACE,
                   help="trace file, its missing folders created (default: %(default)s; with --mode both "
                        "NAME.naive.json and NAME.batched.json)")
    p.add_argument("--no-fingerprints", dest="fingerprints", action="store_false",
                   help="do not digest copied bytes (faster; OFF502/OFF503 then cannot run)")
    p.add_argument("--every-launch", action="store_true",
                   help="time every launch with its own device events (offload_core on a GPU) and take every "
                        "launch's call site (CUPTI); by default both are sampled, which costs far less")
    p.add_argument("--link", help="link profile to store with the trace (default: this machine's calibration)")
    from ..sources.recordcap import MEMORY_SHARE, MIN_DEFAULT_RECORDS, PEAK_BYTES_PER_RECORD, default_max_records

    p.add_argument("--max-records", type=positive_int, metavar="N",
                   help="keep the first N records of each process and count the rest (meta.dropped, one warning "
                        "line); records go to a file beside the trace as they come, so memory stays bounded and a "
                        "killed run keeps what was written (offload-prof recover). Default: "
                        f"{MEMORY_SHARE * 100:.0f}%% of the memory available when the run starts over "
                        f"{PEAK_BYTES_PER_RECORD} bytes a record (the peak at the end of a run, per record kept), at "
                        f"least {MIN_DEFAULT_RECORDS:,}: {default_max_records():,} on this machine now. With --source "
                        "cupti: child processes' records only")
    p.epilog = ("The target runs in this process with its own argv, sys.path[0] and __main__. "
                "OFFLOAD_GUARD=raise|warn|log runs it under a transfer guard (profiler.guard; kinds from "
                "OFFLOAD_GUARD_KINDS=h2d,d2h,sync, default h2d,d2h): with raise the first forbidden copy raises at "
                "its line and the run exits 1.")


def execute(args: argparse.Namespace) -> int:
    target: Target = args.target
    target.check()
    output = Path(args.output)
    if args.mode == "both":
        return _run_both(args, target, output)
    check_writable(output)
    return _run_here(args, target, output)


def _save_job(run: Run, output: Path, started_ns: int) -> list[str]:
    """Write the trace of a job's ranks and say what was written (lines for stderr).

    A job recorded as a whole (`run -- torchrun ...`: the ranks are child
    processes) is written to `output` and each rank's trace beside it. A
    rank that records itself (`torchrun ... -m profiler run`: the launcher
    started this process with `RANK` set) writes its own trace beside
    `output`, and the last rank of the job to finish merges the job's
    traces into `output`: it is the first to find them all written
    (renamed into place whole) by processes of its job since it started.
    """
    from ..sources.ranks import merge_lock, merge_ranks
    from ..trace.job import job_of
    from ..trace.model import Run
    from ..trace.tracefile import rank_path

    own = run.meta.processes[0].rank if run.meta.processes else None
    if own is None:
        save_trace(run, output)
        job = job_of(run)
        if job is None:
            return []
        for rank, part in job.rank_runs().items():
            save_trace(part, rank_path(output, rank))
        missing = f"; no trace of rank(s) {', '.join(map(str, job.missing))}" if job.missing else ""
        return [f"job of {len(job.ranks)} rank(s) (world size {job.world_size}): per-rank traces "
                f"{rank_path(output, job.ranks[0]).name} ... {rank_path(output, job.ranks[-1]).name}{missing}"]
    mine = rank_path(output, own.rank)
    save_trace(run, mine)
    found: dict[int, Run] = {own.rank: run}
    for r in range(own.world_size):
        path = rank_path(output, r)
        if r == own.rank or not path.exists():
            continue
        try:
            if path.stat().st_mtime_ns < started_ns:  # written before this rank started: an earlier job's
                continue
            other = Run.load(path)
        except (OSError, ProfilerError):
            continue
        first = other.meta.processes[0].rank if other.meta.processes else None
        if first is not None and first.rank == r and first.job == own.job:
            found[r] = other
    if len(found) < own.world_size:
        return [f"rank {own.rank} of {own.world_size} wrote {mine}; the job's trace {output} is written by the "
                "last rank to finish"]
    with merge_lock(output):  # ranks that finish together may both find every part: one merges
        try:
            merged = output.stat().st_mtime_ns >= started_ns
        except OSError:
            merged = False
        if merged:
            return [f"rank {own.rank} of {own.world_size} wrote {mine}; another rank finishing with it wrote "
                    f"the job's trace {output}"]
        save_trace(merge_ranks(list(found.values())), output)
    return [f"rank {own.rank} of {own.world_size} wrote {mine} and, the last to finish, the job's trace {output}"]



def _run_here(args: argparse.Namespace, target: Target, output: Path) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from ..guard.environment import from_environment
    from ..sources import Source
    from ..sources.children import ChildRecording
    from ..sources.recordcap import default_max_records
    from ..sources.runner import Ending, run_target, signals_deferred
    from ..sources.spool import SpoolingRecorder
    from ..trace.link import calibrated, resolve
    from ..trace.tracefile import rank_path

    started_ns = time.time_ns() - _RANK_START_SLACK_NS
    cupti = getattr(args, "source", "offload") == "cupti"
    every_launch = getattr(args, "every_launch", False)
    if every_launch:  # read by offload_core's GPU backend when it starts, here and in every child
        os.environ["OFFLOAD_LAUNCH_TIMING"] = "exact"
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
    guarded = from_environment(os.environ)  # a bad OFFLOAD_GUARD is refused before anything runs
    recorder: Source
    if cupti:
        from ..sources.cupti import CuptiRecorder

        from ..sources.cupti.probe import version_mismatch

        recorder = CuptiRecorder(fingerprints=args.fingerprints, launch_sites="all" if every_launch else "sampled").start()
        mismatch = version_mismatch()
        if mismatch:  # said before the target runs, not only after a long run whose records cannot be read
            print(f"offload-prof: warning: {mismatch}; the activity records may not be readable", file=sys.stderr)
    max_records = args.max_records or default_max_records()
    place, prefix = run_folder(output)
    _say_leftovers(place, prefix, output)
    children = ChildRecording("cupti" if cupti else "offload", args.fingerprints, every_launch,
                              0 if cupti else max_records, place, prefix)
    finished: list[Ending] = []

    def finish(outcome: Ending, hard_exit: int | None = None) -> None:
        """Stop, merge the children's parts, write the trace and say so; once, from the end or from os._exit."""
        if finished:
            return
        finished.append(outcome)
        with progress_notice("offload-prof: the target ended; reading its records and writing the trace ..."):
            recorder.stop()
            gathered = children.stop(keep=True)  # the folder holds the target's spool: read below
            try:
                with signals_deferred():
                    run = _merged(recorder, gathered, target, outcome, hard_exit, link,
                                  ["offload-prof", *args.raw_argv])
                    job_lines = _save_job(run, output, started_ns)
            finally:
                children.remove()
        if hard_exit is None:
            sys.stdout.flush()  # the target's output first (os._exit leaves it unflushed, as it would unprofiled)
        mine = run.meta.processes[0].rank if run.meta.processes else None
        _report(output if mine is None else rank_path(output, mine.rank), run, outcome, recorder.notes(),
                gathered.unrecorded, cupti, max_records)
        for line in job_lines:
            print(f"offload-prof: {line}", file=sys.stderr)

    try:
        children.start(on_os_exit=lambda code: finish(Ending("exit", code & 0xFF), code),
                       detach=lambda: recorder.detach())
        if not cupti:  # the target's own events go to a spool in the run's folder as they come
            assert children.folder is not None
            recorder = SpoolingRecorder(children.folder, fingerprints=args.fingerprints, max_records=max_records,
                                        description={"output": str(output.absolute()), "argv": list(target.argv),
                                                     "command": ["offload-prof", *args.raw_argv], "link": link}
                                        ).start()
    except OSError as exc:
        if cupti:
            recorder.stop()
        children.stop()
        raise ProfilerError(f"cannot make a folder for the run's records ({exc.strerror or exc})") from None
    outcome = Ending("interrupted", 130)
    try:
        if guarded is None:
            outcome = run_target(target)
        else:
            outcome = _run_guarded(target, guarded)
    finally:
        finish(outcome)
    return outcome.exit_code


#: how the folder of a run's records is named beside its trace: `.t.json.offload-prof-run-XXXXXXXX`
RUN_FOLDER = ".{name}.offload-prof-run-"


def run_folder(output: Path) -> tuple[Path | None, str]:
    """Where a run writing `output` keeps its records while it runs: a hidden folder beside the trace (on the disk
    the trace goes to, not a /tmp that may be memory, and where the user finds it if the run is killed); the
    temporary folder for a device (`-o /dev/null`)."""
    from offload_core.outfiles import is_device, resolved

    if is_device(output):
        return None, "offload-prof-run-"
    real = resolved(output) if output.is_symlink() else output.absolute()
    real.parent.mkdir(parents=True, exist_ok=True)
    return real.parent, RUN_FOLDER.format(name=real.name)


def _say_leftovers(place: Path | None, prefix: str, output: Path) -> None:
    """One line for each folder an earlier run writing the same trace left when it was killed."""
    from ..sources.gathering import process_running
    from ..sources.spool import SPOOL_NAME, own_folder, spool_description
    from ..trace.tracefile import recovered_path

    if place is None:
        return
    for folder in sorted(place.glob(prefix + "*")):
        spool = folder / SPOOL_NAME
        try:
            info = spool_description(spool) if own_folder(folder) and spool.is_file() else None
        except OSError:
            continue
        pid = info.get("pid") if info is not None else None
        if isinstance(pid, int) and not process_running(pid):
            print(f"offload-prof: an earlier run writing {output} was killed; what it recorded is in {folder}: "
                  f"`offload-prof recover {folder}` makes a trace of it ({recovered_path(output)})", file=sys.stderr)


def _run_guarded(target: Target, guarded: NoTransfers) -> Ending:
    """The target inside the `OFFLOAD_GUARD` scope; its findings on stderr, and a failure if it made any."""
    import warnings

    from ..guard import GuardSourceWarning, Summary, TransferGuardError
    from ..sources.runner import Ending, run_target

    def say(notes: list[warnings.WarningMessage]) -> None:
        for note in notes:  # what the guard cannot see here, as the CLI's own line
            print(f"offload-prof: {str(note.message).replace('offload guard: ', 'guard: ', 1)}", file=sys.stderr)

    with warnings.catch_warnings(record=True) as notes:
        warnings.simplefilter("always", GuardSourceWarning)
        try:
            guarded.__enter__()
        except Exception as exc:  # no source for the guard: one line, as any bad input
            raise ProfilerError(str(exc).splitlines()[0]) from None
    say(notes)
    outcome = Ending("interrupted", 130)
    try:
        outcome = run_target(target)
    finally:
        with warnings.catch_warnings(record=True) as notes:
            warnings.simplefilter("always", GuardSourceWarning)
            try:
                guarded.__exit__(None, None, None)
            except TransferGuardError as exc:  # made where no user line was on the stack
                print(f"offload-prof: guard: {exc}", file=sys.stderr)
                if outcome.exit_code == 0:
                    outcome = Ending("exception", 1)
        say(notes)
    rules, found = guarded.rules, guarded.violations
    if found and rules.mode != "raise":
        print(f"offload-prof: guard: {Summary(rules, tuple(found)).describe()}", file=sys.stderr)
    return outcome


def _merged(recorder: Source, gathered: Gathered, target: Target, outcome: Ending, hard_exit: int | None,
            link: Link | None, command: list[str]) -> Run:
    """The target's records and every child's, as one run whose first process is the target's."""
    from ..sources.merge import merge
    from ..sources.ranks import current_device, rank_from_env
    from ..trace.records import Process

    own = recorder.run(command=command, argv=target.argv, outcome=outcome.outcome, exit_code=outcome.exit_code,
                       link=link)
    main = Process(os.getpid(), os.getppid(), "main", tuple(target.argv),
                   note="" if hard_exit is None else f"os._exit({hard_exit})",
                   rank=rank_from_env(device=current_device(own.meta.backend)))
    return merge(own, main, recorder.origin_ns(), gathered.parts, gathered.unrecorded)


#: seconds of finishing work after which `run` says what it is doing (a long run's records take seconds to decode)
PROGRESS_AFTER_S = 1.0


@contextmanager
def progress_notice(message: str, after_s: float | None = None,
                    say: Callable[[str], None] | None = None) -> Iterator[None]:
    """Print `message` on stderr (or hand it to `say`) if the block is still running after `after_s` seconds
    (default `PROGRESS_AFTER_S`), so that a user whose program has ended is not left looking at a silent
    terminal."""
    speak = say or (lambda text: print(text, file=sys.stderr, flush=True))
    timer = threading.Timer(PROGRESS_AFTER_S if after_s is None else after_s, speak, args=(message,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()
        timer.join()  # a notice being printed is finished before whatever the caller prints next


def _report(output: Path, run: Run, outcome: Ending, notes: list[str], unrecorded: list[Unrecorded],
            cupti: bool, max_records: int = 0) -> None:
    """The summary line on stderr, the source's notes, and a warning for what the trace cannot hold."""
    try:  # from the columns, which writing the trace built anyway: a CUPTI run's records are built only on demand
        kinds = {k: int(run.columns.kind_mask(k).sum()) for k in ("h2d", "d2h", "launch")}  # type: ignore[arg-type]
    except OverflowError:  # a value beyond the columns' 64 bits (the trace was written as rows)
        kinds = {k: sum(r.kind == k for r in run.records) for k in ("h2d", "d2h", "launch")}
    recorded = sum(1 for p in run.meta.processes if p.recorded)
    more = f", from {recorded} processes" if recorded > 1 else ""
    print(f"offload-prof: wrote {output} ({len(run.records)} records: {kinds['h2d']} H2D, {kinds['d2h']} D2H, "
          f"{kinds['launch']} launches{more}; backend {run.meta.backend}, mode {run.meta.mode}; "
          f"target {outcome.outcome}, exit {outcome.exit_code})", file=sys.stderr)
    for note in notes:
        print(f"offload-prof: {note}", file=sys.stderr)
    missed = [u for u in unrecorded if u.warn]
    if missed:
        named = "; ".join(f"{'pid ' + str(u.pid) if u.pid is not None else 'a child'} "
                          f"({_short(' '.join(u.argv))}): {u.why}" for u in missed[:3])
        rest = f"; and {len(missed) - 3} more" if len(missed) > 3 else ""
        print(f"offload-prof: warning: {len(missed)} child process{'es' if len(missed) > 1 else ''} not recorded: "
              f"{named}{rest} (listed in the trace's meta.processes)", file=sys.stderr)
    if run.meta.dropped:
        print(f"offload-prof: warning: the trace keeps the first {max_records:,} records of each process "
              f"(--max-records {max_records}); {run.meta.dropped:,} more were recorded and not kept "
              "(meta.dropped counts them)", file=sys.stderr)
    cut = [p for p in run.meta.processes if not p.complete]
    if cut:
        them = ("all it", "it") if len(cut) == 1 else ("all they", "they")
        named = "; ".join(f"pid {p.pid}{' ' + p.name if p.name else ''}: {p.note}" for p in cut[:3])
        rest = f"; and {len(cut) - 3} more" if len(cut) > 3 else ""
        print(f"offload-prof: warning: {len(cut)} child process{'es' if len(cut) > 1 else ''} ended before writing "
              f"{them[0]} recorded: {named}{rest}; the trace's counts may be short of what {them[1]} did "
              "(meta.processes[].complete is false)", file=sys.stderr)
    unread = [n for n in notes if n.startswith("warning: reading activity records")]
    if not run.records and cut:
        print("offload-prof: warning: the trace holds no records: what the child processes named above recorded "
              "was lost with them; `offload-prof gate` refuses an empty trace unless given --allow-empty",
              file=sys.stderr)
    elif not run.records and unread:
        print("offload-prof: warning: the trace holds no records: CUPTI's could not be read (above); "
              "`offload-prof gate` refuses an empty trace unless given --allow-empty", file=sys.stderr)
    elif not run.records:
        what = ("no CUDA copy, kernel or sync" if cupti else
                "no offload_core launch, copy or sync (plain CuPy, PyTorch or Numba code needs --source cupti)")
        print(f"offload-prof: warning: nothing was recorded: the target made {what}; `offload-prof gate` refuses "
              "an empty trace unless given --allow-empty", file=sys.stderr)


def _short(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 3] + "..."


def _run_both(args: argparse.Namespace, target: Target, output: Path) -> int:
    from ..trace.tracefile import both_paths

    paths = both_paths(output)
    for path in paths:
        check_writable(path)
    status = 0
    written: list[Path] = []
    for mode, path in zip(("naive", "batched"), paths):
        cmd = [sys.executable, "-m", "profiler", "run", "--source", args.source, "--mode", mode, "-o", str(path)]
        if not args.fingerprints:
            cmd.append("--no-fingerprints")
        if getattr(args, "every_launch", False):
            cmd.append("--every-launch")
        if args.link:
            cmd += ["--link", args.link]
        if getattr(args, "max_records", None):
            cmd += ["--max-records", str(args.max_records)]
        print(f"offload-prof: running the {mode} path in a fresh process ...", file=sys.stderr, flush=True)
        before = _identity(path)
        try:
            code = subprocess.run(cmd + target.command(), env=dict(os.environ, OFFLOAD_MODE=mode)).returncode
        except KeyboardInterrupt:
            return 130
        ended = f"exit {code}"
        if code < 0:
            ended = f"killed by signal {-code}"
            code = 128 - code  # killed by a signal, as a shell reports it
        status = status or code
        after = _identity(path)
        if after is not None and after != before:
            written.append(path)
        else:
            print(f"offload-prof: the {mode} path's process ended ({ended}) without writing {path}", file=sys.stderr)
    if len(written) == 2:
        print(f"offload-prof: compare them with: offload-prof compare {paths[0]} {paths[1]}", file=sys.stderr)
    elif written:
        print(f"offload-prof: only {written[0]} was written; `offload-prof report {written[0]}` reads it",
              file=sys.stderr)
    return status or (0 if len(written) == 2 else 1)


def _identity(path: Path) -> tuple[int, int, int, int] | None:
    """What tells one version of a file from the next (the trace is written by a rename: a new inode)."""
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_dev, st.st_ino, st.st_mtime_ns, st.st_size


def split_run_argv(argv: Sequence[str]) -> tuple[list[str], Target | None]:
    """Split `run`'s own options from the target (`-- script ARGS`, `script ARGS` or `-m module ARGS`)."""
    from ..sources.runner import Target

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
        if tok in _VALUE_OPTIONS:
            i += 2
            continue
        if tok.startswith("-") and tok != "-":
            i += 1
            continue
        return list(argv[:i]), Target("script", tok, tuple(argv[i + 1:]))
    return list(argv), None
