"""`offload-prof`: the profiler's command line, built from the list of commands in `profiler.commands`.

Exit statuses: `run` passes the target's own status on; `gate` returns 0
(pass), 1 (regression) or 2; everything else 0 on success; 130 when
interrupted. Any bad input (a missing or malformed file, a bad option
value) is a one-line `offload-prof: error: ...` on stderr and status 2,
never a traceback; so is a bug of the profiler's own (`internal error`),
so that no failure of the tool can read as the gate's "regression".
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn, Sequence

from .version import __version__
from .commands import COMMANDS
from .commands.common import abandon_stdout
from .commands.run import split_run_argv
from .errors import ProfilerError


class _Parser(argparse.ArgumentParser):
    """argparse, with its errors as one line (`offload-prof: error: ...`) instead of a usage dump and a line."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"offload-prof: error: {self.prog.removeprefix('offload-prof ')}: {message}\n"
                  if self.prog != "offload-prof" else f"offload-prof: error: {message}\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="offload-prof",
        description="Record host<->device copies of offload_core programs, find runtime anti-patterns, gate CI.",
    )
    parser.add_argument("--version", action="version", version=f"offload-prof {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for command in COMMANDS:
        p = sub.add_parser(command.NAME, help=command.HELP, description=command.HELP)
        command.add_arguments(p)
        p.set_defaults(handler=command.execute)
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
        abandon_stdout()
        return 0
    except Exception as exc:  # a bug of ours: one line and a way to report it, and never the gate's 1
        print(f"offload-prof: internal error: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''} "
              "(please report it)", file=sys.stderr)
        return 2


if __name__ == "__main__":
    raise SystemExit(main())
