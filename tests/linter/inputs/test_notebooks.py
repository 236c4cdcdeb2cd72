"""Notebooks linted in place: cells joined, positions by cell, every output format, noqa, fixes written
back byte for byte outside the changed cells, invalid notebooks, the cache."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linter.inputs.notebooks import Notebook, NotebookError, NotebookFixError

from ..kit import APIS, CATALOG, DEFAULT, ROOT, run_cli
from linter.config.rules import settings_for
from linter.run.engine import lint_text


def code(source: str | list[str], **extra: Any) -> dict[str, Any]:
    return {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": [], "source": source, **extra}


def markdown(source: str) -> dict[str, Any]:
    return {"cell_type": "markdown", "metadata": {}, "source": source}


def lines(text: str) -> list[str]:
    """A cell's text as Jupyter stores it: one string a line, the newline kept."""
    return text.splitlines(keepends=True)


def notebook(*cells: dict[str, Any], language: str = "python") -> dict[str, Any]:
    return {
        "cells": list(cells),
        "metadata": {"kernelspec": {"display_name": "Python 3", "language": language, "name": "python3"},
                     "language_info": {"name": language}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def dump(document: dict[str, Any], indent: int | None = 1, ensure_ascii: bool = False) -> bytes:
    return (json.dumps(document, indent=indent, ensure_ascii=ensure_ascii) + "\n").encode("utf-8")


TRAIN = notebook(
    markdown("# Training\nSome text with `cp.asarray(x)` in it."),
    code(lines("import cupy as cp\nimport numpy as np\n\nx = np.arange(8.0)")),
    markdown("Now the loop:"),
    code(lines("%%time\ntotal = 0\nfor step in range(100):\n    d = cp.asarray(x)\n    !echo step\n    total += 1")),
    code(lines("for k in range(4):\n    e = cp.asarray(np.zeros(8))\n    f = cp.asarray(np.ones(8))  # noqa: OFF105")),
    code(lines("%%bash\nfor i in 1 2; do echo cp.asarray; done")),
)


def lint_notebook(data: bytes, select: list[str] | None = None, options: dict | None = None):  # type: ignore[no-untyped-def]
    nb = Notebook.parse(data)
    settings = settings_for(CATALOG.rules, frozenset(select) if select else DEFAULT, options)
    return nb, lint_text(nb.code, settings, APIS, cells=nb.map)


# -- reading -----------------------------------------------------------------------------------


def test_code_cells_join_in_order_and_are_numbered_counting_every_cell() -> None:
    nb = Notebook.parse(dump(TRAIN))
    assert [c.number for c in nb.cells] == [2, 4, 5]  # markdown 1 and 3 counted, the %%bash cell 6 left out
    assert nb.code.count(nb.marker) == 2
    assert nb.code.splitlines()[:5] == ["import cupy as cp", "import numpy as np", "", "x = np.arange(8.0)", nb.marker]
    assert [nb.map.where(n) for n in (1, 4, 5, 6, 9, 10, 11)] == [(2, 1), (2, 4), (2, 4), (4, 1), (4, 4), (4, 5), (4, 6)]
    assert nb.map.label(9) == "4 of cell 4"


def test_names_flow_across_cells_and_findings_are_placed_by_cell_line_and_column() -> None:
    _, result = lint_notebook(dump(TRAIN), select=["OFF101", "OFF105"])
    got = [(f.code, f.cell, f.line, f.column, f.end_line, f.end_column, f.suppressed) for f in result.findings]
    assert got == [
        ("OFF101", 4, 4, 9, 4, 22, False),  # x comes from cell 2
        ("OFF105", 5, 2, 9, 2, 32, False),
        ("OFF105", 5, 3, 9, 3, 31, True),  # the noqa in the cell
    ]
    assert "the loop at line 3 of cell 4" in result.findings[0].message


INDENTED = notebook(
    code(lines("import cupy as cp\nimport numpy as np\nx = np.arange(8.0)")),
    code(lines("\n  total = 0\n  for step in range(100):\n    d = cp.asarray(x)\n\n    total += 1")),
)


def test_a_cell_indented_as_a_whole_is_read_as_ipython_runs_it_and_placed_in_its_own_columns() -> None:
    nb, result = lint_notebook(dump(INDENTED), select=["OFF101"])
    assert nb.code.splitlines()[4:7] == ["", "total = 0", "for step in range(100):"]
    got = [(f.code, f.cell, f.line, f.column, f.end_line, f.end_column) for f in result.findings]
    assert got == [("OFF101", 2, 4, 9, 4, 22)]  # the columns of the cell as stored, indent included
    assert "the loop at line 3 of cell 2" in result.findings[0].message


def test_a_fix_in_an_indented_cell_is_written_back_with_the_cell_s_indent() -> None:
    nb = Notebook.parse(dump(INDENTED))
    fixed = nb.code.replace("for step in range(100):\n  d = cp.asarray(x)\n", "d = cp.asarray(x)\nfor step in range(100):\n")
    assert fixed != nb.code
    cell = json.loads(nb.rewrite(fixed))["cells"][1]["source"]
    assert cell == ["\n", "  total = 0\n", "  d = cp.asarray(x)\n", "  for step in range(100):\n", "\n", "    total += 1"]


def test_a_syntax_error_is_off901_at_its_cell_and_line() -> None:
    data = dump(notebook(code("import cupy as cp"), markdown("x"), code(lines("y = 1\nfor i in range(3)\n    cp.asarray(y)"))))
    _, result = lint_notebook(data)
    [finding] = result.findings
    assert (finding.code, finding.cell, finding.line, finding.column) == ("OFF901", 3, 2, 17)
    assert finding.message == "cannot parse this file: expected ':'"


def test_a_syntax_error_s_message_names_cell_lines_too() -> None:
    data = dump(notebook(code("import cupy as cp\n"), code(lines("x = 1\ny = cp.asarray((x,\n"))))
    _, result = lint_notebook(data)
    [finding] = result.findings
    assert (finding.cell, finding.line) == (2, 2)
    assert "'(' was never closed" in finding.message
    data = dump(notebook(code("import cupy as cp\n"), code(lines("x = 1\ndoc = \"\"\"\nabc")), code("y = 2\nz = 3")))
    _, result = lint_notebook(data)
    [finding] = result.findings
    assert (finding.cell, finding.line) == (2, 2)
    assert finding.message == ("cannot parse this file: unterminated triple-quoted string literal "
                               "(detected at line 2 of cell 3)")


@pytest.mark.parametrize("data, reason, position", [
    (b'{"cells": [', "not a notebook: invalid JSON (Expecting value)", (1, 12)),
    (b'{\n "cells": []\n "metadata": {}\n}', "not a notebook: invalid JSON (Expecting ',' delimiter)", (3, 2)),
    (b"[1, 2]", "not a notebook: the JSON is an array, not an object with \"cells\"", (1, 1)),
    (b'{"metadata": {}}', "not a notebook: no \"cells\" list", (1, 1)),
    (b'{"worksheets": [], "nbformat": 3}', "not a notebook: no \"cells\" list (an nbformat 3 notebook: convert it with "
     "`jupyter nbconvert --to notebook`)", (1, 1)),
    (b'{"cells": [\n {"source": "x"}]}', "not a notebook: cell 1 has no \"cell_type\"", (2, 2)),
    (b'{"cells": [{"cell_type": "code",\n "source": 3}]}', "not a notebook: the \"source\" of cell 1 is not text", (1, 12)),
    (b'{"cells": [], "x": "\xff"}', "not a notebook: not UTF-8 (invalid start byte at byte 20)", (1, 1)),
    (b"[" * 100_000 + b"]" * 100_000, "not a notebook: JSON nested too deeply", (1, 1)),
])
def test_what_is_not_a_notebook_is_one_line_with_a_position(data: bytes, reason: str, position: tuple[int, int]) -> None:
    with pytest.raises(NotebookError) as info:
        Notebook.parse(data)
    assert (str(info.value), (info.value.line, info.value.column)) == (reason, position)


def test_a_byte_order_mark_and_duplicate_keys_are_read_as_json_reads_them() -> None:
    text = '{"cells": [], "cells": [{"cell_type": "code", "source": "import cupy", "source": ["x = 1\\n", "y"]}]}'
    nb = Notebook.parse(b"\xef\xbb\xbf" + text.encode())
    assert nb.bom and [c.source for c in nb.cells] == ["x = 1\ny"]
    assert nb.data == b"\xef\xbb\xbf" + text.encode()


def test_a_notebook_of_another_language_is_not_python() -> None:
    assert not Notebook.parse(dump(notebook(code("library(cupy)"), language="R"))).python
    assert Notebook.parse(dump({"cells": [code("import cupy")]})).python


# -- writing back ------------------------------------------------------------------------------


def _outside(before: bytes, after: bytes, span: tuple[int, int], new_len: int) -> None:
    """Every byte before and after the replaced span is unchanged."""
    start, end = span
    assert after[:start] == before[:start]
    assert after[start + new_len:] == before[end:]


def test_rewrite_changes_only_the_fixed_cells_source_and_keeps_its_list_style() -> None:
    document = notebook(
        code(lines("import cupy as cp\nimport numpy as np\nlabel = 'caf\u00e9'")),
        code(lines("for k in range(4):\n    e = cp.asarray(np.zeros(8))\n    note = 'na\u00efve \\\\ \"q\"'"),
             outputs=[{"output_type": "stream", "name": "stdout", "text": ["\u00e9t\u00e9\n"]}]),
        code(lines("y = cp.asarray(np.ones(3))")),
    )
    raw = json.dumps(document, indent=2, ensure_ascii=False).replace('"source": [\n', '"source": [  \n') + "\n"
    data = raw.encode("utf-8")
    nb = Notebook.parse(data)
    new_code = nb.code.replace("e = cp.asarray(np.zeros(8))", "e = cp.zeros(8)")
    out = nb.rewrite(new_code)
    assert json.loads(out)["cells"][1]["source"] == ["for k in range(4):\n", "    e = cp.zeros(8)\n",
                                                     "    note = 'na\u00efve \\\\ \"q\"'"]
    span = nb.cells[1].span
    text = out.decode("utf-8")
    start = len(raw[:span[0]])
    new_value = text[start:text.index("]", start) + 1]
    assert new_value.splitlines()[0] == "[  " and new_value.splitlines()[2] == '        "    e = cp.zeros(8)\\n",'
    _outside(data, out, (len(raw[:span[0]].encode()), len(raw[:span[1]].encode())), len(new_value.encode()))
    assert json.loads(out)["cells"][1]["outputs"] == document["cells"][1]["outputs"]


def test_rewrite_keeps_a_string_source_a_string_and_an_ascii_file_ascii() -> None:
    document = notebook(code("import cupy as cp\nimport numpy as np\nname = 'caf\u00e9'\nd = cp.asarray(np.zeros(3))"))
    data = dump(document, ensure_ascii=True)
    nb = Notebook.parse(data)
    out = nb.rewrite(nb.code.replace("cp.asarray(np.zeros(3))", "cp.zeros(3)"))
    assert out.isascii() and b"caf\\u00e9" in out
    assert out == data.replace(b"d = cp.asarray(np.zeros(3))", b"d = cp.zeros(3)")


def test_rewrite_reuses_the_exact_json_of_unchanged_lines() -> None:
    raw = ('{"cells": [{"cell_type": "code", "source": ["import cupy as cp\\n", "s = \'\\u00e9\\/\'\\n",'
           ' "d = cp.asarray(np.zeros(3))"]}]}')
    nb = Notebook.parse(raw.encode())
    out = nb.rewrite(nb.code.replace("cp.asarray(np.zeros(3))", "cp.zeros(3)"))
    assert out.decode() == raw.replace("cp.asarray(np.zeros(3))", "cp.zeros(3)")


def test_an_added_line_into_an_empty_list_or_a_list_of_one_gets_jupyter_s_layout() -> None:
    raw = '{\n "cells": [\n  {\n   "cell_type": "code",\n   "source": ["for i in x: pass"]\n  }\n ]\n}\n'
    nb = Notebook.parse(raw.encode())
    out = nb.rewrite("y = 1\nfor i in x: pass\n").decode()
    assert out == raw.replace('["for i in x: pass"]', '["y = 1\\n", "for i in x: pass"]')
    raw = '{\n "cells": [\n  {\n   "cell_type": "code",\n   "source": [\n    "for i in x: pass"\n   ]\n  }\n ]\n}\n'
    out = Notebook.parse(raw.encode()).rewrite("y = 1\nfor i in x: pass\n").decode()
    assert out == raw.replace('    "for i in x: pass"', '    "y = 1\\n",\n    "for i in x: pass"')
    empty = '{\n "cells": [\n  {\n   "cell_type": "code",\n   "source": []\n  }\n ]\n}\n'
    nb = Notebook.parse(empty.encode())
    assert [c.code for c in nb.cells] == [""]
    out = nb.rewrite("x = 1\ny = 2\n").decode()
    assert out == empty.replace("[]", '[\n    "x = 1\\n",\n    "y = 2"\n   ]')


def test_a_fix_that_would_rewrite_an_ipython_line_or_cross_a_cell_is_refused() -> None:
    nb = Notebook.parse(dump(TRAIN))
    with pytest.raises(NotebookFixError, match="IPython line 5 of cell 4"):
        nb.rewrite(nb.code.replace("    pass\n", "    print()\n"))
    with pytest.raises(NotebookFixError, match="across a cell boundary"):
        nb.rewrite(nb.code.replace(nb.marker, "# gone", 1))
    moved = nb.code.replace("total = 0\n", "").replace("for step", "total = 0\nfor step")  # IPython lines untouched
    assert json.loads(nb.rewrite(moved))["cells"][3]["source"][0] == "%%time\n"


def test_ipython_lines_a_fix_left_alone_are_written_back_as_they_were() -> None:
    nb = Notebook.parse(dump(TRAIN))
    fixed = nb.code.replace("for step in range(100):\n    d = cp.asarray(x)\n", "d = cp.asarray(x)\nfor step in range(100):\n")
    cell = json.loads(nb.rewrite(fixed))["cells"][3]["source"]
    assert cell == ["%%time\n", "total = 0\n", "d = cp.asarray(x)\n", "for step in range(100):\n", "    !echo step\n",
                    "    total += 1"]


SOURCES = st.lists(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=30), max_size=5)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(["code", "markdown", "raw"]), SOURCES, st.booleans()), min_size=1, max_size=5),
       st.sampled_from([None, 1, 2]), st.booleans(), st.integers(min_value=0))
