"""`offload-lint`: the command line.

    offload-lint [check] [PATHS...]   lint (the default command; PATHS default to .)
    offload-lint rules                list the rule catalog
    offload-lint explain OFF101       what a rule finds, why it matters, how to fix it
    offload-lint server               a Language Server on stdin/stdout, for editors (the `lsp` extra)

Exit codes: 0 no findings, 1 findings (or, with --diff, changes to make),
2 bad usage, bad configuration or an internal error. Everything a user can
get wrong is one line on stderr, never a traceback.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Sequence

from offload_core.catalog import CatalogError

from . import __version__, interrupt
from .config.pyproject import ConfigError, find_pyproject
from .outputs.emit import OutputError
from .outputs.explain import explain_rule, list_rules


def _codes(values: Sequence[str] | None) -> list[str] | None:
    if values is None:
        return None
    return [c for v in values for c in v.replace(" ", ",").split(",") if c]


def _jobs(value: str) -> int:
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"--jobs needs a positive integer, got {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"--jobs needs a positive integer, got {n}")
    return n


def check_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="offload-lint",
        description="Find host<->device transfer and ownership anti-patterns in Python GPU code "
        "(CuPy, Numba, PyTorch, JAX, offload_core). Subcommands: `rules`, `explain CODE`, `server`.",
        epilog="Configuration: [tool.offload-lint] in pyproject.toml. Suppress one finding with "
        "`# noqa: OFF101` or `# offload: ignore[OFF101]` on its line.",
    )
    p.add_argument("paths", nargs="*", metavar="PATH", help="files or folders to lint (default: .)")
    p.add_argument("--format", choices=("text", "json", "sarif", "github"), default="text", help="output format")
    p.add_argument("-o", "--output-file", metavar="FILE", help="write the report to FILE instead of stdout")
    p.add_argument("--select", action="append", metavar="CODES", help="check only these rules (codes, prefixes or ALL)")
    p.add_argument("--extend-select", action="append", metavar="CODES", help="check these rules too (e.g. OFF106)")
    p.add_argument("--ignore", action="append", metavar="CODES", help="do not check these rules")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--unsafe-fixes", action="store_true", help="also apply (with --fix) or show fixes that may change behaviour")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead of writing them")
    p.add_argument("--statistics", action="store_true", help="count findings per rule instead of listing them")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--show-suppressed", action="store_true", help="also show findings silenced by noqa comments")
    p.add_argument("-j", "--jobs", type=_jobs, default=os.cpu_count() or 1, metavar="N", help="worker processes (default: CPU count)")
    p.add_argument("--config", metavar="PYPROJECT", help="configuration file (default: nearest pyproject.toml with [tool.offload-lint])")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the results cache")
    p.add_argument("--cache-dir", metavar="DIR", help="results cache folder (default: .offload-lint-cache beside the configuration)")
    p.add_argument("--version", action="version", version=f"offload-lint {__version__}")
    return p


def cmd_check(argv: Sequence[str]) -> int:
    args = check_parser().parse_args(argv)
    paths = [Path(p) for p in (args.paths or ["."])]
    for path in paths:
        if not path.exists() and not path.is_symlink():
            raise ConfigError(f"{path}: no such file or folder")
    config_path = Path(args.config) if args.config else find_pyproject(paths)
    # LibCST is the slow part of start-up; `rules` and `explain` never load it.
    from .outputs.applying import apply_to_files
    from .outputs.emit import emit, write_stdout
    from .run.session import Session

    session = Session.configured(
        config_path, args, _codes(args.select), _codes(args.extend_select) or (), _codes(args.ignore) or ()
    )
    run = session.run(paths)
    if args.fix or args.diff:
        outcome = apply_to_files(session, run, write=not args.diff)
        if args.diff:
            write_stdout(outcome.diff)
            n = outcome.fixed
            sys.stderr.write(f"Would fix {n} finding{'s' if n != 1 else ''} in {outcome.files} file{'s' if outcome.files != 1 else ''}.\n")
            return 2 if session.errors(run) else (1 if outcome.diff else 0)
        session.applied = outcome
    active = emit(session, run)
    if session.errors(run) or (session.applied is not None and session.applied.failed):
        return 2
    return 0 if (args.exit_zero or not active) else 1


def main(argv: Sequence[str] | None = None) -> int:
    """`offload-lint`: the exit status of the subcommand (`check` unless named); Ctrl-C ends the command with 130."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not interrupt.as_command():
        return _main(argv)
    interrupt.arm()
    try:
        status = _main(argv)
        interrupt.settle()
    except KeyboardInterrupt:  # between the subcommand's return and `settle`
        interrupt.finish()
    return status


def _main(argv: list[str]) -> int:
    try:
        if argv and argv[0] == "rules":
            return list_rules(argv[1:])
        if argv and argv[0] == "explain":
            return explain_rule(argv[1:])
        if argv and argv[0] == "server":
            from .server import main as serve

            return serve(argv[1:])
        if argv and argv[0] == "check":
            argv = argv[1:]
        return cmd_check(argv)
    except (ConfigError, CatalogError) as exc:
        sys.stderr.write(f"offload-lint: {exc}\n")
        return 2
    except OutputError as exc:
        _abandon_stdout()
        sys.stderr.write(f"offload-lint: {exc}\n")
        return 2
    except KeyboardInterrupt:
        if interrupt.as_command():
            interrupt.finish()
        sys.stderr.write("offload-lint: interrupted\n")
        return 130
    except BrokenPipeError:
        _abandon_stdout()
        return 1
    except Exception as exc:  # a bug of ours: one line, and a way to report it
        if interrupt.requested():  # Ctrl-C that the code it hit wrapped (`__set_name__` turns it into a RuntimeError)
            if interrupt.as_command():
                interrupt.finish()
            sys.stderr.write("offload-lint: interrupted\n")
            return 130
        from .run.workers import WorkerDied

        if isinstance(exc, WorkerDied):
            sys.stderr.write(f"offload-lint: {exc}\n")
            return 2
        sys.stderr.write(f"offload-lint: internal error: {type(exc).__name__}: {exc} (please report it)\n")
        return 2


def _abandon_stdout() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush cannot fail a second time."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())
