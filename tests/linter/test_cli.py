"""The `offload-lint` command, through real subprocesses: formats, exit codes, selection, fixes, config."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from .kit import ROOT, run_cli

BAD = """\
import cupy as cp
import numpy as np
W = cp.ones(4)

def total(x, n):
    s = 0.0
    for i in range(n):
        d = cp.asarray(x)
        s += float(W.sum())
    return s


z = cp.asarray(np.zeros(8))
"""
CLEAN = "import cupy as cp\n\nd = cp.zeros(8)\n"


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    (tmp_path / "bad.py").write_text(BAD)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "plain.py").write_text("print('no gpu here')\n")
    return tmp_path


def test_text_output_and_exit_code_one(tree: Path) -> None:
    proc = run_cli(".", "--no-cache", cwd=tree)
    assert proc.returncode == 1, proc.stderr
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("bad.py:8:13: OFF101 cupy.asarray copies host->device on every iteration of the loop at line 7")
    assert lines[1].startswith("bad.py:9:14: OFF104 float() of a cupy array")
    assert lines[2].startswith("bad.py:13:5: OFF105 [*] cupy.asarray uploads an array that numpy.zeros just built")
    assert "Found 3 findings." in proc.stdout and "[*] 1 fixable with the `--fix` option." in proc.stdout
    assert proc.stderr == ""


def test_clean_files_exit_zero(tree: Path) -> None:
    proc = run_cli("clean.py", "plain.py", "--no-cache", cwd=tree)
    assert (proc.returncode, proc.stdout.strip()) == (0, "All checks passed.")


def test_json_output(tree: Path) -> None:
    proc = run_cli("--format", "json", "--no-cache", cwd=tree)
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert [(d["code"], d["path"], d["line"], d["column"]) for d in data] == [
        ("OFF101", "bad.py", 8, 13), ("OFF104", "bad.py", 9, 14), ("OFF105", "bad.py", 13, 5)
    ]
    first = data[0]
    assert {"code", "path", "line", "column", "end_line", "end_column", "severity", "message", "fixable"} <= set(first)
    assert (first["end_line"], first["end_column"], first["severity"], first["fixable"]) == (8, 26, "warning", False)
    assert data[2]["fixable"] is True and data[2]["fix"]["safety"] == "safe"


def test_github_annotations(tree: Path) -> None:
    proc = run_cli("--format", "github", "--no-cache", cwd=tree)
    lines = proc.stdout.splitlines()
    assert lines[0].startswith("::warning file=bad.py,line=8,col=13,endLine=8,endColumn=26,title=OFF101 transfer-in-loop::OFF101 ")
    assert len(lines) == 3


def test_select_ignore_extend_select_and_statistics(tree: Path) -> None:
    proc = run_cli("--select", "OFF105", "--no-cache", cwd=tree)
    assert [l.split(" ")[1] for l in proc.stdout.splitlines() if l.startswith("bad.py")] == ["OFF105"]
    proc = run_cli("--ignore", "OFF101,OFF104", "--no-cache", cwd=tree)
    assert "OFF101" not in proc.stdout and "OFF105" in proc.stdout
    proc = run_cli("--statistics", "--no-cache", cwd=tree)
    assert proc.stdout.splitlines()[:3] == ["1  OFF101      transfer-in-loop", "1  OFF104      sync-in-loop",
                                            "1  OFF105  [*] host-alloc-then-upload"]
    proc = run_cli("--select", "OFF9", "--no-cache", cwd=tree)
    assert proc.returncode == 0
    proc = run_cli("--select", "OFF777", cwd=tree)
    assert proc.returncode == 2 and proc.stderr.strip() == (
        "offload-lint: --select: unknown rule code or prefix 'OFF777' (see `offload-lint rules`)"
    )


def test_off106_only_when_selected(tmp_path: Path) -> None:
    (tmp_path / "loop.py").write_text("import cupy as cp\nfor c in chunks:\n    d = cp.asarray(c)\n")
    assert run_cli("--no-cache", cwd=tmp_path).returncode == 0
    proc = run_cli("--extend-select", "OFF106", "--no-cache", cwd=tmp_path)
    assert proc.returncode == 1 and "loop.py:3:9: OFF106 cupy.asarray copies host->device" in proc.stdout


def test_exit_zero_and_show_suppressed(tree: Path) -> None:
    assert run_cli("--exit-zero", "--no-cache", cwd=tree).returncode == 0
    (tree / "bad.py").write_text(BAD.replace("z = cp.asarray(np.zeros(8))", "z = cp.asarray(np.zeros(8))  # noqa: OFF105"))
    proc = run_cli("--select", "OFF105", "--no-cache", cwd=tree)
    assert proc.returncode == 0 and "OFF105" not in proc.stdout
    proc = run_cli("--select", "OFF105", "--show-suppressed", "--no-cache", cwd=tree)
    assert proc.returncode == 0 and "bad.py:13:5: OFF105 [*]" in proc.stdout and "(suppressed)" in proc.stdout


def test_fix_writes_safe_fixes_and_reports_the_rest(tree: Path) -> None:
    proc = run_cli("--fix", "--no-cache", cwd=tree)
    assert proc.returncode == 1
    text = (tree / "bad.py").read_text()
    assert "z = cp.zeros(8)" in text and "d = cp.asarray(x)" in text  # the OFF101 hoist is unsafe
    assert "Fixed 1 finding in 1 file." in proc.stdout and "OFF105" not in proc.stdout
    proc = run_cli("--fix", "--unsafe-fixes", "--no-cache", cwd=tree)
    text = (tree / "bad.py").read_text()
    assert "    d = cp.asarray(x)\n    for i in range(n):\n" in text
    compile(text, "bad.py", "exec")
    assert "OFF101" not in proc.stdout and "OFF104" in proc.stdout


def test_diff_prints_and_writes_nothing(tree: Path) -> None:
    proc = run_cli("--diff", "--unsafe-fixes", "--no-cache", cwd=tree)
    assert proc.returncode == 1
    assert "--- a/bad.py" in proc.stdout and "+z = cp.zeros(8)" in proc.stdout and "+    d = cp.asarray(x)" in proc.stdout
    assert "Would fix 2 findings in 1 file." in proc.stderr
    assert (tree / "bad.py").read_text() == BAD
    assert run_cli("--diff", "clean.py", "--no-cache", cwd=tree).returncode == 0


def test_unparsable_and_undecodable_files_are_findings_and_the_run_goes_on(tree: Path) -> None:
    (tree / "broken.py").write_text("import cupy as cp\ndef f(:\n    pass\n")
    (tree / "latin.py").write_bytes(b"import cupy as cp\nname = '\xe9'\n")
    proc = run_cli("--format", "json", "--no-cache", cwd=tree)
    assert proc.returncode == 1
    found = {(d["path"], d["code"], d["line"]) for d in json.loads(proc.stdout)}
    assert ("broken.py", "OFF901", 2) in found and ("latin.py", "OFF902", 1) in found and ("bad.py", "OFF101", 8) in found


def test_unreadable_file_is_off902(tree: Path) -> None:
    if os.geteuid() == 0:
        (tree / "dangling.py").symlink_to(tree / "missing-target.py")
    else:
        (tree / "secret.py").write_text(CLEAN)
        (tree / "secret.py").chmod(0)
    proc = run_cli("--format", "json", "--no-cache", cwd=tree)
    codes = {(d["path"], d["code"]) for d in json.loads(proc.stdout)}
    assert any(code == "OFF902" for _, code in codes)


def test_configuration_in_pyproject(tree: Path) -> None:
    (tree / "sub").mkdir()
    (tree / "sub" / "gen.py").write_text(BAD)
    (tree / "tests").mkdir()
    (tree / "tests" / "test_x.py").write_text(BAD)
    (tree / "apis.yaml").write_text(
        "library: mygpu\nmodules: [mygpu]\nentries:\n  - call: mygpu.upload\n    kind: h2d\n    blocking: true\n"
    )
    (tree / "mine.py").write_text("import mygpu\nfor i in range(3):\n    mygpu.upload(a)\n")
    (tree / "pyproject.toml").write_text(
        "[tool.offload-lint]\n"
        "ignore = ['OFF104']\n"
        "extend-exclude = ['sub']\n"
        "extend-apis = ['apis.yaml']\n"
        "[tool.offload-lint.per-file-ignores]\n"
        "'tests/*' = ['OFF101']\n"
        "[tool.offload-lint.options.OFF105]\n"
        "creators = ['ones']\n"
    )
    proc = run_cli("--format", "json", "--no-cache", cwd=tree)
    found = sorted((d["path"], d["code"], d["line"]) for d in json.loads(proc.stdout))
    # OFF104 ignored, sub/ excluded, OFF101 ignored under tests/, np.zeros no longer a creator, mygpu.upload known
    assert found == [("bad.py", "OFF101", 8), ("mine.py", "OFF101", 3)]


@pytest.mark.parametrize(
    "toml, message",
    [
        ("[tool.offload-lint]\ncolour = 'red'\n", "unknown key(s) in [tool.offload-lint]: colour"),
        ("[tool.offload-lint]\nselect = 'OFF1\n", "invalid TOML"),
        ("[tool.offload-lint.options.OFF104]\nconversion = []\n", "rule OFF104 has no option 'conversion' (options: conversions, control-flow)"),
        ("[tool.offload-lint.options.OFF104]\nconversions = 'float'\n", "option OFF104.conversions must be list, got str"),
        ("[tool.offload-lint]\nextend-apis = ['nowhere.yaml']\n", "extend-apis file"),
        ("[tool.offload-lint]\nignore = ['XYZ1']\n", "unknown rule code or prefix 'XYZ1'"),
        ("[tool.offload-lint]\nselect = 'OFF101'\n", "'select' must be an array of strings, got a string"),
        ("[tool.offload-lint]\ncache-dir = 3\n", "'cache-dir' must be a folder name (a non-empty string), got an integer"),
        ("[tool.offload-lint.per-file-ignores]\n'x/*' = 'OFF101'\n", "'per-file-ignores.x/*' must be an array of strings"),
    ],
)
def test_bad_configuration_is_one_line_and_exit_two(tree: Path, toml: str, message: str) -> None:
    (tree / "pyproject.toml").write_text(toml)
    proc = run_cli("--no-cache", cwd=tree)
    assert proc.returncode == 2
    assert message in proc.stderr and proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
    assert str(tree / "pyproject.toml") in proc.stderr


def test_usage_errors_exit_two(tree: Path) -> None:
    assert run_cli("--format", "xml", cwd=tree).returncode == 2
    proc = run_cli("--jobs", "0", cwd=tree)
    assert proc.returncode == 2 and "--jobs needs a positive integer" in proc.stderr
    proc = run_cli("missing.py", cwd=tree)
    assert proc.returncode == 2 and proc.stderr.strip() == "offload-lint: missing.py: no such file or folder"


def test_rules_and_explain(tmp_path: Path) -> None:
    proc = run_cli("rules", cwd=tmp_path)
    assert proc.returncode == 0
    lines = proc.stdout.splitlines()
    assert any(l.startswith("OFF101  warning  on   fix*  transfer-in-loop") for l in lines)
    assert any(l.startswith("OFF106  info     off") for l in lines)
    data = json.loads(run_cli("rules", "--format", "json", cwd=tmp_path).stdout)
    assert {d["code"] for d in data} >= {"OFF101", "OFF205", "OFF902"}
    proc = run_cli("explain", "OFF104", cwd=tmp_path)
    assert proc.returncode == 0
    assert proc.stdout.startswith("OFF104 sync-in-loop (static, warning, on by default, no automatic fix)")
    assert "Why it matters:" in proc.stdout and "conversions = " in proc.stdout and "Flagged:" in proc.stdout
    assert run_cli("explain", "transfer-in-loop", cwd=tmp_path).stdout.startswith("OFF101 transfer-in-loop")
    proc = run_cli("explain", "OFF999", cwd=tmp_path)
    assert proc.returncode == 2 and "no rule 'OFF999' in the catalog" in proc.stderr


def test_console_script_is_installed(tree: Path) -> None:
    script = Path(sys.executable).parent / "offload-lint"
    assert script.exists()
    import subprocess

    proc = subprocess.run([str(script), "--version"], capture_output=True, text=True, cwd=tree)
    assert proc.returncode == 0 and proc.stdout.startswith("offload-lint ")


def test_parallel_run_matches_serial_and_kernels_cross_files(tmp_path: Path) -> None:
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "kernels.py").write_text(
        "from offload_core import In, InOut, kernel\n\n@kernel\ndef axpy(y: InOut, x: In, a: float) -> None:\n    y += a * x\n"
    )
    for i in range(24):
        (pkg / f"use{i}.py").write_text(
            "import numpy as np\nfrom offload_core import offload\nfrom .kernels import axpy\n\n"
            f"v = np.ones({i + 1})\noffload(axpy, v, v, 1.0)\n"
        )
    serial = run_cli("--format", "json", "--jobs", "1", "--no-cache", cwd=tmp_path)
    parallel = run_cli("--format", "json", "--jobs", "2", "--no-cache", cwd=tmp_path)
    assert serial.returncode == parallel.returncode == 1
    assert json.loads(serial.stdout) == json.loads(parallel.stdout)
    assert len([d for d in json.loads(serial.stdout) if d["code"] == "OFF201"]) == 24


def test_cache_is_written_reused_and_invalidated(tree: Path) -> None:
    first = run_cli("--format", "json", cwd=tree)
    cache = tree / ".offload-lint-cache"
    entries = [p for p in cache.rglob("*") if p.is_file() and len(p.name) == 40]
    # bad.py and clean.py, and plain.py's call-graph summary (empty: it has no loop), so a warm run reads no file twice
    assert len(entries) == 3 and (cache / ".gitignore").read_text().endswith("*\n")
    mtimes = {p: p.stat().st_mtime_ns for p in entries}
    second = run_cli("--format", "json", cwd=tree)
    assert second.stdout == first.stdout
    assert {p: p.stat().st_mtime_ns for p in entries} == mtimes  # read, not rewritten
    (tree / "bad.py").write_text(BAD + "w = cp.asarray(np.ones(3))\n")
    third = json.loads(run_cli("--format", "json", cwd=tree).stdout)
    assert [d["line"] for d in third if d["code"] == "OFF105"] == [13, 14]
    fourth = json.loads(run_cli("--format", "json", "--select", "OFF105", cwd=tree).stdout)
    assert [d["code"] for d in fourth] == ["OFF105", "OFF105"]


def test_no_cache_writes_nothing(tree: Path) -> None:
    run_cli(cwd=tree, *["--no-cache"])
    assert not (tree / ".offload-lint-cache").exists()


def test_python_dash_m_and_check_subcommand(tree: Path) -> None:
    """`check` is the default command: the same report and exit code with the word and without it."""
    clean = run_cli("check", "clean.py", "--no-cache", cwd=tree)
    assert (clean.returncode, clean.stdout) == (0, "All checks passed.\n")
    named = run_cli("check", "bad.py", "--no-cache", cwd=tree)
    default = run_cli("bad.py", "--no-cache", cwd=tree)
    assert named.returncode == default.returncode == 1
    assert named.stdout == default.stdout and "bad.py:" in named.stdout


def test_sarif_from_the_command_line_validates(tree: Path) -> None:
    import jsonschema

    schema = json.loads((ROOT / "tests" / "data" / "sarif-schema-2.1.0.json").read_text())
    proc = run_cli("--format", "sarif", "-o", "out.sarif", "--no-cache", cwd=tree)
    assert proc.returncode == 1 and proc.stdout == ""
    log = json.loads((tree / "out.sarif").read_text())
    validator = jsonschema.validators.validator_for(schema)
    validator(schema, format_checker=validator.FORMAT_CHECKER).validate(log)
    assert len(log["runs"][0]["results"]) == 3