def test_any_notebook_round_trips_and_a_changed_cell_changes_alone(cells, indent, ascii_only, pick) -> None:  # type: ignore[no-untyped-def]
    document = notebook(*[
        {"cell_type": kind, "metadata": {}, "source": parts if as_list else "".join(parts),
         **({"outputs": [], "execution_count": None} if kind == "code" else {})}
        for kind, parts, as_list in cells
    ])
    data = dump(document, indent=indent, ensure_ascii=ascii_only)
    nb = Notebook.parse(data)
    assert nb.rewrite(nb.code) == data  # nothing changed: not a byte
    plain = [c for c in nb.cells if not c.changed]
    if not plain:
        return
    target = plain[pick % len(plain)]
    new_code = nb.code.split(f"\n{nb.marker}\n")
    index = nb.cells.index(target)
    new_code[index] = "added = 1\n" + new_code[index]
    out = nb.rewrite(f"\n{nb.marker}\n".join(new_code))
    after = json.loads(out)
    for number, (old, new) in enumerate(zip(document["cells"], after["cells"]), 1):
        if number == target.number:
            source = new["source"]
            # a cell indented as a whole is read dedented, and what is added is written back at its indent
            assert ("".join(source) if isinstance(source, list) else source) == \
                target.indent + "added = 1\n" + target.source
            assert type(source) is type(old["source"])
        else:
            assert new == old
    assert {k: v for k, v in after.items() if k != "cells"} == {k: v for k, v in document.items() if k != "cells"}
    assert out.isascii() or not ascii_only


