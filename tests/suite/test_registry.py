"""Kernel selection for the CLI and run_suite: names, groups, case, order, errors."""

from __future__ import annotations

import pytest

from offload_core.suite.registry import GROUPS, NAMES, UnknownKernel, select


def test_everything_by_default_and_by_all() -> None:
    assert [b.name for b in select(None)] == list(NAMES)
    assert [b.name for b in select(["all"])] == list(NAMES)
    assert GROUPS == ("Stream", "Basic", "Apps", "Polybench")


def test_groups_names_and_case_combine_in_suite_order_without_duplicates() -> None:
    chosen = [b.name for b in select(["atax", "Basic", "DAXPY", "apps"])]
    assert chosen == ["DAXPY", "PI_REDUCE", "FIR", "FIR_ALG", "ATAX"]
    assert [b.name for b in select(["2mm", " triad "])] == ["TRIAD", "2MM"]


def test_unknown_name_lists_the_choices() -> None:
    with pytest.raises(UnknownKernel) as info:
        select(["ADD", "SAXPY"])
    message = str(info.value)
    assert message.startswith("unknown kernel 'SAXPY'; choose from ADD, COPY") and "Polybench, all" in message
