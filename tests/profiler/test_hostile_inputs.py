"""Hostile input files against every loader: one line naming the file and exit 2, never a traceback, a hang or exit 1.

Each loader is a command that reads a file a user names: `report`,
`compare` (either side), `gate` (the run, the baseline and the budget),
`tui`, `export` (both formats), `import-rocprof` and `--link FILE`. Each
bad input below once gave a traceback (RecursionError, zlib.error,
MemoryError), hung (a FIFO) or read without end (`/dev/zero`); in `gate` a
traceback exited 1, which reads as "regression".
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

import profiler.files
from profiler.cli import main
from profiler.model import Meta, Record, Run, Site

from .kit import env

SITE = Site("/work/app.py", 3, "<module>", "offload(k, x)", 1)


def good_run(mode: str = "naive") -> Run:
    meta = Meta(backend="numpy", device="host", mode=mode, started_at="2026-01-01T00:00:00+00:00", wall_ns=10_000,
                argv=("app.py",), cwd="/work")
    return Run(meta, (Record("h2d", 10, 100, 800, site=SITE, kernel="k", launch=0, param="x", array=1, mode=mode),
                      Record("launch", 120, 50, site=SITE, kernel="k", launch=0, mode=mode),
                      Record("d2h", 200, 100, 800, site=SITE, kernel="k", launch=0, param="x", array=1, mode=mode)))


def loaders(bad: Path, good: Path, base: Path, out: Path) -> dict[str, list[str]]:
    """Every command that reads a file a user names, with `bad` in that place."""
    b = str(bad)
    return {
        "report": ["report", b],
        "compare first": ["compare", b, str(good)],
        "compare second": ["compare", str(good), b],
        "gate run": ["gate", b, "--baseline", str(base)],
        "gate baseline": ["gate", str(good), "--baseline", b],
        "gate budget": ["gate", str(good), "--baseline", str(base), "--budget", b],
        "tui": ["tui", "--no-tui", b],
        "export chrome": ["export", b, "-o", str(out)],
        "export json": ["export", "--format", "json", b, "-o", str(out)],
        "import-rocprof": ["import-rocprof", b, "-o", str(out)],
        "report --link": ["report", str(good), "--link", b],
    }


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path, Path]:
    good = good_run().save(tmp_path / "good.json")
    base = tmp_path / "base.json"
    assert main(["gate", str(good), "--baseline", str(base), "--update-baseline"]) == 0
    return good, base, tmp_path / "out" / "x.json"


def _trace_doc(edit: Callable[[dict], None]) -> bytes:  # type: ignore[type-arg]
    doc = good_run().to_json()
    edit(doc)
    return json.dumps(doc).encode()


def _corrupt_gzip() -> bytes:
    data = bytearray(gzip.compress(json.dumps(good_run().to_json()).encode() * 50))
    data[len(data) // 2: len(data) // 2 + 16] = b"\xff" * 16  # a body that no longer inflates
    return bytes(data)


BAD: dict[str, bytes] = {
    "nested arrays": b"[" * 100_000,
    "nested objects": b'{"a":' * 100_000,
    "corrupt gzip body": _corrupt_gzip(),
    "a JSON null": b"null",
    "an integer of 5000 digits": b"[" + b"1" * 5000 + b"]",
    "meta as an array": _trace_doc(lambda d: d.update(meta=[])),
    "negative wall_ns": _trace_doc(lambda d: d["meta"].update(wall_ns=-3_313_220)),
    "huge wall_ns": _trace_doc(lambda d: d["meta"].update(wall_ns=10**30)),
    "unknown mode": _trace_doc(lambda d: d["meta"].update(mode="fast")),
    "columns as a string": _trace_doc(lambda d: d.update(columns="kind")),
    "a structured dtype": _trace_doc(lambda d: d["columns"]["kind"].update(dtype="i4,i4")),
}


def _assert_one_line_exit_2(rc: int, out: str, err: str, bad: Path, case: str) -> None:
    assert rc == 2, f"{case}: exit {rc}: {err}"
    assert err.startswith(f"offload-prof: error: {bad}: ") and err.count("\n") == 1, f"{case}: {err!r}"
    assert "Traceback" not in err and "internal error" not in err and out == "", case


@pytest.mark.parametrize("content", list(BAD), ids=list(BAD))
def test_bad_bytes_are_one_line_and_exit_2_in_every_loader(
        content: str, files: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(BAD[content])
    for name, argv in loaders(bad, *files).items():
        rc = main(argv)
        captured = capsys.readouterr()
        _assert_one_line_exit_2(rc, captured.out, captured.err, bad, f"{content} / {name}")


def test_a_file_larger_than_the_limit_is_refused_before_it_is_read(
        files: tuple[Path, Path, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    huge = tmp_path / "huge.json"
    with huge.open("wb") as fh:  # sparse: no disk space, no time
        fh.truncate(profiler.files.MAX_INPUT_BYTES + 1)
    for name, argv in loaders(huge, *files).items():
        rc = main(argv)
        captured = capsys.readouterr()
        _assert_one_line_exit_2(rc, captured.out, captured.err, huge, name)
        assert "4.29 GB is more than the 4.29 GB offload-prof reads" in captured.err or \
            "more than the 16.8 MB" in captured.err, captured.err


def test_gzip_that_inflates_beyond_the_limit_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from profiler.errors import TraceError

    bomb = tmp_path / "bomb.json.gz"
    bomb.write_bytes(gzip.compress(b" " * (4 << 20)))  # 4 MiB of spaces in a few kB
    monkeypatch.setattr(profiler.files, "MAX_INPUT_BYTES", 1 << 20)
    with pytest.raises(TraceError, match=r"bomb.json.gz: gzip data inflates to more than the 1.05 MB offload-prof reads"):
        Run.load(bomb)


def _limited_memory() -> None:
    limit = 3 << 30
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


@pytest.mark.skipif(not hasattr(os, "mkfifo") or not os.path.exists("/dev/zero"), reason="needs FIFOs and /dev/zero")
@pytest.mark.parametrize("kind", ["fifo", "/dev/zero"])
def test_fifos_and_devices_are_refused_without_reading(kind: str, files: tuple[Path, Path, Path], tmp_path: Path) -> None:
    # a real process each, with a time and memory limit: before the fix a FIFO hung and /dev/zero read until
    # memory ran out
    if kind == "fifo":
        bad = tmp_path / "pipe.json"
        os.mkfifo(bad)
        what = "is a FIFO, not a"
    else:
        bad = Path("/dev/zero")
        what = "is a character device, not a"
    for name in ("report", "gate run", "gate baseline", "import-rocprof", "gate budget"):
        argv = loaders(bad, *files)[name]
        proc = subprocess.run([sys.executable, "-m", "profiler", *argv], cwd=tmp_path, env=env(), capture_output=True,
                              text=True, timeout=60, preexec_fn=_limited_memory)
        _assert_one_line_exit_2(proc.returncode, proc.stdout, proc.stderr, bad, name)
        assert what in proc.stderr, proc.stderr


def test_schema_1_integers_beyond_64_bits_are_refused_by_the_commands(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    big = Run(good_run().meta, good_run().records + (Record("h2d", 1, 1, 2**70, array=5),))
    path = big.save(tmp_path / "big.json")
    assert Run.load(path) == big, "the file keeps what was recorded"
    assert main(["report", str(path)]) == 2
    assert capsys.readouterr().err == \
        f"offload-prof: error: {path}: holds an integer beyond 64 bits, which offload-prof cannot analyse\n"


# ------------------------------------------------------------ validation
@pytest.mark.parametrize("edit, message", [
    (lambda m: m.update(wall_ns=-3_313_220), "'meta.wall_ns' is -3313220, outside 0 to 2^63-1 nanoseconds"),
    (lambda m: m.update(wall_ns=2**63), f"'meta.wall_ns' is {2**63}, outside 0 to 2^63-1 nanoseconds"),
    (lambda m: m.update(mode="fast"), "'meta.mode' is 'fast', not one of naive, batched"),
    (lambda m: m.update(outcome="meh"), "'meta.outcome' is 'meh', not one of ok, exit, exception, interrupted"),
    (lambda m: m.update(argv=["app.py", 3]), "'meta.argv' must be an array of strings"),
    (lambda m: m.update(wall_samples_ns=[1, -2]), "'meta.wall_samples_ns' must be an array of integers from 0 to 2^63-1"),
    (lambda m: m.update(link=None, backend=None), "'meta.backend' must be a string, got null"),
    (lambda m: m.update(dropped=-5), "'meta.dropped' is -5, outside 0 to 2^63-1 records"),
    (lambda m: m.update(dropped="many"), "'meta.dropped' must be an integer, got a string"),
    (lambda m: m.update(exits_ns=[5]), "'meta.exits_ns' must be an array of two integers from 0 to 2^63-1 (ns)"),
    (lambda m: m.update(exits_ns=[5, -1]), "'meta.exits_ns' must be an array of two integers from 0 to 2^63-1 (ns)"),
    (lambda m: m.update(exits_ns=[5, 1.5]), "'meta.exits_ns' must be an array of two integers from 0 to 2^63-1 (ns)"),
    (lambda m: m.update(exits_ns="fast"), "'meta.exits_ns' must be an array, got a string"),
])
def test_meta_out_of_range_or_unknown_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], edit, message: str) -> None:  # type: ignore[no-untyped-def]
    doc = good_run().to_json()
    edit(doc["meta"])
    path = tmp_path / "t.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 2
    assert capsys.readouterr().err == f"offload-prof: error: {path}: {message}\n"


@pytest.mark.parametrize("command", ["report", "compare"])
@pytest.mark.parametrize("top, problem", [("0", "must be at least 1, got 0"), ("-3", "must be at least 1, got -3"),
                                          ("many", "'many' is not a whole number")])
def test_top_must_be_positive(command: str, top: str, problem: str, files: tuple[Path, Path, Path],
                              capsys: pytest.CaptureFixture[str]) -> None:
    good = str(files[0])
    traces = [good] if command == "report" else [good, good]
    with pytest.raises(SystemExit) as stop:
        main([command, *traces, "--top", top])
    assert stop.value.code == 2
    assert capsys.readouterr().err == f"offload-prof: error: {command}: argument --top: {problem}\n"


def test_a_negative_wall_time_no_longer_reaches_a_report(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    doc = good_run().to_json()
    doc["meta"]["wall_ns"] = -3_313_220
    path = tmp_path / "neg.json"
    path.write_text(json.dumps(doc))
    assert main(["report", str(path)]) == 2
    assert "% of wall" not in capsys.readouterr().out


@pytest.mark.parametrize("option, value, problem", [
    ("--time", "copy:1e999%", "copy tolerance '1e999%' is not a finite percentage"),
    ("--time", "copy:nan%", "copy tolerance 'nan%' is not a finite percentage"),
    ("--time", "wall:1e999s", "wall tolerance '1e999s' is too large"),
])
def test_tolerances_that_are_not_finite_are_refused(option: str, value: str, problem: str,
                                                    files: tuple[Path, Path, Path],
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    good, base, _ = files
    assert main(["gate", str(good), "--baseline", str(base), option, value]) == 2
    err = capsys.readouterr().err
    assert err.startswith("offload-prof: error: --time: ") and problem in err and err.count("\n") == 1, err
