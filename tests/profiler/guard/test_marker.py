"""`@pytest.mark.no_transfers(...)` and `--offload-source`, through pytester."""

from __future__ import annotations

import pytest

from ..kit import PLUGIN, PYTESTER_KERNELS
from .kit import hide_cupti_python

pytest_plugins = ["pytester"]

KERNELS = PYTESTER_KERNELS


def _run(pytester: pytest.Pytester, body: str, *args: str) -> pytest.RunResult:
    pytester.makepyfile(test_sample=KERNELS + body)
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *PLUGIN, "-W", "error", *args)


def test_the_marker_fails_naming_every_line_with_count_and_bytes(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
@pytest.mark.no_transfers()
def test_loop():
    naive()
    x, y = np.ones(10), np.zeros(10)
    offload(daxpy, y, x, 1.0)

@pytest.mark.no_transfers(syncs=True)
def test_resident():
    x, y = np.ones(100), np.zeros(100)
    with region(x, y):
        for _ in range(3):
            offload(daxpy, y, x, 1.0)
""")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*12 forbidden transfers inside no_transfers(h2d=True, d2h=True, syncs=False, mode='log'):*",
        "*test_sample.py:13 in naive: `offload(daxpy, y, x, 1.0)`: 3 H2D copies (2.4 kB) by offload(daxpy) parameter y*",
        "*test_sample.py:13 in naive: `offload(daxpy, y, x, 1.0)`: 3 H2D copies (2.4 kB) by offload(daxpy) parameter x*",
        "*test_sample.py:13 in naive: `offload(daxpy, y, x, 1.0)`: 3 D2H copies (2.4 kB) by offload(daxpy) parameter y*",
        "*test_sample.py:25 in test_loop: `offload(daxpy, y, x, 1.0)`: 1 H2D copy (80 B) by offload(daxpy) parameter y*",
    ])
    result.stdout.fnmatch_lines([
        "*4 forbidden transfers inside no_transfers(h2d=True, d2h=True, syncs=True, mode='log'):*",
        "*test_sample.py:30 in test_resident: `with region(x, y):`: 1 H2D copy (800 B) by region copy of x*",
        "*test_sample.py:30 in test_resident: `with region(x, y):`: 1 D2H copy (800 B) by region copy of y*",
        "*test_sample.py:30 in test_resident: `with region(x, y):`: 1 sync by region*",
    ])
    assert "Traceback" not in result.stdout.str()


def test_the_marker_passes_a_resident_loop_and_raises_at_the_line_in_raise_mode(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
@pytest.mark.no_transfers(min_bytes="1 kB")
def test_small_copies_pass():
    naive()

@pytest.mark.no_transfers(mode="raise")
def test_raises():
    x, y = np.ones(10), np.zeros(10)
    with region(x, y):
        pass

@pytest.mark.no_transfers(h2d=False)
def test_uploads_allowed_downloads_not():
    x, y = np.ones(10), np.zeros(10)
    with region(x):
        offload(daxpy, y, x, 1.0)
""")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines(["*>       with region(x, y):*",
                                 "*TransferGuardError: test_sample.py:28 in test_raises: `with region(x, y):`: "
                                 "H2D copy of 80 B by region copy of x*"])
    result.stdout.fnmatch_lines(["*test_sample.py:35 in test_uploads_allowed_downloads_not: "
                                 "`offload(daxpy, y, x, 1.0)`: 1 D2H copy (80 B) by offload(daxpy) parameter y*"])
    assert "delivery.py" not in result.stdout.str(), "the guard's own frame is hidden"


def test_marker_misuse_is_one_line(pytester: pytest.Pytester) -> None:
    result = _run(pytester, """
@pytest.mark.no_transfers(sync=True)
def test_typo():
    batched()

@pytest.mark.no_transfers(mode="loud")
def test_mode():
    batched()
""")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines([
        "*no_transfers: unknown argument(s) sync; use h2d, d2h, syncs, mode, min_bytes, allow_scalars, source*"])
    result.stdout.fnmatch_lines(["*no_transfers(mode='loud'): use one of raise, warn, log*"])
    assert "Traceback" not in result.stdout.str() and "pytest_plugin.py" not in result.stdout.str()


NO_EXTRA = "CUPTI needs the cupti extra (pip install 'offload-guard[cupti]'): No module named 'cupti'"


def test_without_cupti_the_cupti_source_is_refused_in_one_line(pytester: pytest.Pytester) -> None:
    hide_cupti_python(pytester.path)
    result = _run(pytester, """
@pytest.mark.no_transfers(source="cupti")
def test_no_cupti_here():
    batched()
""")
    result.assert_outcomes(failed=1)
    assert f"no_transfers(source='cupti'): {NO_EXTRA}" in result.stdout.str()  # (fnmatch reads [cupti] as a set)
    assert "Traceback" not in result.stdout.str() and "During handling" not in result.stdout.str(), "said once"


def test_offload_source_cupti_is_refused_in_one_line_without_cupti(pytester: pytest.Pytester) -> None:
    hide_cupti_python(pytester.path)
    body = """
@pytest.mark.transfer_budget(h2d=0)
def test_budget():
    pass

def test_fixture(offload_transfers):
    with offload_transfers() as t:
        pass
"""
    result = _run(pytester, body, "--offload-source=cupti")
    result.assert_outcomes(failed=2)
    assert f"--source cupti needs{NO_EXTRA.removeprefix('CUPTI needs')}" in result.stdout.str()
    pytester.makeini("[pytest]\noffload_source = rocm\n")
    result = _run(pytester, body)
    result.stderr.fnmatch_lines(["*offload_source = 'rocm': use offload or cupti*"])
    assert result.ret != 0
