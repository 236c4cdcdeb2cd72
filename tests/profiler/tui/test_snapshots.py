"""Snapshots of every view at 120x40 and 80x24 (and the help and source screens) on the committed traces, and of
a distributed job's Ranks view (`kit.job_run`, built record by record).

The traces under tests/data are normalised (no dates, hosts or absolute
paths) and their numbers are fixed, so the screens are the same on every
machine. After an intended change of the layout, look at the report and
run `pytest tests/profiler/tui/test_snapshots.py --snapshot-update`.
"""

from __future__ import annotations

from typing import Any

import pytest

from .kit import app, job_app

SIZES = {"120x40": (120, 40), "80x24": (80, 24)}
VIEWS = {"launches": "1", "kernels": "2", "sites": "3", "findings": "4", "timeline": "5"}


@pytest.mark.parametrize("size", list(SIZES))
@pytest.mark.parametrize("view", list(VIEWS))
def test_view(snap_compare: Any, view: str, size: str) -> None:
    assert snap_compare(app(), press=[VIEWS[view]], terminal_size=SIZES[size])


def test_launches_sorted_and_filtered(snap_compare: Any) -> None:
    keys = ["right", "right", "right", "right", "s", "slash", *"smooth", "enter"]
    assert snap_compare(app(), press=keys, terminal_size=SIZES["120x40"])


def test_help_screen(snap_compare: Any) -> None:
    assert snap_compare(app(), press=["question_mark"], terminal_size=SIZES["80x24"])


def test_source_screen(snap_compare: Any) -> None:
    assert snap_compare(app(), press=["4", "enter"], terminal_size=SIZES["80x24"])


@pytest.mark.parametrize("size", list(SIZES))
def test_job_ranks_view(snap_compare: Any, size: str) -> None:
    assert snap_compare(job_app(), press=["6"], terminal_size=SIZES[size])