# -- the command -------------------------------------------------------------------------------


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "train.ipynb").write_bytes(dump(TRAIN))
    (tmp_path / "bad.py").write_text("import cupy as cp\nimport numpy as np\nz = cp.asarray(np.zeros(8))\n")
    checkpoints = tmp_path / ".ipynb_checkpoints"
    checkpoints.mkdir()
    (checkpoints / "train-checkpoint.ipynb").write_bytes(dump(TRAIN))
    return tmp_path


def test_text_output_places_findings_by_cell(tree: Path) -> None:
    proc = run_cli(".", "--no-cache", cwd=tree)
    assert proc.returncode == 1, proc.stderr
    assert proc.stdout.splitlines()[:3] == [
        "bad.py:3:5: OFF105 [*] cupy.asarray uploads an array that numpy.zeros just built on the host; "
        "create it on the device with cp.zeros(...)",
        "train.ipynb:cell 4:4:9: OFF101 cupy.asarray copies host->device on every iteration of the loop at line 3 "
        "of cell 4, but nothing it reads changes in the loop; hoist it out",
        "train.ipynb:cell 5:2:9: OFF105 [*] cupy.asarray uploads an array that numpy.zeros just built on the host; "
        "create it on the device with cp.zeros(...)",
    ]
    assert "checkpoint" not in proc.stdout  # .ipynb_checkpoints is excluded by default
    named = run_cli("train.ipynb", "--no-cache", "--select", "OFF101", cwd=tree)
    assert named.stdout.splitlines()[0].startswith("train.ipynb:cell 4:4:9: OFF101 ")


