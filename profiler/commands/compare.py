"""`offload-prof compare NAIVE BATCHED`: two traces side by side, with the ratios."""

from __future__ import annotations

import argparse
import sys

from .common import load_trace, model_link

NAME = "compare"
HELP = "two traces side by side, with the ratios of wall time, copy time, bytes and counts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("naive", help="trace of the naive path (or any first run)")
    p.add_argument("batched", help="trace of the batched path (or any second run)")
    p.add_argument("--link", help="model copy costs on this link profile (default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=int, default=10, help="call sites to list (default: %(default)s)")


def execute(args: argparse.Namespace) -> int:
    from ..outputs.report import analyse, render_compare

    a, b = load_trace(args.naive), load_trace(args.batched)
    link = model_link(a, args.link, args.no_model)
    (fa, va), (fb, vb) = analyse(a, link), analyse(b, link)
    sys.stdout.write(render_compare(a, b, fa, fb, paths=(args.naive, args.batched), link=link, top=args.top,
                                    verdicts=(va, vb)))
    return 0
