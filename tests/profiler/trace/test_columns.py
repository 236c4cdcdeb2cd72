"""Columns: schema 2 files round-trip exactly, load lazily, read schema 1 files, and reject bad columns in one line."""

from __future__ import annotations

import json
from dataclasses import fields
from pathlib import Path
from typing import Any, Callable

import numpy as np
import pytest

from profiler.errors import TraceError
from profiler.model import SCHEMA_VERSION, Record, Run
from profiler.trace.columns import _FIELDS, NULL, Columns, ColumnsBuilder, RecordTable

from ..synth import synthetic_run


def test_columns_hold_every_field_exactly() -> None:
    run = synthetic_run(3000)
    c = Columns.from_records(run.records)
    assert len(c) == 3000
    assert c.records() == run.records
    assert all(c.record(i) == run.records[i] for i in (0, 1, 1500, 2999))
    assert len(set(c.kernels)) == len(c.kernels) and None not in c.kernels
    assert (c.launch == NULL).sum() == sum(r.launch is None for r in run.records)


def test_schema_2_round_trip_is_exact_and_lazy(tmp_path: Path) -> None:
    run = synthetic_run(5000)
    path = run.save(tmp_path / "t.json")
    data = json.loads(path.read_text())
    assert data["schema"] == 2 and data["count"] == 5000 and "records" not in data, \
        "a run of one process is written as schema 2, which older versions read"
    assert "process" not in data["columns"] and "device" not in data["columns"] and SCHEMA_VERSION == 4
    assert data["columns"]["kind"]["dtype"] == "|u1", "narrowest type that holds the values"
    loaded = Run.load(path)
    assert isinstance(loaded.records, RecordTable) and loaded.records._built is None
    assert loaded.records[7] == run.records[7] and loaded.records[-1] == run.records[-1]
    assert loaded.records[2:5] == run.records[2:5]
    assert loaded.records._built is None, "indexing builds single records only"
    assert loaded == run and run == loaded
    sited = [r for r in loaded.records if r.site is not None]
    assert len({id(r.site) for r in sited}) == len({r.site for r in sited}), "sites stay interned"
    assert loaded.sites == run.sites
    assert loaded.columns is loaded.records.columns


def test_the_gzip_name_still_compresses(tmp_path: Path) -> None:
    run = synthetic_run(400)
    path = run.save(tmp_path / "t.json.gz")
    assert path.read_bytes()[:2] == b"\x1f\x8b" and Run.load(path) == run


def test_schema_1_files_still_load(tmp_path: Path) -> None:
    run = synthetic_run(800)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(run.to_json(schema=1)))
    assert json.loads(path.read_text())["schema"] == 1
    old = Run.load(path)
    assert isinstance(old.records, tuple) and old == run
    assert Run.load(old.save(tmp_path / "new.json")) == run, "an old trace saved again is schema 2"


def test_values_beyond_64_bits_fall_back_to_rows(tmp_path: Path) -> None:
    run = synthetic_run(50)
    big = Run(run.meta, run.records + (Record("h2d", 1, 1, 8, array=2**70),))
    assert big.to_json()["schema"] == 1
    assert Run.load(big.save(tmp_path / "big.json")) == big
    sentinel = Run(run.meta, (Record("h2d", 1, 1, 8, array=int(NULL)),))
    assert Run.load(sentinel.save(tmp_path / "s.json")).records[0].array == int(NULL)


def test_an_empty_run_round_trips(tmp_path: Path) -> None:
    run = Run(synthetic_run(1).meta, ())
    loaded = Run.load(run.save(tmp_path / "e.json"))
    assert len(loaded.records) == 0 and loaded == run and loaded.sites == ()


def _edit(edit: Callable[[dict[str, Any]], None], tmp_path: Path) -> Path:
    data = synthetic_run(100).to_json()
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    return path


def _set_column(name: str, values: np.ndarray) -> Callable[[dict[str, Any]], None]:
    import base64

    def edit(d: dict[str, Any]) -> None:
        d["columns"][name].update(dtype=values.dtype.str, data=base64.b64encode(values.tobytes()).decode())
    return edit


@pytest.mark.parametrize("edit, problem", [
    (lambda d: d.pop("count"), "missing key 'count'"),
    (lambda d: d.update(count=-1), "bad record count -1"),
    (lambda d: d.update(count=101), "column 'kind' holds 100 values, expected 101 (one per record)"),
    (lambda d: d["columns"].pop("nbytes"), "missing record column(s) nbytes"),
    (lambda d: d.update(columns=[]), "'columns' must be an object of encoded columns"),
    (lambda d: d["columns"]["start_ns"].update(data="@@@"), "column 'start_ns': data is not valid base64"),
    (lambda d: d["columns"]["start_ns"].update(dtype="<f8"), "column 'start_ns': dtype '<f8' is not an integer type"),
    (lambda d: d["columns"]["kernel"].update(values=[1, 2]), "column 'kernel' must list its values as strings"),
    (_set_column("kind", np.full(100, 9, dtype=np.uint8)), "record 0: kind code 9 is not one of the 8 kinds"),
    (_set_column("nbytes", np.r_[np.zeros(4, np.int64), -5, np.zeros(95, np.int64)]), "record 4: nbytes must be a non-negative integer"),
    (_set_column("site", np.full(100, 17, dtype=np.int8)), "record 0: site 17 is not an index into the 3 sites"),
    (_set_column("pinned", np.full(100, 2, dtype=np.uint8)), "record 0: pinned must be true/false"),
])
def test_bad_columns_fail_with_one_line_naming_the_file(tmp_path: Path, edit: Any, problem: str) -> None:
    path = _edit(edit, tmp_path)
    with pytest.raises(TraceError) as exc:
        Run.load(path)
    assert str(exc.value).startswith(f"{path}: ") and problem in str(exc.value) and "\n" not in str(exc.value)


