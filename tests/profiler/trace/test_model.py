"""The trace model: round trips through JSON and files, and one-line errors for bad files."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from profiler.errors import TraceError
from profiler.model import FORMAT, SCHEMA_VERSION, Link, Meta, Record, Run, Site, relative_file

from ..kit import prof

SITE = Site("/work/app.py", 12, "loop", "offload(daxpy, y, x, 2.0)", 9)


def sample() -> Run:
    meta = Meta(backend="numpy", device="host", mode="naive", started_at="2026-01-01T00:00:00+00:00", wall_ns=5000,
                argv=("app.py", "--n", "3"), cwd="/work", fingerprints=True,
                link=Link("test-link", 6.3, 2.7, 54.0, None, 13.0))
    records = (
        Record("alloc", 10, 5, 800, site=SITE, kernel="daxpy", launch=0, param="y", array=1234),
        Record("h2d", 20, 100, 800, site=SITE, kernel="daxpy", launch=0, param="y", array=1234, fingerprint="ab12"),
        Record("launch", 130, 50, site=SITE, kernel="daxpy", launch=0),
        Record("d2h", 190, 300, 800, pinned=True, site=SITE, kernel="daxpy", launch=0, param="y", array=1234),
        Record("sync", 500, 2, site=SITE, kernel="daxpy", launch=0),
        Record("region_enter", 600, 1, region=3, site=None),
    )
    return Run(meta, records)


def test_json_round_trip_is_exact() -> None:
    run = sample()
    data = json.loads(json.dumps(run.to_json()))
    assert data["format"] == FORMAT and data["schema"] == 2 < SCHEMA_VERSION, "one process: schema 2"
    assert len(data["sites"]) == 1, "records sharing a site share one table entry"
    assert Run.from_json(data) == run


@pytest.mark.parametrize("name", ["t.json", "t.json.gz"])
def test_save_and_load(tmp_path: Path, name: str) -> None:
    run = sample()
    path = run.save(tmp_path / name)
    assert (path.read_bytes()[:2] == b"\x1f\x8b") == name.endswith(".gz")
    loaded = Run.load(path)
    assert loaded == run
    assert loaded.records[1].site is loaded.records[3].site, "sites are interned on load"
    assert [s.text for s in loaded.sites] == ["offload(daxpy, y, x, 2.0)"]
    assert not list(tmp_path.glob(".*")), "no temporary file left behind"


def test_queries() -> None:
    run = sample()
    assert [r.kind for r in run.copies()] == ["h2d", "d2h"]
    assert [r.kind for r in run.of_kind("sync", "launch")] == ["launch", "sync"]
    assert run.records[1].end_ns == 120 and run.records[1].is_copy and not run.records[2].is_copy
    assert run.label == "app.py --n 3"
    assert str(SITE) == "/work/app.py:12 in loop"


def test_link_model() -> None:
    link = Link("l", h2d_pageable_gbps=2.0, d2h_pageable_gbps=1.0, h2d_pinned_gbps=10.0, latency_us=5.0)
    assert link.copy_ns("h2d", 2000, pinned=False) == 5000 + 1000
    assert link.copy_ns("h2d", 2000, pinned=True) == 5000 + 200
    assert link.copy_ns("d2h", 2000, pinned=True) == 5000 + 2000, "no pinned D2H figure: the pageable one"


def test_relative_file() -> None:
    assert relative_file("/work/pkg/a.py", "/work") == "pkg/a.py"
    assert relative_file("/elsewhere/a.py", "/work") == "/elsewhere/a.py"
    assert relative_file("<string>", "/work") == "<string>"


def _corrupt(tmp_path: Path, edit) -> Path:  # type: ignore[no-untyped-def]
    data = sample().to_json(schema=1)  # the row layout: schema 1 files must still be checked on load
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


@pytest.mark.parametrize(
    "edit, problem",
    [
        (lambda d: d.update(schema=SCHEMA_VERSION + 1), f"written with trace schema {SCHEMA_VERSION + 1}, newer than this offload-prof reads"),
        (lambda d: d.update(schema="one"), "bad schema version 'one'"),
        (lambda d: d.update(format="something"), "not an offload-prof trace (format 'something')"),
        (lambda d: d.pop("format"), "not an offload-prof trace (no 'format' key)"),
        (lambda d: d["meta"].pop("backend"), "missing key 'meta.backend'"),
        (lambda d: d["meta"].update(wall_ns="long"), "'meta.wall_ns' must be an integer, got a string"),
        (lambda d: d["records"][1].__setitem__(0, "h3d"), "record 1: kind 'h3d' is not one of"),
        (lambda d: d["records"][2].pop(), "record 2 must be a list of 13 values"),
        (lambda d: d["records"][3].__setitem__(9, 7), "record 3: site 7 is not an index into the 1 sites"),
        (lambda d: d["records"][0].__setitem__(3, -1), "record 0: start_ns, duration_ns and nbytes must be integers"),
        (lambda d: d["sites"][0].pop(), "site 0 must be [file, line, function, text, column]"),
        (lambda d: d.update(columns=["kind"]), "record columns ['kind'] do not match schema 1"),
        (lambda d: d["meta"]["link"].update(h2d_pageable_gbps=-1), "meta.link: 'h2d_pageable_gbps' must be a number from 0 to 1e+09"),
        (lambda d: d["meta"]["link"].update(latency_us=1e12), "meta.link: 'latency_us' must be a number from 0 to 1e+09"),
        (lambda d: d["meta"]["link"].update(source=[[0]]), "meta.link: 'source' must be a string"),
    ],
)
def test_malformed_traces_fail_with_one_line_naming_the_file(tmp_path: Path, edit, problem: str) -> None:  # type: ignore[no-untyped-def]
    path = _corrupt(tmp_path, edit)
    with pytest.raises(TraceError) as exc:
        Run.load(path)
    message = str(exc.value)
    assert message.startswith(f"{path}: ") and problem in message and "\n" not in message


def test_truncated_and_unreadable_files(tmp_path: Path) -> None:
    good = sample().save(tmp_path / "good.json").read_bytes()
    cases = {
        "truncated.json": (good[: len(good) // 2], "truncated: the JSON document ends before it is complete"),
        "garbage.json": (b"{not json at all", "not valid JSON at line 1 column 2"),
        "empty.json": (b"", "empty file, not a trace"),
        "binary.json": (b"\xff\xfe\x00junk", "not UTF-8 text"),
        "list.json": (b"[1, 2]", "not an offload-prof trace (the JSON is an array, not an object)"),
        "cut.json.gz": (gzip.compress(good)[:40], "truncated or corrupt gzip data"),
    }
    for name, (content, problem) in cases.items():
        path = tmp_path / name
        path.write_bytes(content)
        with pytest.raises(TraceError, match="^" + str(path).replace(".", r"\.") + ": ") as exc:
            Run.load(path)
        assert problem in str(exc.value), name
    with pytest.raises(TraceError, match="cannot read trace file"):
        Run.load(tmp_path / "missing.json")
    with pytest.raises(TraceError, match="is a directory"):
        Run.load(tmp_path)


def test_a_baseline_passed_as_a_trace_says_so(tmp_path: Path) -> None:
    path = tmp_path / "b.json"
    path.write_text(json.dumps({"format": "offload-prof-baseline", "schema": 1, "flows": []}))
    with pytest.raises(TraceError, match="an offload-prof baseline; pass it as --baseline"):
        Run.load(path)


@pytest.mark.parametrize("command", ["report", "compare", "export", "gate"])
def test_cli_reports_bad_traces_with_exit_2_and_no_traceback(tmp_path: Path, command: str) -> None:
    good = sample().save(tmp_path / "good.json")
    bad = tmp_path / "bad.json"
    bad.write_bytes(good.read_bytes()[:-30])
    args = {"report": [str(bad)], "compare": [str(good), str(bad)], "export": ["--chrome", str(bad)],
            "gate": [str(bad), "--baseline", str(good)]}[command]
    proc = prof(command, *args, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip() == f"offload-prof: error: {bad}: truncated: the JSON document ends before it is complete ({len(good.read_bytes()) - 30} bytes read)"
    assert "Traceback" not in proc.stderr and proc.stdout == ""
