"""The pytest plugin (entry point `pytest11`): assert on copies in tests, or give a test a budget.

    def test_daxpy_copies_once(offload_transfers):
        with offload_transfers() as t:
            run_my_loop()
        assert t.h2d.count == 2 and t.d2h.count == 1

    @pytest.mark.transfer_budget(h2d=2, d2h=1, h2d_bytes="16 MiB")
    def test_loop_stays_resident():
        run_my_loop()

    @pytest.mark.no_transfers(syncs=True)
    def test_step_stays_on_the_device():
        run_my_step()

The markers cover the test's call phase only (not its fixtures).
`transfer_budget` fails the test, listing the call sites that copied,
when a count or byte total exceeds its limit. `no_transfers` takes
`profiler.guard.no_transfers`'s arguments; by default (`mode="log"`) it
collects every forbidden copy and sync and fails the test naming each
line with count and bytes, while `mode="raise"` fails at the first, at
its line. Both markers and the fixture record offload_core's events by
default; `--offload-source=cupti` (or the ini setting `offload_source =
cupti`) records every CUDA copy through CUPTI instead, so that plain
CuPy and PyTorch tests can be budgeted and guarded on a GPU. Every pytest
run of an environment with offload-guard installed imports this module,
so it imports nothing but pytest until a test actually uses the fixture
or a marker.
"""

from __future__ import annotations

from types import TracebackType
from typing import TYPE_CHECKING, Any, Callable, Generator, Iterator

import pytest

if TYPE_CHECKING:
    from .analysis.detectors import Finding
    from .analysis.summary import Flow, SiteSummary, Totals
    from .guard.scopes import NoTransfers
    from .sources.cupti import CuptiRecorder
    from .sources.recorder import Recorder
    from .trace.model import Run

LIMITS = ("h2d", "d2h", "h2d_bytes", "d2h_bytes", "syncs", "launches")
SOURCES = ("offload", "cupti")
GUARD_ARGS = ("h2d", "d2h", "syncs", "mode", "min_bytes", "allow_scalars", "source")


class Transfers:
    """What offload_core did inside a `with offload_transfers() as t:` block.

    The attributes are live while recording and final after the block.
    """

    def __init__(self, fingerprints: bool = False, source: str = "offload") -> None:
        if source not in SOURCES:
            raise ValueError(f"offload_transfers(source={source!r}): use offload or cupti")
        self._recorder: Recorder | CuptiRecorder
        if source == "cupti":
            from .sources.cupti import CuptiRecorder

            self._recorder = CuptiRecorder(fingerprints=fingerprints, launch_sites="none")
        else:
            from .sources.recorder import Recorder

            self._recorder = Recorder(fingerprints=fingerprints)
        self.source = source
        self._final: Run | None = None

    def start(self) -> Transfers:
        self._final = None
        self._recorder.start()
        return self

    def stop(self) -> None:
        if self._recorder.active:
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


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("offload-guard")
    group.addoption("--offload-source", choices=SOURCES, default=None,
                    help="what transfer_budget, no_transfers and offload_transfers record: offload_core's events "
                         "(offload, the default) or every CUDA copy through CUPTI (cupti: NVIDIA GPU and the "
                         "cupti extra); overrides the ini setting offload_source")
    parser.addini("offload_source", "offload or cupti: the default of --offload-source", default="offload")


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers",
        "transfer_budget(h2d=None, d2h=None, h2d_bytes=None, d2h_bytes=None, syncs=None, launches=None): "
        "fail the test when its copies, syncs or launches exceed these limits",
    )
    config.addinivalue_line(
        "markers",
        "no_transfers(h2d=True, d2h=True, syncs=False, mode='log', min_bytes=0, allow_scalars=False, source=None): "
        "fail the test naming every line that copied or synced against profiler.guard.no_transfers",
    )
    recording_source(config)  # a bad ini value stops the run at once, in one line