def test_json_findings_carry_the_cell(tree: Path) -> None:
    data = json.loads(run_cli("--format", "json", "--no-cache", "--show-suppressed", cwd=tree).stdout)
    got = [(d["path"], d["cell"], d["line"], d["column"], d["end_line"], d["end_column"], d["context"]) for d in data]
    assert got == [
        ("bad.py", None, 3, 5, 3, 28, "library"),
        ("train.ipynb", 4, 4, 9, 4, 22, "notebook"),
        ("train.ipynb", 5, 2, 9, 2, 32, "notebook"),
        ("train.ipynb", 5, 3, 9, 3, 31, "notebook"),
    ]
    assert [d["suppressed"] for d in data] == [False, False, False, True]


def _file_text_at(tree: Path, line: int, column: int, end_column: int) -> str:
    return (tree / "train.ipynb").read_text(encoding="utf-8").splitlines()[line - 1][column - 1:end_column - 1]


def test_github_annotations_point_at_the_lines_of_the_ipynb_file(tree: Path) -> None:
    proc = run_cli("--format", "github", "--no-cache", cwd=tree)
    notebook_lines = [line for line in proc.stdout.splitlines() if "train.ipynb" in line]
    assert len(notebook_lines) == 2
    props = dict(kv.split("=", 1) for kv in notebook_lines[0].split("::")[1].split(" ", 1)[1].split(","))
    assert props["title"] == "OFF101 transfer-in-loop (cell 4%2C line 4)"
    assert _file_text_at(tree, int(props["line"]), int(props["col"]), int(props["endColumn"])) == "cp.asarray(x)"


