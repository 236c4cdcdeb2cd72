"""IPython syntax in notebook cells becomes Python that parses, with every other line and column unchanged."""

from __future__ import annotations

import ast

import pytest

from linter.inputs.magics import to_python


def python(source: str) -> list[str]:
    cell = to_python(source)
    assert cell is not None
    lines = cell.code.split("\n")
    assert len(lines) == len(source.split("\n"))  # never a line more or less
    ast.parse(cell.code)
    for n, (before, after) in enumerate(zip(source.split("\n"), lines)):
        assert (n in cell.changed) == (before != after)
    return lines


@pytest.mark.parametrize("line, want", [
    ("%matplotlib inline", "pass"),
    ("%load_ext autoreload", "pass"),
    ("!pip install cupy-cuda12x", "pass"),
    ("!!ls -la", "pass"),
    ("?cp.asarray", "pass"),
    ("??cp.asarray", "pass"),
    ("cp.asarray?", "pass"),
    ("cp.asarray??", "pass"),
    ("np.*load*?", "pass"),
    ("/print 1 2", "pass"),
    (",print a b", "pass"),
    ("%%time", "pass"),  # a cell magic anywhere but the first line is IPython's error, not Python
    ("files = !ls *.npy", "files = 0"),
    ("out = %sx nvidia-smi", "out = 0"),
    ("a, b = !echo 1 2", "a, b = 0"),
    ("self.log =!cat log.txt", "self.log =0"),
    ("pip install -U cupy", "pass"),
    ("conda install -y numba", "pass"),
    ("cd ../data", "pass"),
])
def test_line_magics_shell_escapes_and_help_become_pass_or_keep_their_target(line: str, want: str) -> None:
    lines = python(f"import cupy as cp\n{line}\nx = cp.zeros(3)")
    assert lines == ["import cupy as cp", want, "x = cp.zeros(3)"]


@pytest.mark.parametrize("line", [
    "time = 3",
    "ls",
    "cd(1)",
    "pip.main(['install', 'x'])",
    "run = pip + 1",
    "x != 1",
    "env['A'] = '1'",
    "time -1",
    "# %time x",
])
def test_python_that_looks_like_automagic_or_an_escape_is_left_alone(line: str) -> None:
    source = f"ls = pip = env = time = run = cd = 1\n{line}"
    assert python(source) == source.split("\n")


@pytest.mark.parametrize("line, want", [
    ("%time d = cp.asarray(x)", "pass; d = cp.asarray(x)"),
    ("%timeit cp.asarray(x)", "pass;   cp.asarray(x)"),
    ("%timeit -n 10 -r3 -q cp.asarray(x)", "pass;                cp.asarray(x)"),
    ("%prun -s cumulative -l 5 f(x)", "pass;                    f(x)"),
    ("%time", "pass"),
    ("%timeit -n 10", "pass"),
    ("%time for i in range(3): f(i)", "pass"),
    ("%time with ctx: f()", "pass"),
])
def test_a_timed_statement_is_kept_at_its_own_column(line: str, want: str) -> None:
    lines = python(f"import cupy as cp\nx = 1\ndef f(*a): pass\n{line}")
    assert lines[3] == want
    if "cp.asarray" in want:
        assert want.index("cp.asarray") == line.index("cp.asarray")


def test_magics_inside_blocks_keep_the_indentation_so_the_block_still_parses() -> None:
    source = (
        "import cupy as cp\n"
        "for i in range(3):\n"
        "    !nvidia-smi\n"
        "    %time d = cp.asarray(x)\n"
        "    if i:\n"
        "        out = !ls\n"
    )
    assert python(source) == [
        "import cupy as cp", "for i in range(3):", "    pass", "    pass; d = cp.asarray(x)", "    if i:",
        "        out = 0", "",
    ]


def test_a_percent_or_question_mark_inside_brackets_strings_or_continuations_is_python() -> None:
    source = (
        "msg = ('%s and %s'\n"
        "       % (a, b))\n"
        "text = '''\n"
        "!not a shell escape\n"
        "%not a magic\n"
        "what?\n"
        "'''\n"
        "y = 1 + \\\n"
        "    2\n"
        "s = 'a \\\n"
        "%b'\n"
        "z = [x for x in y  # a comment (with a bracket\n"
        "     ]\n"
    )
    assert python(source) == source.split("\n")


def test_an_escaped_command_continued_with_a_backslash_blanks_its_continuation_lines() -> None:
    lines = python("import cupy\n!pip install \\\n    cupy \\\n    numba\nx = 1")
    assert lines == ["import cupy", "pass", "", "", "x = 1"]


def test_a_shell_command_s_quote_opens_no_string() -> None:
    lines = python("!echo \"it's\"\nx = cp.asarray(y)")
    assert lines == ["pass", "x = cp.asarray(y)"]


@pytest.mark.parametrize("magic", ["%%bash", "%%writefile run.py", "%%html", "%%javascript", "%%sh", "%%script python2", "%%latex"])
def test_a_cell_run_by_another_language_is_left_out(magic: str) -> None:
    assert to_python(f"{magic}\nfor i in 1 2; do cupy; done") is None
    assert to_python(f"\n  \n{magic}\nx = 1") is None


@pytest.mark.parametrize("magic", ["%%time", "%%timeit -n 3", "%%capture out", "%%prun"])
def test_a_cell_magic_that_runs_python_keeps_its_body(magic: str) -> None:
    lines = python(f"{magic}\nfor i in range(3):\n    d = cp.asarray(x)\n    !date")
    assert lines == ["#" + magic[1:], "for i in range(3):", "    d = cp.asarray(x)", "    pass"]


def test_plain_python_is_unchanged_and_crlf_lines_keep_their_ending() -> None:
    source = "import cupy as cp\r\n%time x = 1\r\ny = 2\r\n"
    cell = to_python(source)
    assert cell is not None
    assert cell.code == "import cupy as cp\r\npass; x = 1\r\ny = 2\r\n"
    assert cell.changed == frozenset({1})
    plain = to_python("import cupy as cp\nx = cp.zeros(3)\n")
    assert plain is not None and plain.changed == frozenset()


def test_a_line_of_unicode_spaces_is_left_as_it_is() -> None:
    """NEL and other Unicode spaces are whitespace to `str.split` but not to the magic escapes (Hypothesis found it)."""
    for source in ("\x85\n", "x = 1\n\u2003\n"):
        cell = to_python(source)
        assert cell is not None and (cell.code, cell.changed) == (source, frozenset())


def test_a_cell_indented_as_a_whole_loses_its_first_line_s_indent_as_in_ipython() -> None:
    cell = to_python("\n   x = 1\n   if x:\n       %time y = 2\n  z = 3\n")
    assert cell is not None
    assert cell.code == "\nx = 1\nif x:\n    pass; y = 2\n  z = 3\n"  # a line without the whole indent keeps it
    assert (cell.indent, cell.dedented) == ("   ", frozenset({1, 2, 3}))
    assert to_python("x = 1\n  y = 2").indent == ""  # type: ignore[union-attr]
