"""GitHub workflow-command annotations: escaping that the runner undoes exactly, properties in GitHub's order."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from offload_core.github import annotation, escape_data, escape_property


def _unescape_data(text: str) -> str:
    # what the Actions runner does to a command's message (actions/runner, ActionCommand.Unescape)
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%25", "%")


def _unescape_property(text: str) -> str:
    return text.replace("%0D", "\r").replace("%0A", "\n").replace("%3A", ":").replace("%2C", ",").replace("%25", "%")


def _parse(command: str) -> tuple[str, dict[str, str], str]:
    """Split one workflow command as the runner does: `::NAME PROPS::DATA`, PROPS `k=v` joined by commas."""
    m = re.fullmatch(r"::(\w+)(?: ([^:]*))?::(.*)", command, flags=re.S)
    assert m is not None, command
    props = dict(p.split("=", 1) for p in m.group(2).split(",")) if m.group(2) else {}
    return m.group(1), {k: _unescape_property(v) for k, v in props.items()}, _unescape_data(m.group(3))


def test_escapes_percent_newlines_and_in_properties_colons_and_commas() -> None:
    assert escape_data("50% done\r\nnext: a, b") == "50%25 done%0D%0Anext: a, b"
    assert escape_property("C:\\x,y\n%") == "C%3A\\x%2Cy%0A%25"


def test_annotation_orders_properties_and_leaves_out_missing_ones() -> None:
    assert annotation("warning", "m", file="a.py", line=3, col=5, end_line=3, end_column=9, title="OFF101 t") == (
        "::warning file=a.py,line=3,col=5,endLine=3,endColumn=9,title=OFF101 t::m")
    assert annotation("error", "over budget: 3 > 2", title="offload-prof gate") == (
        "::error title=offload-prof gate::over budget: 3 > 2")
    assert annotation("notice", "no properties") == "::notice::no properties"


text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)


@given(message=text, file=text, title=text)
def test_the_runner_reads_back_exactly_what_was_written(message: str, file: str, title: str) -> None:
    line = annotation("error", message, file=file, line=7, title=title)
    assert "\n" not in line and "\r" not in line
    level, props, data = _parse(line)
    assert (level, props, data) == ("error", {"file": file, "line": "7", "title": title}, message)