def test_sarif_regions_are_in_the_ipynb_file_with_the_cell_as_properties(tree: Path) -> None:
    import jsonschema

    proc = run_cli("--format", "sarif", "--no-cache", "--unsafe-fixes", cwd=tree)
    log = json.loads(proc.stdout)
    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    validator = jsonschema.validators.validator_for(schema)
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(log)
    results = [r for r in log["runs"][0]["results"]
               if r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "train.ipynb"]
    assert [r["properties"] for r in results] == [
        {"cell": 4, "cellLine": 4, "cellColumn": 9, "cellEndLine": 4, "cellEndColumn": 22},
        {"cell": 5, "cellLine": 2, "cellColumn": 9, "cellEndLine": 2, "cellEndColumn": 32},
    ]
    region = results[1]["locations"][0]["physicalLocation"]["region"]
    assert _file_text_at(tree, region["startLine"], region["startColumn"], region["endColumn"]) == "cp.asarray(np.zeros(8))"
    assert all("fixes" not in r for r in results)  # edits in the cells' Python are not offsets in the file


def test_fix_writes_the_notebook_back_byte_for_byte_outside_the_changed_cell(tree: Path) -> None:
    document = json.loads(json.dumps(TRAIN))
    document["cells"][1]["outputs"] = [{"output_type": "display_data", "data": {"image/png": "iVBORw0KGgo" * 200},
                                        "metadata": {"needs_background": "light"}}]
    document["metadata"]["widgets"] = {"state": {"k": [1.5, None, True]}}
    before = dump(document, indent=2)
    (tree / "train.ipynb").write_bytes(before)
    proc = run_cli("train.ipynb", "--fix", "--no-cache", cwd=tree)
    assert proc.returncode == 1, proc.stderr  # OFF101 stays (its fix is unsafe)
    assert "Fixed 1 finding in 1 file." in proc.stdout
    after = (tree / "train.ipynb").read_bytes()
    old_cell = b'    "    e = cp.asarray(np.zeros(8))\\n",\n'
    new_cell = b'    "    e = cp.zeros(8)\\n",\n'
    assert before.count(old_cell) == 1
    cut = before.index(old_cell)
    assert after[:cut] == before[:cut]
    assert after[cut:cut + len(new_cell)] == new_cell
    assert after[cut + len(new_cell):] == before[cut + len(old_cell):]
    again = run_cli("train.ipynb", "--no-cache", "--select", "OFF105", cwd=tree)
    assert again.returncode == 0, again.stdout