def test_duplicate_table_values_are_merged() -> None:
    run = synthetic_run(200)
    data = run.to_json()
    data["sites"] = data["sites"] + data["sites"]  # the same sites again, under new codes
    loaded = Run.from_json(data)
    assert loaded == run and len(loaded.columns.sites) == len(run.sites)


def _three_processes(n: int = 600) -> Run:
    from dataclasses import replace

    from profiler.model import Process

    run = synthetic_run(n)
    meta = replace(run.meta, processes=(Process(100), Process(101, 100, "fork", ("app.py",)),
                                        Process(102, 100, "exec", ("python", "-c", "x"), note="os._exit(3)"),
                                        Process(None, 100, "exec", ("python", "-I", "w.py"), recorded=False,
                                                note="started without the profiler's environment")),
                   estimated=("launch.duration_ns",))
    return Run(meta, tuple(replace(r, process=i % 3) for i, r in enumerate(run.records)))


def test_several_processes_are_schema_3_and_round_trip(tmp_path: Path) -> None:
    run = _three_processes()
    data = json.loads(run.save(tmp_path / "p.json").read_text())
    assert data["schema"] == 3 and "process" in data["columns"]
    assert data["meta"]["processes"][3] == {"pid": None, "parent": 100, "start": "exec", "argv": ["python", "-I", "w.py"],
                                            "recorded": False, "note": "started without the profiler's environment",
                                            "name": ""}
    loaded = Run.load(tmp_path / "p.json")
    assert loaded == run and loaded.meta == run.meta
    assert [r.process for r in loaded.records[:4]] == [0, 1, 2, 0]
    assert loaded.columns.processes == 3
    with pytest.raises(ValueError, match="schema 2 holds the records of one process"):
        run.to_json(schema=2)
    with pytest.raises(ValueError, match="schema 1 holds the records of one process"):
        run.to_json(schema=1)


def test_one_process_with_its_process_list_stays_schema_2(tmp_path: Path) -> None:
    from dataclasses import replace

    from profiler.model import Process

    run = synthetic_run(100)
    run = Run(replace(run.meta, processes=(Process(7),)), run.records)
    data = run.to_json()
    assert data["schema"] == 2 and data["meta"]["processes"][0]["pid"] == 7, \
        "schema 2 readers ignore meta keys they do not know; only the process column needs schema 3"
    assert Run.from_json(data).meta.processes == (Process(7),)


@pytest.mark.parametrize("edit, problem", [
    (lambda d: d["columns"].pop("process"), "missing record column(s) process"),
    (lambda d: d["meta"]["processes"].pop(), "record 2: process 2 is not an index into the 2 processes"),
    (lambda d: d["meta"]["processes"][1].update(start="clone"), "'meta.processes[1].start' must be main, fork or exec"),
    (lambda d: d["meta"]["processes"][0].pop("pid"), "missing key 'meta.processes[0].pid'"),
    (lambda d: d["meta"].update(estimated="launch"), "'meta.estimated' must be an array, got a string"),
    (lambda d: d["meta"].update(estimated=[3]), "'meta.estimated' must be an array of strings"),
])
def test_bad_process_columns_fail_with_one_line(tmp_path: Path, edit: Any, problem: str) -> None:
    data = _three_processes(30).to_json()
    data["meta"]["processes"] = data["meta"]["processes"][:3]
    edit(data)
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(data))
    with pytest.raises(TraceError) as exc:
        Run.load(path)
    assert str(exc.value).startswith(f"{path}: ") and problem in str(exc.value) and "\n" not in str(exc.value)


def test_a_builder_holds_what_records_would() -> None:
    assert _FIELDS == tuple(f.name for f in fields(Record)), "ColumnsBuilder.add takes Record's fields in order"
    run = synthetic_run(2000)
    b = ColumnsBuilder()
    for r in run.records:
        b.add(*(getattr(r, name) for name in _FIELDS))
    assert len(b) == 2000 and b.columns().records() == run.records
    assert b.columns().sites == Columns.from_records(run.records).sites


def test_a_builder_refuses_what_the_columns_cannot_hold() -> None:
    b = ColumnsBuilder()
    b.add("h2d", 0, 1, 8, array=1 << 64)
    with pytest.raises(OverflowError):
        b.columns()
