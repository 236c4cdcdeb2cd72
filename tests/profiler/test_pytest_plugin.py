"""The pytest plugin, through pytester: the `offload_transfers` fixture and the `transfer_budget` marker."""

from __future__ import annotations

import pytest

from .kit import PLUGIN, PYTESTER_KERNELS

pytest_plugins = ["pytester"]

KERNELS = PYTESTER_KERNELS


def _run(pytester: pytest.Pytester, body: str) -> pytest.RunResult:
    pytester.makepyfile(test_sample=KERNELS + body)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *PLUGIN, "-W", "error")


def test_fixture_counts_copies(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
def test_batched(offload_transfers):
    with offload_transfers() as t:
        batched()
    assert (t.h2d.count, t.h2d.nbytes, t.d2h.count, t.launches, t.syncs) == (2, 1600, 1, 3, 1)

def test_naive(offload_transfers):
    with offload_transfers() as t:
        naive()
    assert (t.h2d.count, t.d2h.count, t.syncs) == (6, 3, 3)
    assert [f.code for f in t.findings()] == ["OFF501"]
    assert t.sites()[0].site.line == 13
    assert "h2d=6" in repr(t)

def test_outside_the_block_nothing_is_recorded(offload_transfers):
    t = offload_transfers()
    naive()
    with t:
        pass
    naive()
    assert t.h2d.count == 0
""")
    result.assert_outcomes(passed=3)


def test_marker_passes_within_budget_and_fails_over_it(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
@pytest.mark.transfer_budget(h2d=2, d2h=1)
def test_within():
    batched(50)

@pytest.mark.transfer_budget(h2d=2, d2h=1, h2d_bytes="1 kB")
def test_over():
    naive()

@pytest.mark.transfer_budget(syncs=0)
def test_syncs():
    batched()
""")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "*transfer budget exceeded (transfer_budget(h2d=2, d2h=1, h2d_bytes='1 kB')):*",
        "*h2d: 6 > 2 allowed*",
        "*d2h: 3 > 1 allowed*",
        "*h2d_bytes: 4.8 kB > 1 kB allowed*",
        "*copies by call site:*",
        "*test_sample.py:13 in naive: 6 H2D (4.8 kB), 3 D2H (2.4 kB)*",
    ])
    result.stdout.fnmatch_lines(["*syncs: 1 > 0 allowed*"])
    assert "Traceback" not in result.stdout.str()


def test_a_failing_test_keeps_its_own_failure(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
@pytest.mark.transfer_budget(h2d=0)
def test_broken():
    naive()
    assert 1 == 2, "the test's own assertion"
""")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*the test's own assertion*"])
    assert "transfer budget exceeded" not in result.stdout.str()


def test_marker_misuse_fails_the_test_with_one_line(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
@pytest.mark.transfer_budget(h2d_count=2)
def test_typo():
    batched()

@pytest.mark.transfer_budget(h2d=-1)
def test_negative():
    batched()
""")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*transfer_budget: unknown limit(s) h2d_count; use h2d, d2h, h2d_bytes, d2h_bytes, syncs, launches*"])
    result.stdout.fnmatch_lines(["*transfer_budget h2d must be a non-negative integer, got -1*"])
    assert "Traceback" not in result.stdout.str() and "pytest_plugin.py" not in result.stdout.str()


def test_a_fixture_recording_whose_source_cannot_start_fails_with_one_line(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_sample=KERNELS + """
def test_cupti(offload_transfers):
    with offload_transfers(source="cupti") as t:
        batched()
""")
    # no cupti-python on any machine: the test's folder leads sys.path and holds a `cupti` that fails to import
    pytester.mkpydir("cupti").joinpath("__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'cupti'\", name='cupti')\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *PLUGIN, "-W", "error")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*offload_transfers(source='cupti'): *No module named 'cupti'*"])
    out = result.stdout.str()
    assert "Traceback" not in out and "pytest_plugin.py" not in out and "ProfilerError" not in out, out


def test_marker_is_registered(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--markers")  # through the installed package's entry point
    result.stdout.fnmatch_lines(["*transfer_budget(h2d=None, d2h=None, *): fail the test when its copies*",
                                 "*no_transfers(h2d=True, d2h=True, syncs=False, mode='log', *): fail the test naming "
                                 "every line*"])
