"""What `-o` names may be anything: every offload-prof command that writes a file writes through a symlink and to a
character device, and refuses in one line (exit 2, before any work) what it cannot write safely.

Each command is run as a user would run it, in a fresh process, on a path that is a symlink to a file, a dangling
symlink, a character device (a node of /dev/null's numbers made in the test's folder where the test may make one,
else /dev/null itself), a FIFO, a folder, a socket or a symlink to a FIFO.
"""

from __future__ import annotations

import os
import socket
import stat
import subprocess
import sys
from pathlib import Path
from typing import Callable

import pytest

from profiler.model import Meta, Record, Run, Site

from ..kit import PROGRAMS, env

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX file kinds")

SAMPLE_ROCPROF = Path(__file__).resolve().parents[1] / "sources" / "data" / "rocprofv3_results.json"
HEAT = str(PROGRAMS / "heat.py")


def small_trace(folder: Path) -> Path:
    meta = Meta(backend="numpy", device="host", mode="batched", started_at="2026-01-01T00:00:00+00:00", wall_ns=1_000,
                argv=("app.py",), cwd=str(folder))
    site = Site(str(folder / "app.py"), 1, "<module>", "offload(k, x)", 1)
    return Run(meta, (Record("h2d", 0, 5, 64, site=site, kernel="k", launch=0, array=1),)).save(folder / "t.json")


#: command name -> (argv with {out} for the path written, the file that is written when {out} is the name given)
COMMANDS: dict[str, Callable[[str], list[str]]] = {
    "run": lambda out: ["run", "-o", out, "--", HEAT, "64", "1"],
    "demo": lambda out: ["demo", "--no-tui", "--kernels", "DAXPY", "--size-factor", "0.001", "--reps", "1",
                         "--repeats", "1", "-o", out],
    "export": lambda out: ["export", "t.json", "-o", out],
    "export-json": lambda out: ["export", "--format", "json", "t.json", "-o", out],
    "import-rocprof": lambda out: ["import-rocprof", str(SAMPLE_ROCPROF), "-o", out],
    "gate": lambda out: ["gate", "t.json", "--baseline", out, "--update-baseline"],
    "calibrate": lambda out: ["calibrate", "--backend", "numpy", "--size", "4KiB", "--repeats", "1", "-o", out],
    "report": lambda out: ["report", "t.json", "--format", "html", "-o", out],
    "compare": lambda out: ["compare", "t.json", "t.json", "--format", "json", "-o", out],
    "recover": lambda out: ["recover", KILLED, "--keep", "-o", out],
}


def written_name(command: str, name: str) -> str:
    """The file a command writes when given `name`: demo writes NAME.naive.json and NAME.batched.json."""
    return name.replace(".json", ".naive.json") if command == "demo" else name


def prof(folder: Path, argv: list[str]) -> subprocess.CompletedProcess[str]:
    # a writer that opened a FIFO would wait for a reader for ever: the timeout makes that a failure, not a hang
    return subprocess.run([sys.executable, "-m", "profiler", *argv], cwd=folder, env=env(), capture_output=True,
                          text=True, timeout=120)


#: the folder a killed `offload-prof run` left (`killed_run_folder`)
KILLED = ".t.json.offload-prof-run-killed"


def killed_run_folder(folder: Path) -> Path:
    """What a killed `run` leaves beside its trace, made without a run: its spool's description (of a process that
    has ended) and one chunk of records (`profiler.sources.spool`)."""
    from profiler.sources.parts import encode_chunk
    from profiler.sources.spool import SPOOL_NAME

    ended = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    path = folder / KILLED
    path.mkdir(mode=0o700)
    site = Site(str(folder / "app.py"), 1, "<module>")
    row = ("h2d", 64, False, 1_000, 5, "k", 0, "x", 1, site, "batched", None, None)
    (path / SPOOL_NAME).write_bytes(encode_chunk("meta", {
        "pid": int(ended.stdout), "t0": 0, "backend": "numpy", "device": "host", "mode": "batched",
        "started_at": "2026-01-01T00:00:00+00:00", "fingerprints": False, "argv": ["app.py"],
        "command": ["offload-prof", "run", "--", "app.py"], "output": str(folder / "t.json"), "link": None,
    }) + encode_chunk("records", [row]))
    return path


