"""A run's diagnosis: its findings and its verdict, from one inference of its timeline.

Every consumer that shows findings (the text, JSON and HTML reports, the
TUI, the Chrome export, the gate's GitHub annotations, the notebook)
asks for both at once, so the replay of the timeline the detectors price
their fixes on and the verdict reads is inferred once, here.
"""

from __future__ import annotations

from ..trace.job import job_of
from ..trace.model import Run
from ..trace.records import Link
from .detectors import Finding, detect
from .ranks import job_findings
from .replay import Timeline
from .verdict import Verdict, verdict


def analyse(run: Run, link: Link | None) -> tuple[list[Finding], Verdict | None]:
    """The findings and the verdict of `run`, from one inference of its timeline.

    For a distributed job the findings are its ranks', each naming its
    rank(s) (`profiler.analysis.ranks.job_findings`), and the job's own
    (a rule that looks across ranks).
    """
    timeline = Timeline.of(run)
    job = job_of(run)
    if job is None:
        return detect(run, link=link, timeline=timeline), verdict(run, timeline)
    return job_findings(job, link), verdict(run, timeline)
