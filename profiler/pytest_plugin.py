"""The pytest plugin (entry point `pytest11`): assert on copies in tests, or give a test a budget.

    def test_daxpy_copies_once(offload_transfers):
        with offload_transfers() as t:
            run_my_loop()
        assert t.h2d.count == 2 and t.d2h.count == 1

    @pytest.mark.transfer_budget(h2d=2, d2h=1, h2d_bytes="16 MiB")
    def test_loop_stays_resident():
        run_my_loop()

The marker records the test's call phase only (not its fixtures) and fails
the test, listing the call sites that copied, when a count or byte total
exceeds its limit. Every pytest run of an environment with offload-guard
installed imports this module, so it imports nothing but pytest until a
test actually uses the fixture or the marker.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator

import pytest

if TYPE_CHECKING:
    from .analysis.detectors import Finding
    from .analysis.summary import Flow, SiteSummary, Totals
    from .sources.recorder import Recorder
    from .trace.model import Run

LIMITS = ("h2d", "d2h", "h2d_bytes", "d2h_bytes", "syncs", "launches")


class Transfers:
    """What offload_core did inside a `with offload_transfers() as t:` block.

    The attributes are live while recording and final after the block.
    """

    def __init__(self, fingerprints: bool = False) -> None:
        from .sources.recorder import Recorder

        self._recorder: Recorder = Recorder(fingerprints=fingerprints)
        self._final: Run | None = None

    def start(self) -> Transfers:
        self._final = None
        self._recorder.start()
        return self

    def stop(self) -> None:
        self._recorder.stop()

    def __enter__(self) -> Transfers:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    @property
    def run(self) -> Run:
        """The recording as a `profiler.model.Run` (built once the recording has stopped)."""
        if self._recorder.active:
            return self._recorder.run(argv=("pytest",))
        if self._final is None:
            self._final = self._recorder.run(argv=("pytest",))
        return self._final

    def totals(self) -> Totals:
        """The recording's totals (`profiler.analysis.summary.totals`)."""
        from .analysis.summary import totals

        return totals(self.run)

    @property
    def h2d(self) -> Flow:
        """Host-to-device copies: `.count`, `.nbytes`, `.ns`."""
        return self.totals().h2d

    @property
    def d2h(self) -> Flow:
        return self.totals().d2h

    @property
    def launches(self) -> int:
        return self.totals().launches.count

    @property
    def syncs(self) -> int:
        return self.totals().syncs.count

    def sites(self) -> tuple[SiteSummary, ...]:
        """Per call site, most copy time first."""
        from .analysis.summary import by_site

        return by_site(self.run)

    def findings(self) -> list[Finding]:
        """The runtime detectors' findings on what was recorded."""
        from .analysis.detectors import detect

        return detect(self.run)

    def __repr__(self) -> str:
        t = self.totals()
        return (f"<Transfers h2d={t.h2d.count} ({t.h2d.nbytes} B) d2h={t.d2h.count} ({t.d2h.nbytes} B) "
                f"launches={t.launches.count} syncs={t.syncs.count}>")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "transfer_budget(h2d=None, d2h=None, h2d_bytes=None, d2h_bytes=None, syncs=None, launches=None): "
        "fail the test when its offload_core copies, syncs or launches exceed these limits",
    )


@pytest.fixture
def offload_transfers() -> Iterator[Callable[..., Transfers]]:
    """A factory of recording contexts: `with offload_transfers() as t: ...; t.h2d.count`."""
    made: list[Transfers] = []

    def factory(*, fingerprints: bool = False) -> Transfers:
        t = Transfers(fingerprints=fingerprints)
        made.append(t)
        return t

    yield factory
    for t in made:  # a test that started one by hand and failed before stopping it
        t.stop()


def _limits(marker: pytest.Mark) -> dict[str, int]:
    from .units import parse_size

    if marker.args:
        raise ValueError("transfer_budget takes keyword limits only, e.g. transfer_budget(h2d=2, d2h=1)")
    unknown = sorted(set(marker.kwargs) - set(LIMITS))
    if unknown:
        raise ValueError(f"transfer_budget: unknown limit(s) {', '.join(unknown)}; use {', '.join(LIMITS)}")
    out = {}
    for key, value in marker.kwargs.items():
        if value is None:
            continue
        out[key] = parse_size(value, f"transfer_budget {key}") if key.endswith("_bytes") else _count(key, value)
    return out


def _count(key: str, value: Any) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"transfer_budget {key} must be a non-negative integer, got {value!r}")
    return value


def over_budget(t: Transfers, limits: dict[str, int], spec: str) -> str | None:
    """The failure message, or None when every limit holds."""
    from .trace.records import relative_file
    from .units import fmt_bytes

    h, d = t.h2d, t.d2h
    actual = {"h2d": h.count, "d2h": d.count, "h2d_bytes": h.nbytes, "d2h_bytes": d.nbytes,
              "syncs": t.syncs, "launches": t.launches}
    broken = [k for k, lim in limits.items() if actual[k] > lim]
    if not broken:
        return None
    lines = [f"transfer budget exceeded ({spec}):"]
    for k in broken:
        show = fmt_bytes if k.endswith("_bytes") else str
        lines.append(f"  {k}: {show(actual[k])} > {show(limits[k])} allowed")
    run = t.run
    sites = [s for s in t.sites() if s.copies.count]
    if sites:
        lines.append("  copies by call site:")
    for s in sites:
        where = "(no call site)" if s.site is None else f"{relative_file(s.site.file, run.meta.cwd)}:{s.site.line} in {s.site.function}"
        parts = [f"{f.count} {name} ({fmt_bytes(f.nbytes)})" for name, f in (("H2D", s.h2d), ("D2H", s.d2h)) if f.count]
        lines.append(f"    {where}: {', '.join(parts)}")
    return "\n".join(lines)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    marker = item.get_closest_marker("transfer_budget")
    if marker is None:
        return (yield)
    try:
        limits = _limits(marker)
    except ValueError as exc:  # a misspelt limit fails its test, with the message and no traceback
        pytest.fail(str(exc), pytrace=False)
    spec = "transfer_budget(" + ", ".join(f"{k}={v!r}" for k, v in marker.kwargs.items()) + ")"
    t = Transfers().start()
    try:
        result = yield
    finally:
        t.stop()
    message = over_budget(t, limits, spec)
    if message is not None:
        pytest.fail(message, pytrace=False)
    return result