def test_unsafe_fixes_apply_except_where_they_would_rewrite_an_ipython_line(tmp_path: Path) -> None:
    document = notebook(
        code(lines("import cupy as cp\nimport numpy as np\nx = np.ones(3)")),
        code(lines("for i in range(3):\n    a = cp.asarray(x)\n    %time b = cp.asarray(x)")),
    )
    (tmp_path / "nb.ipynb").write_bytes(dump(document))
    proc = run_cli("nb.ipynb", "--fix", "--unsafe-fixes", "--no-cache", "--select", "OFF101", cwd=tmp_path)
    assert proc.returncode == 1 and "Fixed 1 finding in 1 file." in proc.stdout, proc.stdout + proc.stderr
    assert "nb.ipynb:cell 2:3:15: OFF101" in proc.stdout
    cells = json.loads((tmp_path / "nb.ipynb").read_text())["cells"]
    assert cells[1]["source"] == ["a = cp.asarray(x)\n", "for i in range(3):\n", "    %time b = cp.asarray(x)"]
    assert cells[0] == document["cells"][0]


def test_diff_shows_each_changed_cell_and_writes_nothing(tree: Path) -> None:
    before = (tree / "train.ipynb").read_bytes()
    proc = run_cli("train.ipynb", "--diff", "--no-cache", cwd=tree)
    assert proc.returncode == 1
    assert proc.stdout == (
        "--- a/train.ipynb:cell 5\n+++ b/train.ipynb:cell 5\n@@ -1,3 +1,3 @@\n for k in range(4):\n"
        "-    e = cp.asarray(np.zeros(8))\n+    e = cp.zeros(8)\n     f = cp.asarray(np.ones(8))  # noqa: OFF105\n"
    )
    assert (tree / "train.ipynb").read_bytes() == before


