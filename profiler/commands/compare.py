"""`offload-prof compare NAIVE BATCHED`: two traces side by side, with the ratios."""

from __future__ import annotations

import argparse

from .common import add_output_arguments, load_trace, model_link, positive_int, write_output

NAME = "compare"
HELP = "two traces side by side, with the ratios of wall time, copy time, bytes and counts"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("naive", help="trace of the naive path (or any first run)")
    p.add_argument("batched", help="trace of the batched path (or any second run)")
    p.add_argument("--link", help="model copy costs on this link profile (default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=positive_int, default=10, help="call sites to list, at least 1 (default: %(default)s)")
    add_output_arguments(p)


def execute(args: argparse.Namespace) -> int:
    from ..analysis.diagnosis import analyse
    from ..outputs.report import render_compare, render_compare_json

    a, b = load_trace(args.naive), load_trace(args.batched)
    link = model_link(a, args.link, args.no_model)
    (fa, va), (fb, vb) = analyse(a, link), analyse(b, link)
    paths = (args.naive, args.batched)
    if args.format == "html":
        from ..outputs.html.page import named, render_page

        text = render_page(named([a, b], paths, [(fa, va), (fb, vb)]), link=link, top=args.top)
    else:
        render = render_compare_json if args.format == "json" else render_compare
        text = render(a, b, fa, fb, paths=paths, link=link, top=args.top, verdicts=(va, vb))
    write_output(text, args.output)
    return 0
