"""Fuzzing every loader: whatever a file holds, a command ends with its result or one line and exit 2.

Hypothesis mutates valid files (a schema 2 trace, plain and gzipped, a
schema 1 trace, a baseline, rocprofv3 output): it cuts them short, flips
bytes, swaps a JSON value for one of another type or size, and buries a
value under deep nesting. Each mutant goes through the commands that load
that kind of file, in this process. A command may succeed (a mutant can
still be a valid file) or refuse it in one line naming the problem; an
"internal error" (an exception the loaders did not turn into a message)
fails the test, and so does a traceback or exit 1 from the gate for a
file it could not read.
"""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import tempfile
from pathlib import Path
from typing import Any, Callable

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from profiler.cli import main
from profiler.model import Link, Meta, Record, Run, Site
from profiler.outputs.baseline import Baseline

ROCPROF = (Path(__file__).parent / "sources" / "data" / "rocprofv3_results.json").read_bytes()
SITE = Site("/work/app.py", 7, "loop", "offload(k, y, x)", 5)


def _run() -> Run:
    meta = Meta(backend="numpy", device="host", mode="naive", started_at="2026-01-01T00:00:00+00:00", wall_ns=90_000,
                argv=("app.py",), cwd="/work", fingerprints=True, link=Link("l", 6.3, 2.7, 54.0, None, 13.0),
                wall_samples_ns=(90_000, 95_000, 80_000))
    records: list[Record] = []
    t = 0
    for i in range(3):
        for kind, nbytes in (("alloc", 800), ("h2d", 800), ("launch", 0), ("d2h", 800), ("sync", 0), ("free", 800)):
            records.append(Record(kind, t, 1_000, nbytes, kernel="k", launch=i, param="y" if nbytes else None,  # type: ignore[arg-type]
                                  array=4096 if kind in ("h2d", "d2h") else None, site=SITE, mode="naive",
                                  fingerprint=f"f{i}" if kind in ("h2d", "d2h") else None))
            t += 2_000
    records.append(Record("region_enter", t, 10, region=1, site=SITE, mode="naive"))
    records.append(Record("region_exit", t + 20, 10, region=1, site=SITE, mode="naive"))
    return Run(meta, tuple(records))


RUN = _run()
SEEDS: dict[str, bytes] = {
    "trace": json.dumps(RUN.to_json()).encode(),
    "trace.gz": gzip.compress(json.dumps(RUN.to_json()).encode()),
    "schema 1": json.dumps(RUN.to_json(schema=1)).encode(),
    "baseline": json.dumps(Baseline.from_run(RUN).to_json()).encode(),
    "rocprof": ROCPROF,
}
ODD_VALUES = [None, True, False, 0, -1, 2**63, -(2**63) - 1, 10**30, 1.5, float("inf"), "", "x", "A" * 5000,
              [], {}, [1, 2], {"a": 1}, "9" * 50]


def _paths(doc: Any, here: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every place in a JSON document, as the keys and indexes that lead to it."""
    out = [here]
    if isinstance(doc, dict):
        for k, v in doc.items():
            out += _paths(v, (*here, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:20]):  # the first few of a long list are enough
            out += _paths(v, (*here, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], value: Any) -> Any:
    if not path:
        return value
    head, *rest = path
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[head] = _replace(doc[head], tuple(rest), value)
    return copy


@st.composite
def mutants(draw: Callable[..., Any]) -> tuple[str, bytes]:
    kind = draw(st.sampled_from(sorted(SEEDS)))
    data = SEEDS[kind]
    how = draw(st.sampled_from(["truncate", "flip", "swap", "nest", "swap", "swap"]))
    if how == "truncate":
        return kind, data[: draw(st.integers(0, len(data)))]
    if how == "flip":
        raw = bytearray(data)
        for _ in range(draw(st.integers(1, 8))):
            raw[draw(st.integers(0, len(raw) - 1))] = draw(st.integers(0, 255))
        return kind, bytes(raw)
    plain = gzip.decompress(data) if kind == "trace.gz" else data
    doc = json.loads(plain)
    path = draw(st.sampled_from(_paths(doc)))
    if how == "swap":
        text = json.dumps(_replace(doc, path, draw(st.sampled_from(ODD_VALUES)))).encode()
    else:  # nesting deeper than json.dumps itself could write: spliced in as text
        depth = draw(st.integers(1, 5000))
        text = json.dumps(_replace(doc, path, "@NEST@")).encode().replace(b'"@NEST@"', b"[" * depth + b"0" + b"]" * depth)
    return kind, gzip.compress(text) if kind == "trace.gz" else text


def _call(argv: list[str]) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as exc:  # argparse; never expected here
            rc = int(exc.code or 0)
    return rc, out.getvalue(), err.getvalue()


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(mutants())
def test_every_loader_answers_any_file_in_one_line(mutant: tuple[str, bytes]) -> None:
    kind, data = mutant
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        bad = tmp / ("bad.json.gz" if kind == "trace.gz" else "bad.json")
        bad.write_bytes(data)
        good = RUN.save(tmp / "good.json")
        out = tmp / "out.json"
        if kind == "rocprof":
            commands = [["import-rocprof", str(bad), "-o", str(out)]]
        elif kind == "baseline":
            commands = [["gate", str(good), "--baseline", str(bad), "--allow-failed-target", "--allow-empty"]]
        else:
            commands = [["report", str(bad)], ["compare", "--format", "json", str(good), str(bad)],
                        ["gate", str(bad), "--baseline", str(good), "--allow-mismatch", "--allow-empty"],
                        ["gate", str(good), "--baseline", str(bad)], ["tui", "--no-tui", str(bad)],
                        ["export", str(bad), "-o", str(out)], ["export", "--format", "json", str(bad), "-o", str(out)]]
        for argv in commands:
            rc, stdout, stderr = _call(argv)
            assert "internal error" not in stderr and "Traceback" not in stderr, (argv[0], stderr)
            allowed = {0, 1, 2} if argv[0] == "gate" else {0, 2}
            assert rc in allowed, (argv, rc, stderr)
            if rc == 2:
                assert stderr.startswith("offload-prof: error: ") and stderr.count("\n") == 1, (argv, stderr)
                assert stdout == "", argv
