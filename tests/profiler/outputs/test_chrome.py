"""Chrome Trace Event export: valid structure, µs timestamps, one track per kind of work."""

from __future__ import annotations

import json
from pathlib import Path

from profiler.model import Run
from profiler.outputs.chrome import TRACKS, to_chrome

from ..kit import PROGRAMS, ROOT, prof, record


def test_export_cli_writes_perfetto_json(tmp_path: Path) -> None:
    proc = prof("run", "--mode", "both", "-o", str(tmp_path / "h.json"), "--", str(PROGRAMS / "heat.py"), "256", "2", cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "both.chrome.json"
    proc = prof("export", "--chrome", str(tmp_path / "h.naive.json"), str(tmp_path / "h.batched.json"), "-o", str(out), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert f"wrote {out} (2 runs)" in proc.stderr
    doc = json.loads(out.read_text())
    events = doc["traceEvents"]
    assert {e["pid"] for e in events} == {1, 2}
    names = {(e["pid"], e["args"]["name"]) for e in events if e["name"] == "process_name"}
    assert any("naive" in n for _, n in names) and any("batched" in n for _, n in names)
    for e in events:
        assert e["ph"] in ("M", "X", "C", "i")
        if e["ph"] == "X":
            assert isinstance(e["ts"], float) and e["dur"] >= 0 and e["tid"] in {t for t, _ in TRACKS.values()}
    findings = [e for e in events if e["ph"] == "i"]
    assert findings and {e["pid"] for e in findings} == {1}, "the naive run's round trips; none in the batched"
    assert all(e["tid"] == TRACKS["findings"][0] and e["name"].startswith("OFF503 saves ") for e in findings)
    assert all(isinstance(e["args"]["expected_saving_ns"], int) and e["args"]["fix"] == "keep resident"
               for e in findings)
    labels = {e["pid"]: e["args"]["labels"] for e in events if e["name"] == "process_labels"}
    assert set(labels) == {1, 2} and all(label.split(":")[0].endswith("-bound") for label in labels.values())
    naive = Run.load(tmp_path / "h.naive.json")
    h2d = [e for e in events if e["ph"] == "X" and e["pid"] == 1 and e["tid"] == TRACKS["h2d"][0]]
    assert len(h2d) == sum(r.kind == "h2d" for r in naive.records)
    first = next(r for r in naive.records if r.kind == "h2d")
    assert h2d[0]["ts"] == first.start_ns / 1000 and h2d[0]["dur"] == first.duration_ns / 1000
    assert h2d[0]["args"]["bytes"] == first.nbytes and h2d[0]["args"]["site"].startswith("tests/profiler/programs/heat.py:")


def test_formats_and_default_output_names(tmp_path: Path) -> None:
    trace = tmp_path / "t.json"
    assert prof("run", "-o", str(trace), "--", str(PROGRAMS / "heat.py"), "64", "1", cwd=ROOT).returncode == 0
    assert prof("export", "--chrome", str(trace), cwd=ROOT).returncode == 0, "--chrome still works"
    chrome = (tmp_path / "t.chrome.json").read_bytes()
    assert json.loads(chrome)["traceEvents"]
    (tmp_path / "t.chrome.json").unlink()
    assert prof("export", str(trace), cwd=ROOT).returncode == 0, "chrome is the default format"
    assert prof("export", "--format", "chrome", str(trace), "-o", str(tmp_path / "c.json"), cwd=ROOT).returncode == 0
    assert json.loads((tmp_path / "t.chrome.json").read_bytes()) == json.loads((tmp_path / "c.json").read_bytes()) \
        == json.loads(chrome)
    proc = prof("export", "--format", "json", str(trace), cwd=ROOT)
    assert proc.returncode == 0 and f"wrote {tmp_path / 't.records.json'} (1 run)\n" in proc.stderr
    flat = json.loads((tmp_path / "t.records.json").read_text())
    run = Run.load(trace)
    (only,) = flat["runs"]
    assert flat["format"] == "offload-prof-records" and only["trace"] == str(trace)
    assert only["meta"]["mode"] == run.meta.mode and len(only["records"]) == len(run.records)
    first = next(i for i, r in enumerate(run.records) if r.kind == "h2d")
    row, rec = only["records"][first], run.records[first]
    assert rec.site is not None
    assert (row["kind"], row["nbytes"], row["start_ns"], row["launch"]) == ("h2d", rec.nbytes, rec.start_ns, rec.launch)
    assert row["site"] == {"file": rec.site.file, "line": rec.site.line, "column": rec.site.column,
                           "function": rec.site.function, "text": rec.site.text}
    bad = prof("export", "--chrome", "--format", "json", str(trace), cwd=ROOT)
    assert bad.returncode == 2 and bad.stderr == \
        "offload-prof: error: --chrome and --format json contradict each other; give one\n"


def test_tracks_and_nested_regions(tmp_path: Path) -> None:
    run = record("""\
        import numpy as np
        from offload_core import offload, region
        from tests.offload_core.kit import scale

        a = np.ones(100)
        with region(a):
            with region(a):
                offload(scale, a, 2.0)
            offload(scale, a, 2.0)
    """, tmp_path)
    doc = to_chrome([run])
    threads = {e["tid"]: e["args"]["name"] for e in doc["traceEvents"] if e["name"] == "thread_name"}
    # the tracks of device-to-device copies, memsets and collectives appear only where a run has them
    assert threads == {tid: label for kind, (tid, label) in TRACKS.items() if kind not in ("d2d", "memset", "collective")}
    regions = [e for e in doc["traceEvents"] if e.get("cat") == "region"]
    assert len(regions) == 2
    outer, inner = sorted(regions, key=lambda e: e["dur"], reverse=True)
    assert outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"], "regions nest"
    launches = [e for e in doc["traceEvents"] if e.get("cat") == "launch"]
    assert [e["name"] for e in launches] == ["scale", "scale"]
    memory = [e["args"]["bytes"] for e in doc["traceEvents"] if e["ph"] == "C"]
    assert memory == [800, 0], "the device-memory counter rises at the mapping and falls at its release"
