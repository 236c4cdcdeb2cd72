"""A sync's cause: the download it waited for, else its own line."""

from __future__ import annotations

from profiler.analysis.waits import sync_causes

from ..timelines import Timeline as Hand
from ..timelines import site


def test_a_sync_is_charged_to_the_download_before_it_else_to_itself() -> None:
    h = Hand()
    h.kernel(0, 10, line=8)
    h.copy("d2h", 10, 1, line=20)  # r.update_host(u): the download ...
    first = h.sync(11, 1, line=12)  # ... and the wait it needed, recorded at the launch's line
    h.copy("d2h", 12, 1, line=21)
    h.copy("d2h", 13, 1, line=22)
    second = h.sync(14, 1, line=12)
    third = h.sync(15, 1, line=30)  # a region exit: no download since the last wait
    causes = sync_causes(h.run(20).columns)
    assert causes == {first: site(20), second: site(22), third: site(30)}