def recording_source(config: pytest.Config) -> str:
    """`--offload-source`, else the ini `offload_source`; a bad ini value is a usage error."""
    value = config.getoption("offload_source", None) or config.getini("offload_source") or "offload"
    if value not in SOURCES:
        raise pytest.UsageError(f"offload_source = {value!r}: use offload or cupti")
    return str(value)


class _TestTransfers(Transfers):
    """The fixture's recording: where its source cannot start (no CUPTI here), the test fails with that one line."""

    def start(self) -> Transfers:
        from .errors import ProfilerError

        refusal: str | None = None
        try:
            return super().start()
        except ProfilerError as exc:
            refusal = f"offload_transfers(source={self.source!r}): {exc}"
        pytest.fail(refusal, pytrace=False)  # outside the `except`: no chained traceback either


@pytest.fixture
def offload_transfers(request: pytest.FixtureRequest) -> Iterator[Callable[..., Transfers]]:
    """A factory of recording contexts: `with offload_transfers() as t: ...; t.h2d.count`."""
    made: list[Transfers] = []
    default = recording_source(request.config)

    def factory(*, fingerprints: bool = False, source: str | None = None) -> Transfers:
        t = _TestTransfers(fingerprints=fingerprints, source=source or default)
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


def _guard_kwargs(marker: pytest.Mark, default_source: str) -> dict[str, Any]:
    if marker.args:
        raise ValueError("no_transfers takes keyword arguments only, e.g. no_transfers(syncs=True)")
    unknown = sorted(set(marker.kwargs) - set(GUARD_ARGS))
    if unknown:
        raise ValueError(f"no_transfers: unknown argument(s) {', '.join(unknown)}; use {', '.join(GUARD_ARGS)}")
    kwargs = {"mode": "log", **{k: v for k, v in marker.kwargs.items() if v is not None}}
    kwargs.setdefault("source", "cupti" if default_source == "cupti" else "auto")
    return kwargs


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, object, object]:
    budget = item.get_closest_marker("transfer_budget")
    guard_marker = item.get_closest_marker("no_transfers")
    if budget is None and guard_marker is None:
        return (yield)
    from .errors import ProfilerError

    source = recording_source(item.config)
    # a refusal fails the test with its one line, raised outside the `except` so that no chained context is shown
    refusal: str | None = None
    guarded: NoTransfers | None = None
    try:  # misspelt arguments fail their test, with the message and no traceback
        limits = _limits(budget) if budget is not None else {}
        if guard_marker is not None:
            from .guard import Rules
            from .guard.scopes import NoTransfers

            guarded = NoTransfers(Rules.make(**_guard_kwargs(guard_marker, source)), summary=False)
    except (ValueError, TypeError) as exc:
        refusal = str(exc)
    if refusal is not None:
        pytest.fail(refusal, pytrace=False)
    t: Transfers | None = None
    try:
        if budget is not None:  # first: a CUPTI recording must hold CUPTI before the guard listens through it
            t = Transfers(source=source).start()
        if guarded is not None:
            guarded.__enter__()
    except (ProfilerError, Warning) as exc:  # no CUPTI here (or a filter made the guard's note an error): one line
        if t is not None:
            t.stop()
        refusal = str(exc)
    if refusal is not None:
        pytest.fail(refusal, pytrace=False)
    messages = []
    try:
        try:
            result = yield
        finally:
            if guarded is not None:
                try:
                    guarded.__exit__(None, None, None)
                except Warning as note:  # what it could not see, made an error by a filter: one line
                    messages.append(str(note))
    finally:
        if t is not None:
            t.stop()
    if guarded is not None and guarded.violations:
        from .guard import Summary

        messages.append(Summary(guarded.rules, tuple(guarded.violations)).describe())
    if budget is not None and t is not None:
        spec = "transfer_budget(" + ", ".join(f"{k}={v!r}" for k, v in budget.kwargs.items()) + ")"
        message = over_budget(t, limits, spec)
        if message is not None:
            messages.append(message)
    if messages:
        pytest.fail("\n".join(messages), pytrace=False)
    return result