def test_a_broken_notebook_is_off902_and_the_run_goes_on(tree: Path) -> None:
    (tree / "broken.ipynb").write_text('{"cells": [\n  {"cell_type": "code", "source": "x"},\n  oops\n]}')
    (tree / "empty.ipynb").write_text("")
    proc = run_cli(".", "--no-cache", "--select", "OFF9,OFF105", cwd=tree)
    assert proc.returncode == 1
    out = proc.stdout.splitlines()
    assert "broken.ipynb:3:3: OFF902 cannot read this file: not a notebook: invalid JSON (Expecting value)" in out
    assert "empty.ipynb:1:1: OFF902 cannot read this file: not a notebook: invalid JSON (Expecting value)" in out
    assert any(line.startswith("train.ipynb:cell 5:2:9: OFF105") for line in out)
    assert proc.stderr == ""


def test_notebook_results_are_cached_by_their_code_not_their_outputs(tree: Path) -> None:
    (tree / "bad.py").unlink()
    first = run_cli("--format", "json", cwd=tree)
    cache = tree / ".offload-lint-cache"
    entries = {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file() and len(p.name) == 40}
    assert len(entries) == 1
    document = json.loads(json.dumps(TRAIN))
    document["cells"][3]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": ["new run\n"]}]
    document["cells"][3]["execution_count"] = 7
    (tree / "train.ipynb").write_bytes(dump(document))
    second = run_cli("--format", "json", cwd=tree)
    assert second.stdout == first.stdout
    assert {p: p.stat().st_mtime_ns for p in cache.rglob("*") if p.is_file() and len(p.name) == 40} == entries
    document["cells"].insert(0, markdown("a new first cell"))  # same code, every cell number one higher
    (tree / "train.ipynb").write_bytes(dump(document))
    third = json.loads(run_cli("--format", "json", cwd=tree).stdout)
    assert [d["cell"] for d in third] == [5, 6]


def test_a_notebook_of_another_language_or_without_gpu_code_is_skipped(tmp_path: Path) -> None:
    (tmp_path / "r.ipynb").write_bytes(dump(notebook(code("x <- cupy.asarray(y)"), language="R")))
    (tmp_path / "plain.ipynb").write_bytes(dump(notebook(code("print(1)"))))
    proc = run_cli(".", "--no-cache", cwd=tmp_path)
    assert (proc.returncode, proc.stdout.strip()) == (0, "All checks passed.")


def test_a_notebook_from_an_editor_s_cells_reads_and_keys_as_its_file() -> None:
    """The language server has the cells, not the file: they give the file's Python, cell map and cache key."""
    data = dump(TRAIN, indent=2, ensure_ascii=True)
    from_file = Notebook.parse(data)
    cells = [(c["cell_type"], "".join(c["source"])) for c in TRAIN["cells"]]
    from_editor = Notebook.from_cells(cells)
    assert from_editor.code == from_file.code
    assert from_editor.map == from_file.map
    assert from_editor.cache_data == from_file.cache_data
    assert [c.number for c in from_editor.cells] == [2, 4, 5]  # markdown counted, the %%bash cell not linted
    moved = Notebook.from_cells([("markdown", "new")] + cells)
    assert moved.code == from_file.code and moved.cache_data != from_file.cache_data  # the cells are numbered anew
