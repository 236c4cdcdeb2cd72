"""Part files: chunks appended as a process runs; a torn last chunk is dropped and everything before it stands."""

from __future__ import annotations

import os
from pathlib import Path

from profiler.sources.parts import End, Hello, PartWriter, Unrecorded, read_part, read_parts, read_unrecorded, write_unrecorded

HELLO = Hello(pid=41, parent=40, start="fork", argv=("app.py",), name="Process-1")
ROW = ("launch", 1_000, 50, 0, False, "k", 0, None, None, ("/w/app.py", 3, "f"), None, "batched", None)


def test_chunks_round_trip_and_the_file_appears_with_the_first(tmp_path: Path) -> None:
    w = PartWriter(tmp_path, lambda: HELLO)
    assert list(tmp_path.iterdir()) == [], "a process that records nothing writes nothing"
    w.write("records", [ROW])
    w.write("records", [ROW, ROW])
    w.write("end", End("os._exit", 5))
    w.close()
    assert w.path == tmp_path / "41-0.part" and oct(w.path.stat().st_mode & 0o777) == "0o600"
    part = read_part(w.path)
    assert part is not None and part.hello == HELLO and part.rows == (ROW, ROW, ROW)
    assert part.end == End("os._exit", 5) and part.torn == 0


def test_a_torn_last_chunk_is_dropped(tmp_path: Path) -> None:
    w = PartWriter(tmp_path, lambda: HELLO)
    w.write("records", [ROW])
    w.write("records", [ROW, ROW])
    w.close()
    assert w.path is not None
    raw = w.path.read_bytes()
    w.path.write_bytes(raw[:-7])  # the process died in the middle of its last write
    part = read_part(w.path)
    assert part is not None and part.rows == (ROW,) and part.end is None and part.torn > 0


def test_a_second_part_of_one_pid_gets_its_own_file(tmp_path: Path) -> None:
    for _ in range(2):  # a process that exec'd another Python program keeps its pid
        w = PartWriter(tmp_path, lambda: HELLO)
        w.write("records", [ROW])
        w.close()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["41-0.part", "41-1.part"]
    assert len(read_parts(tmp_path)) == 2


def test_files_without_a_whole_hello_are_skipped(tmp_path: Path) -> None:
    (tmp_path / "1-0.part").write_bytes(b"\x10\x00")
    (tmp_path / "2-0.part").write_bytes(b"")
    assert read_parts(tmp_path) == []


def test_notes_about_unrecorded_children_are_read_in_order(tmp_path: Path) -> None:
    late = Unrecorded(40, ("nvidia-smi",), "not a Python program", pid=44, at_ns=20)
    early = Unrecorded(40, ("python", "-I", "x.py"), "started with -I", pid=43, at_ns=10)
    write_unrecorded(tmp_path, late)
    write_unrecorded(tmp_path, early)
    (tmp_path / "junk.unrecorded").write_bytes(os.urandom(16))
    assert read_unrecorded(tmp_path) == [early, late]
