"""Every output format of offload-prof against a snapshot: report (text, JSON), compare, the TUI's text, gate
(text, GitHub, JSON), the Chrome export.

The inputs are two small runs written here record by record (a naive loop
of three launches, and the same loop inside a region) with fixed times,
relative file names and fixed metadata, so the outputs hold no absolute
path, no clock reading and no version of anything installed. The commands
run in-process through `profiler.cli.main`, in a temporary folder.
`pytest --snapshot-update` rewrites the snapshots after a deliberate change.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from profiler.cli import main
from profiler.model import Meta, Record, Run, Site

LOOP = Site("app.py", 12, "step", "offload(daxpy, y, x, 2.0)", 9)
REGION = Site("app.py", 10, "main", "with region(x, y):", 5)
X, Y = 0x1000, 0x9000  # host buffer identities
MIB = 1 << 20


def _meta(mode: str, wall_ns: int) -> Meta:
    return Meta(backend="numpy", device="NumPy backend", mode=mode, started_at="2026-01-02T03:04:05.000+00:00",
                wall_ns=wall_ns, tool_version="test", command=("offload-prof", "run", "--", "app.py"),
                argv=("app.py",), cwd="", python="CPython 3", host="test-host", fingerprints=True)


class _Clock:
    def __init__(self) -> None:
        self.t = 0

    def record(self, kind: str, ns: int, **fields: object) -> Record:
        r = Record(kind, self.t, ns, **fields)  # type: ignore[arg-type]
        self.t += ns + 1_000
        return r


def naive_run() -> Run:
    """Three launches outside a region: each uploads x and y, downloads y and syncs."""
    c = _Clock()
    records = []
    for i in range(3):
        common = dict(kernel="daxpy", launch=i, site=LOOP, mode="naive")
        records += [
            c.record("alloc", 2_000, nbytes=8 * MIB, param="y", **common),
            c.record("h2d", 1_400_000, nbytes=8 * MIB, param="y", array=Y, fingerprint=f"y{i}", **common),
            c.record("alloc", 2_000, nbytes=8 * MIB, param="x", **common),
            c.record("h2d", 1_400_000, nbytes=8 * MIB, param="x", array=X, fingerprint="x", **common),
            c.record("launch", 300_000, **common),
            c.record("d2h", 3_000_000, nbytes=8 * MIB, param="y", array=Y, fingerprint=f"y{i + 1}", **common),
            c.record("sync", 10_000, **common),
            c.record("free", 1_000, nbytes=8 * MIB, param="x", **common),
            c.record("free", 1_000, nbytes=8 * MIB, param="y", **common),
        ]
    return Run(_meta("naive", c.t + 50_000), tuple(records))


def batched_run() -> Run:
    """The same loop inside `with region(x, y)`: x and y go up once, y comes back once."""
    c = _Clock()
    region = dict(region=0, site=REGION, mode="batched")
    records = [
        c.record("region_enter", 1_000, **region),
        c.record("alloc", 2_000, nbytes=8 * MIB, param="x", **region),
        c.record("h2d", 1_400_000, nbytes=8 * MIB, param="x", array=X, fingerprint="x", **region),
        c.record("alloc", 2_000, nbytes=8 * MIB, param="y", **region),
        c.record("h2d", 1_400_000, nbytes=8 * MIB, param="y", array=Y, fingerprint="y0", **region),
    ]
    records += [c.record("launch", 300_000, kernel="daxpy", launch=i, site=LOOP, region=0, mode="batched")
                for i in range(3)]
    records += [
        c.record("d2h", 3_000_000, nbytes=8 * MIB, param="y", array=Y, fingerprint="y3", **region),
        c.record("sync", 10_000, **region),
        c.record("free", 1_000, nbytes=8 * MIB, param="x", **region),
        c.record("free", 1_000, nbytes=8 * MIB, param="y", **region),
        c.record("region_exit", 3_020_000, nbytes=8 * MIB, **region),
    ]
    return Run(_meta("batched", c.t + 50_000), tuple(records))


@pytest.fixture
def traces(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """naive.json and batched.json in the current folder, which is a fresh temporary one."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("OFFLOAD_PROF_HOME", str(tmp_path / "config"))  # no calibration of this machine
    naive_run().save("naive.json")
    batched_run().save("batched.json")
    return tmp_path


def _out(capsys: pytest.CaptureFixture[str], *argv: str, status: int = 0) -> str:
    assert main(list(argv)) == status
    captured = capsys.readouterr()
    return captured.out


def test_report_text(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    assert _out(capsys, "report", "naive.json") == text_snapshot


def test_report_json(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    out = _out(capsys, "report", "naive.json", "--format", "json")
    assert [f["code"] for f in json.loads(out)["findings"]] == ["OFF501"]
    assert out == text_snapshot


def test_report_without_a_modelled_link(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    assert _out(capsys, "report", "batched.json", "--no-model") == text_snapshot


def test_compare(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    assert _out(capsys, "compare", "naive.json", "batched.json") == text_snapshot


def test_compare_json(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    out = _out(capsys, "compare", "--format", "json", "--top", "1", "naive.json", "batched.json")
    doc = json.loads(out)
    naive, batched = doc["runs"]
    assert (naive["name"], batched["name"]) == ("naive", "batched") and naive["trace"] == "naive.json"
    assert (naive["totals"]["h2d"]["count"], batched["totals"]["h2d"]["count"]) == (6, 2)
    assert doc["ratios"]["h2d_count"] == 3.0 and doc["link"]["name"] == "pcie5-x16"
    assert len(naive["sites"]) == 1, "--top limits the call sites"
    assert [f["code"] for f in naive["findings"]] and batched["findings"] == []
    assert out == text_snapshot


def test_tui_as_text(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    assert _out(capsys, "tui", "--no-tui", "naive.json", "batched.json") == text_snapshot


@pytest.mark.parametrize("fmt", ["text", "github", "json"])
def test_gate(fmt: str, traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    Path("budget.yaml").write_text("h2d: {count: 4}\nsyncs: 3\ntime:\n  copy: 10%\n")
    assert main(["gate", "batched.json", "--baseline", "base.json", "--update-baseline"]) == 0
    capsys.readouterr()
    assert _out(capsys, "gate", "naive.json", "--baseline", "base.json", "--allow-mismatch", "--budget", "budget.yaml",
                "--format", fmt, status=1) == text_snapshot


def test_gate_passes(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    assert main(["gate", "batched.json", "--baseline", "base.json", "--update-baseline"]) == 0
    capsys.readouterr()
    assert _out(capsys, "gate", "batched.json", "--baseline", "base.json", "--format", "github") == text_snapshot


def test_chrome_export(traces: Path, capsys: pytest.CaptureFixture[str], text_snapshot: object) -> None:
    assert main(["export", "--chrome", "naive.json", "batched.json", "-o", "trace.chrome.json"]) == 0
    document = json.loads(Path("trace.chrome.json").read_text())
    assert json.dumps(document, indent=1) + "\n" == text_snapshot
