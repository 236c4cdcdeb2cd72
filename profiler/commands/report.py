"""`offload-prof report TRACE`: the verdict, totals, the call sites that copied most and the findings of one trace."""

from __future__ import annotations

import argparse

from .common import (
    Shown, ShownWriter, add_output_arguments, html_page, load_trace, model_link, positive_int, write_output)

NAME = "report"
HELP = "verdict, totals, top call sites by copy time and findings (by expected saving) of one trace"


def _text(shown: Shown) -> str:
    from ..outputs.report import render_report

    (findings, judged), = shown.diagnoses
    return render_report(shown.runs[0], findings, path=shown.paths[0], link=shown.link, top=shown.top, judged=judged)


def _json(shown: Shown) -> str:
    from ..outputs.report import render_report_json

    (findings, judged), = shown.diagnoses
    return render_report_json(shown.runs[0], findings, path=shown.paths[0], link=shown.link, top=shown.top,
                              judged=judged)


#: `--format` -> the writer of the report in it (the option's choices are this table's keys)
FORMATS: dict[str, ShownWriter] = {"text": _text, "json": _json, "html": html_page}


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a trace written by `offload-prof run`")
    p.add_argument("--link", help="model copy costs on this link profile (name or file; default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=positive_int, default=10, help="call sites to list, at least 1 (default: %(default)s)")
    add_output_arguments(p, FORMATS)


def execute(args: argparse.Namespace) -> int:
    from ..analysis.diagnosis import analyse

    run = load_trace(args.trace)
    link = model_link(run, args.link, args.no_model)
    shown = Shown((run,), (args.trace,), (analyse(run, link),), link, args.top)
    write_output(FORMATS[args.format](shown), args.output)
    return 0
