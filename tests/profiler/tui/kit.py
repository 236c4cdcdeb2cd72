"""Helpers for the TUI tests: the committed stencil traces as a Session and an app."""

from __future__ import annotations

from pathlib import Path

from profiler.model import Link, Run
from profiler.trace.link import SHIPPED_DIR, load_link
from profiler.tui.app import OffloadProfApp
from profiler.tui.session import Session

DATA = Path(__file__).resolve().parents[2] / "data"
NAIVE = DATA / "stencil.naive.json"
BATCHED = DATA / "stencil.batched.json"


def link() -> Link:
    """The shipped profile itself (a user's calibration of the same name must not change what tests see)."""
    return load_link(SHIPPED_DIR / "pcie5-x16.yaml")


def session(*paths: Path, modelled: bool = True) -> Session:
    chosen = paths or (NAIVE, BATCHED)
    runs = [Run.load(p) for p in chosen]
    return Session.build(runs, [str(p) for p in chosen], link() if modelled else None)


def app(*paths: Path, modelled: bool = True) -> OffloadProfApp:
    return OffloadProfApp(session(*paths, modelled=modelled))
