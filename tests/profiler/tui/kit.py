"""Helpers for the TUI tests: the committed stencil traces and a job built record by record, as a Session and an app."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Static

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


def text_of(widget: Static) -> str:
    """What the widget shows on screen, line by line."""
    return "\n".join(strip.text.rstrip() for strip in widget.render_lines(widget.region.reset_offset))


# ------------------------------------------------------------------ a distributed job
US = 1_000
STEPS = 5
#: (kind, offset in a step, duration) per rank: rank 1's kernel takes twice as long and it waits for its device
#: before every all_reduce, so rank 0 waits for rank 1 at the collective
JOB_STEP = {
    0: (("h2d", 0, 100 * US), ("launch", 100 * US, 200 * US), ("d2h", 300 * US, 10 * US),
        ("collective", 400 * US, 460 * US)),
    1: (("h2d", 0, 100 * US), ("launch", 100 * US, 400 * US), ("sync", 500 * US, 300 * US), ("d2h", 800 * US, 10 * US),
        ("collective", 820 * US, 40 * US)),
}
JOB_LINES = {"h2d": (10, "x = upload(batch)"), "launch": (11, "offload(step, x, y)"), "sync": (12, "loss.item()"),
             "d2h": (13, "y = download(y)"), "collective": (14, "dist.all_reduce(metric)")}
NBYTES = {"h2d": 1 << 20, "d2h": 4096, "collective": 4}


def job_run(world: int = 2) -> Run:
    """A job of the ranks in `JOB_STEP` (of world size `world`), STEPS steps of 1 ms each, built record by record."""
    from profiler.model import Meta, Process, Rank, Record, Site

    processes = tuple(Process(100 + r, 1, "exec", ("train.py",), rank=Rank(r, r, world, f"cuda:{r}", "j"))
                      for r in JOB_STEP)
    records = []
    for n in range(STEPS):
        t = 1_000 * US * (n + 1)
        for rank, ops in JOB_STEP.items():
            for kind, offset, duration in ops:
                line, text = JOB_LINES[kind]
                records.append(Record(kind, t + offset, duration, NBYTES.get(kind, 0),  # type: ignore[arg-type]
                                      kernel={"launch": "step", "collective": "all_reduce"}.get(kind),
                                      launch=n if kind in ("h2d", "launch", "d2h") else None,
                                      param={"h2d": "x", "d2h": "y"}.get(kind),
                                      site=Site("train.py", line, "<module>", text, 5), process=rank))
    meta = Meta(backend="cupti", device="gpu", mode="batched", started_at="2026-12-03T10:00:00.000+00:00",
                wall_ns=6_000 * US, processes=processes)
    return Run(meta, tuple(sorted(records, key=lambda r: r.start_ns)))


def job_session(world: int = 2) -> Session:
    return Session.build([job_run(world)], ["job.json"], None)


def job_app(world: int = 2) -> OffloadProfApp:
    return OffloadProfApp(job_session(world))
