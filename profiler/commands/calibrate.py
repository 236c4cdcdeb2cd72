"""`offload-prof calibrate`: measure this machine's link and save it as a profile recordings pick up."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ..errors import ProfilerError

NAME = "calibrate"
HELP = "measure this machine's copy bandwidths, small-copy latency, launch overhead and recording cost"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--backend", choices=("auto", "numpy", "cupy"), help="backend to measure (default: OFFLOAD_BACKEND or auto)")
    p.add_argument("--size", default="64MiB", help="bytes per bandwidth copy (default: %(default)s)")
    p.add_argument("--repeats", type=int, default=5, help="repeats per figure; the median is kept (default: %(default)s)")
    p.add_argument("--name", help="profile name (default: local-BACKEND, which recordings on this machine pick up)")
    p.add_argument("-o", "--output", help="profile file (default: the user's profile folder)")
    p.add_argument("--dry-run", action="store_true", help="measure and print, save nothing")


def execute(args: argparse.Namespace) -> int:
    import offload_core
    from offload_core.errors import OffloadError

    from ..sources.calibrate import describe, measure
    from ..trace.link import save_link, user_dir
    from ..units import parse_size

    try:
        size = parse_size(args.size, "--size")
    except ValueError as exc:
        raise ProfilerError(str(exc)) from None
    if size < 4096 or args.repeats < 1:
        raise ProfilerError("--size must be at least 4 KiB and --repeats at least 1")
    if args.output and not args.dry_run:  # before anything is measured, as every command that writes a file
        from .common import check_writable

        check_writable(Path(args.output), "link profile")
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
