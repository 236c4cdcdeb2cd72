"""`offload-prof report TRACE`: the verdict, totals, the call sites that copied most and the findings of one trace."""

from __future__ import annotations

import argparse

from .common import add_output_arguments, load_trace, model_link, positive_int, write_output

NAME = "report"
HELP = "verdict, totals, top call sites by copy time and findings (by expected saving) of one trace"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("trace", help="a trace written by `offload-prof run`")
    p.add_argument("--link", help="model copy costs on this link profile (name or file; default on NumPy runs: pcie5-x16)")
    p.add_argument("--no-model", action="store_true", help="show measured figures only")
    p.add_argument("--top", type=positive_int, default=10, help="call sites to list, at least 1 (default: %(default)s)")
    add_output_arguments(p)


def execute(args: argparse.Namespace) -> int:
    from ..analysis.diagnosis import analyse
    from ..outputs.report import render_report, render_report_json

    run = load_trace(args.trace)
    link = model_link(run, args.link, args.no_model)
    findings, judged = analyse(run, link)
    if args.format == "html":
        from ..outputs.html.page import named, render_page

        text = render_page(named([run], [args.trace], [(findings, judged)]), link=link, top=args.top)
    else:
        render = render_report_json if args.format == "json" else render_report
        text = render(run, findings, path=args.trace, link=link, top=args.top, judged=judged)
    write_output(text, args.output)
    return 0
