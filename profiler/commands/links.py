"""`offload-prof links`: the link profiles, shipped and calibrated, that reports can model costs on."""

from __future__ import annotations

import argparse

from ..errors import ProfilerError

NAME = "links"
HELP = "list the link profiles (shipped and calibrated) reports can model costs on"


def add_arguments(p: argparse.ArgumentParser) -> None:
    """No options."""


def execute(args: argparse.Namespace) -> int:
    from ..trace.link import available, load_link

    for name, path in sorted(available().items()):
        try:
            source = load_link(path).source
        except ProfilerError as exc:
            source = f"unreadable: {exc}"
        print(f"{name:<16} {path}\n{'':<16} {source}")
    return 0
