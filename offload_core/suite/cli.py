"""`offload-bench` (also `python -m offload_core.suite`): run the suite and print the table.

Exit codes: 0 when every checksum agrees, 1 when a variant's checksum is
outside its kernel's tolerance (the times are printed anyway, marked),
2 for bad input (unknown kernel or variant, a size factor or count that is
not positive, a backend that cannot be used, an unwritable --json path,
checked before anything runs), and for a --json file that could not be
written in the end (a full disk: no partial file is left), reported in one
line without a traceback; 130 when interrupted. Progress goes to stderr,
one line per timed pass, unless --quiet. The JSON file is created with
the usual permissions (0666 less the umask).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import NoReturn, Sequence

from .. import __version__
from ..errors import BackendError
from ..settings import get_backend, set_backend
from .registry import BENCHMARKS, GROUPS, UnknownKernel, select
from .report import table, to_json
from .runner import command_line, measure
from .variants import VARIANTS, not_applicable

PROG = "offload-bench"


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}") from None
    if not (value > 0 and value < float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text!r}")
    return value


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return value


def _names(values: Sequence[str] | None) -> list[str]:
    return [n for v in (values or []) for n in v.split(",") if n.strip()]


def parser() -> argparse.ArgumentParser:
    p = _Parser(
        prog=PROG,
        description="RAJAPerf kernels four ways: hand-written baseline (NumPy, or CuPy on a GPU), the same "
        "with its rep loop captured as one CUDA/HIP graph (GPU only), offload_core batched (one region) and "
        "naive (copies on every launch).",
        epilog=f"kernels: {', '.join(b.name for b in BENCHMARKS)}; groups: {', '.join(GROUPS)}, all. "
        "Exit 0: all checksums agree; 1: a checksum disagrees; 2: bad input.",
    )
    p.add_argument("--kernels", nargs="+", metavar="NAME", help="kernels or groups to run (default: all)")
    p.add_argument("--variants", nargs="+", metavar="VARIANT",
                   help=f"variants to run, from {', '.join(VARIANTS)} (default: all; baseline-graph needs a GPU "
                   "and is reported as n/a on the NumPy backend)")
    p.add_argument("--size-factor", type=_positive_float, default=1.0, metavar="F",
                   help="scale RAJAPerf's default problem sizes by F (default: 1)")
    p.add_argument("--reps", type=_positive_int, metavar="N",
                   help="reps of every kernel's rep loop (default: RAJAPerf's per kernel)")
    p.add_argument("--passes", type=_positive_int, default=3, metavar="P",
                   help="timed passes per variant; the median is reported (default: 3)")
    p.add_argument("--backend", choices=("auto", "numpy", "cupy"),
                   help="offload_core backend (default: OFFLOAD_BACKEND or auto)")
    p.add_argument("--graphs", choices=("auto", "on", "off"), default="auto",
                   help="capture the batched rep loop as a device graph (r.capture()); auto: on a GPU (default: auto)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON to PATH")
    p.add_argument("--list", action="store_true", help="list the kernels with their RAJAPerf defaults and exit")
    p.add_argument("-q", "--quiet", action="store_true", help="no progress on stderr")
    p.add_argument("--version", action="version", version=f"{PROG} {__version__}")
    return p


def _json_target_problem(path: str) -> str | None:
    """Why `--json PATH` cannot be written, or None; asked before hours of timing, not after."""
    if os.path.isdir(path):
        return f"--json {path!r} is a folder; give a file name, such as {os.path.join(path, 'results.json')!r}"
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"cannot write --json {path!r}: the folder {folder!r} does not exist"
    if not os.access(folder, os.W_OK) and not (os.path.isfile(path) and os.access(path, os.W_OK)):
        return f"cannot write --json {path!r}: the folder {folder!r} is not writable"
    if os.path.exists(path) and not os.access(path, os.W_OK):
        return f"cannot write --json {path!r}: the file is not writable"
    return None


def _write_json(path: str, document: object) -> None:
    """Write the results whole, or raise OSError and leave no partial file."""
    opened = False
    try:
        with open(path, "w", encoding="utf-8") as fh:
            opened = True
            json.dump(document, fh, indent=2)
            fh.write("\n")
    except OSError:
        if opened and os.path.isfile(path):
            os.unlink(path)
        raise


def _listing() -> str:
    lines = [f"{'kernel':<10} {'group':<10} {'size':>9} {'reps':>5} {'tolerance':<9} summary"]
    for b in BENCHMARKS:
        lines.append(f"{b.name:<10} {b.group:<10} {b.default_size:>9} {b.default_reps:>5} {b.tolerance:<9} {b.summary}")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    if args.list:
        print(_listing())
        return 0
    try:
        benchmarks = select(_names(args.kernels))
    except UnknownKernel as exc:
        p.error(str(exc))
    variants = _names(args.variants) or list(VARIANTS)
    bad = [v for v in variants if v not in VARIANTS]
    if bad:
        p.error(f"unknown variant {bad[0]!r}; choose from {', '.join(VARIANTS)}")
    if args.json:
        problem = _json_target_problem(args.json)
        if problem:
            p.error(problem)
    try:
        if args.backend:
            set_backend(args.backend)
        backend = get_backend().name
        if all(not_applicable(v, backend) for v in variants):
            p.error(f"nothing to run ({'; '.join(f'{v}: {not_applicable(v, backend)}' for v in variants)})")
        progress = None if args.quiet else (lambda line: print(f"{PROG}: {line}", file=sys.stderr, flush=True))
        if progress:
            progress(f"{len(benchmarks)} kernel(s) x {len(variants)} variant(s), size factor {args.size_factor:g}, "
                     f"{args.passes} pass(es) each")
        graphs = None if args.graphs == "auto" else args.graphs == "on"
        result = measure(benchmarks, variants, args.size_factor, args.reps, args.passes, progress, graphs)
    except (BackendError, ValueError) as exc:
        p.error(str(exc))
    except MemoryError as exc:
        p.error(f"out of memory at size factor {args.size_factor:g} ({exc}); try a smaller --size-factor")
    except KeyboardInterrupt:
        print(f"{PROG}: interrupted", file=sys.stderr)
        return 130
    print(table(result))
    if args.json:
        try:
            _write_json(args.json, to_json(result, command_line()))
        except OSError as exc:
            print(f"{PROG}: error: cannot write --json {args.json!r}: {exc.strerror or exc}", file=sys.stderr)
            return 2
        if not args.quiet:
            print(f"{PROG}: wrote {args.json}", file=sys.stderr)
    if not all(k.checksums_agree for k in result.kernels):
        print(f"{PROG}: checksums disagree for "
              f"{', '.join(k.name for k in result.kernels if not k.checksums_agree)}", file=sys.stderr)
        return 1
    return 0
