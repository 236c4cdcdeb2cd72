"""`offload-prof compare NAIVE BATCHED`: two traces side by side, with the ratios."""

from __future__ import annotations

import argparse

from .common import (
    Shown, ShownWriter, add_output_arguments, html_page, load_trace, model_link, positive_int, write_output)

NAME = "compare"
HELP = "two traces side by side, with the ratios of wall time, copy time, bytes and counts"


def _text(shown: Shown) -> str:
    from ..outputs.report import render_compare

    (a, b), (pa, pb), ((fa, va), (fb, vb)) = shown.runs, shown.paths, shown.diagnoses
    return render_compare(a, b, fa, fb, paths=(pa, pb), link=shown.link, top=shown.top, verdicts=(va, vb))


def _json(shown: Shown) -> str:
    from ..outputs.report import render_compare_json

    (a, b), (pa, pb), ((fa, va), (fb, vb)) = shown.runs, shown.paths, shown.diagnoses
    return render_compare_json(a, b, fa, fb, paths=(pa, pb), link=shown.link, top=shown.top, verdicts=(va, vb))


#: `--format` -> the writer of the comparison in it (the option's choices are this table's keys)
FORMATS: dict[str, ShownWriter] = {"text": _text, "json": _json, "html": html_page}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("naive", help="trace of the naive path (or any first run)")
    p.add_argument("batched", help="trace of the batched path (or any second run)")
    p.add_argument("--link", help="model copy costs on this link profile (default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=positive_int, default=10, help="call sites to list, at least 1 (default: %(default)s)")
    add_output_arguments(p, FORMATS)


def execute(args: argparse.Namespace) -> int:
    from ..analysis.diagnosis import analyse

    a, b = load_trace(args.naive), load_trace(args.batched)
    link = model_link(a, args.link, args.no_model)
    shown = Shown((a, b), (args.naive, args.batched), (analyse(a, link), analyse(b, link)), link, args.top)
    write_output(FORMATS[args.format](shown), args.output)
    return 0