@pytest.fixture
def folder(tmp_path: Path) -> Path:
    small_trace(tmp_path)
    killed_run_folder(tmp_path)
    return tmp_path


def character_device(folder: Path) -> Path:
    """A character device to write to: a node with /dev/null's numbers in `folder` where one can be made, else /dev/null.

    A node of its own (as root) means the test can never replace the system's /dev/null, whatever the code does.
    """
    node = folder / "null-device"
    try:
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        return node
    except (PermissionError, OSError):
        if not os.path.exists("/dev/null") or os.geteuid() == 0:
            pytest.skip("no character device to write to")
        return Path("/dev/null")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_symlink_is_written_through_and_stays_a_link(folder: Path, command: str) -> None:
    real = folder / "real"
    real.mkdir()
    name = "out.json" if command not in ("report",) else "out.html"
    target = real / written_name(command, name)
    target.write_text("the previous content")
    link = folder / written_name(command, name)
    link.symlink_to(os.path.relpath(target, folder))
    proc = prof(folder, COMMANDS[command](name))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and os.readlink(link) == os.path.relpath(target, folder), "the link stays a link"
    assert target.is_file() and target.read_text() != "the previous content", "its target got the new content"
    assert [p.name for p in real.iterdir()] == [target.name], "no temporary file left"


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_dangling_symlink_creates_its_target(folder: Path, command: str) -> None:
    name = written_name(command, "out.json")
    link = folder / name
    link.symlink_to("elsewhere/new.json")
    proc = prof(folder, COMMANDS[command]("out.json"))
    assert proc.returncode == 0, proc.stderr
    assert link.is_symlink() and (folder / "elsewhere" / "new.json").is_file()


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_a_character_device_is_written_to_and_never_replaced(folder: Path, command: str) -> None:
    device = character_device(folder)
    if command == "demo":  # demo derives its two names from -o: make the first of them the device
        link = folder / "out.naive.json"
        link.symlink_to(device)
        out = "out.json"
    else:
        out = str(device)
    before = os.stat(device)
    proc = prof(folder, COMMANDS[command](out))
    assert proc.returncode == 0, proc.stderr
    after = os.stat(device)
    assert stat.S_ISCHR(after.st_mode) and (after.st_ino, after.st_rdev) == (before.st_ino, before.st_rdev), \
        "the device node is still the device it was"
    assert not [p for p in device.parent.iterdir() if p.name.startswith(f".{device.name}.")], "no temporary file"


def fifo(path: Path) -> Path:
    os.mkfifo(path)
    return path


def folder_at(path: Path) -> Path:
    path.mkdir()
    return path


def unix_socket(path: Path) -> Path:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    sock.close()  # the socket file stays
    return path


def link_to_fifo(path: Path) -> Path:
    os.mkfifo(path.with_name("the-fifo"))
    path.symlink_to("the-fifo")
    return path


REFUSED = {
    "fifo": (fifo, "is a FIFO"),
    "folder": (folder_at, "is a directory"),
    "socket": (unix_socket, "is a socket"),
    "link to a fifo": (link_to_fifo, "is a symlink to a FIFO"),
}


@pytest.mark.parametrize("kind", sorted(REFUSED))
@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_what_cannot_be_written_safely_is_refused_in_one_line(folder: Path, command: str, kind: str) -> None:
    make, said = REFUSED[kind]
    name = written_name(command, "out.json")
    path = make(folder / name)
    before = os.lstat(path)
    proc = prof(folder, COMMANDS[command]("out.json"))
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith(f"offload-prof: error: {name}: {said}"), \
        proc.stderr
    after = os.lstat(path)
    assert stat.S_IFMT(after.st_mode) == stat.S_IFMT(before.st_mode) and after.st_ino == before.st_ino, \
        "left as it was"
    assert "measuring" not in proc.stderr and "recording" not in proc.stderr, "refused before any work"
