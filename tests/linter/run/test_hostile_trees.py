"""The command on hostile trees and failing disks: every case ends in findings or one line, never a hang.

Unwritable reports, symlink loops, FIFOs, devices behind symlinks, files
reached twice, a parent killed with SIGKILL, fixes that cannot be written:
each through the real command in a subprocess, with a timeout so that a
regression shows as a failure rather than a hung suite.
"""

from __future__ import annotations

import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from ..kit import ROOT, run_cli

#: the linter package: an interrupt once its code has started must end the run as one line
PACKAGE = ROOT / "linter"

UPLOAD = "import cupy as cp\nimport numpy as np\n\nz = cp.asarray(np.zeros(8))\n"
FIXED = "import cupy as cp\nimport numpy as np\n\nz = cp.zeros(8)\n"
LOOP = """\
import cupy as cp


def total{n}(x, n):
    s = 0.0
    for i in range(n):
        d = cp.asarray(x)
        s += float(d.sum())
    return s
"""
posix = pytest.mark.skipif(os.name != "posix", reason="POSIX file types and signals")


def _json(proc: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    return sorted((d["path"], d["code"], d["message"]) for d in json.loads(proc.stdout))


# ---------------------------------------------------------------- item 1: -o

@pytest.mark.parametrize("findings", [False, True], ids=["clean", "findings"])
def test_an_unwritable_report_file_exits_two_with_one_line(tmp_path: Path, findings: bool) -> None:
    (tmp_path / "a.py").write_text(UPLOAD if findings else "import cupy\n")
    target = tmp_path / "missing" / "out.sarif"
    proc = run_cli("--no-cache", "--format", "sarif", "-o", str(target), ".", cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.splitlines()[-1] == f"offload-lint: cannot write {target}: No such file or directory"
    assert "Traceback" not in proc.stderr and not target.parent.exists()


@posix
@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_a_full_disk_under_the_report_exits_two(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UPLOAD)
    proc = run_cli("--no-cache", "--format", "json", "-o", "/dev/full", ".", cwd=tmp_path)
    assert proc.returncode == 2
    assert proc.stderr.strip() == "offload-lint: cannot write /dev/full: No space left on device"
    with open("/dev/full", "w") as full:  # the same through a full stdout
        stdout_full = subprocess.run(
            [sys.executable, "-m", "linter", "--no-cache", "."], cwd=tmp_path, stdout=full, stderr=subprocess.PIPE,
            text=True, timeout=120,
        )
    assert stdout_full.returncode == 2
    assert stdout_full.stderr.strip() == "offload-lint: cannot write the report to standard output: No space left on device"


def test_the_report_file_takes_the_umask(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(UPLOAD)
    modes = []
    for umask in (0o022, 0o077):
        out = tmp_path / f"out-{umask:o}.sarif"
        proc = subprocess.run(
            [sys.executable, "-m", "linter", "--no-cache", "--format", "sarif", "-o", str(out), "a.py"],
            cwd=tmp_path, capture_output=True, text=True, timeout=120, preexec_fn=lambda u=umask: os.umask(u),  # type: ignore[misc]
        )
        assert proc.returncode == 1, proc.stderr
        modes.append(out.stat().st_mode & 0o777)
    assert modes == [0o644, 0o600]


# -------------------------------------------------- items 2-4: hostile trees

@posix
def test_a_symlink_loop_is_off902_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "a.py").symlink_to("b.py")
    (tmp_path / "b.py").symlink_to("a.py")
    (tmp_path / "ok.py").write_text(UPLOAD)
    proc = run_cli("--no-cache", "--format", "json", cwd=tmp_path, timeout=60)
    assert proc.returncode == 1, proc.stderr
    assert proc.stderr == ""
    found = [(path, code) for path, code, _ in _json(proc)]
    assert found == [("a.py", "OFF902"), ("b.py", "OFF902"), ("ok.py", "OFF105")]
    assert all("symlink loop" in message for _, code, message in _json(proc) if code == "OFF902")
    named = run_cli("--no-cache", "--format", "json", "a.py", "ok.py", cwd=tmp_path, timeout=60)
    assert [(path, code) for path, code, _ in _json(named)] == [("a.py", "OFF902"), ("ok.py", "OFF105")]


@posix
def test_fifos_and_devices_are_off902_and_never_opened_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "p.py")
    (tmp_path / "z.py").symlink_to("/dev/zero")
    (tmp_path / "ok.py").write_text(UPLOAD)
    for args in ((), ("p.py", "z.py", "ok.py")):  # a walk, and the same files named
        proc = run_cli("--no-cache", "--format", "json", *args, cwd=tmp_path, timeout=60)
        assert proc.returncode == 1, proc.stderr
        found = _json(proc)
        assert [(path, code) for path, code, _ in found] == [("ok.py", "OFF105"), ("p.py", "OFF902"), ("z.py", "OFF902")]
        assert [message for _, code, message in found if code == "OFF902"] == [
            "cannot read this file: not a regular file (a FIFO)",
            "cannot read this file: not a regular file (a character device)",
        ]
    os.mkfifo(tmp_path / "config.toml")
    proc = run_cli("--no-cache", "--config", "config.toml", "ok.py", cwd=tmp_path, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr == "offload-lint: config.toml: cannot read (not a regular file (a FIFO))\n"


@posix
def test_a_symlinked_file_is_linted_once_under_its_own_name(tmp_path: Path) -> None:
    (tmp_path / "real.py").write_text(UPLOAD)
    (tmp_path / "alias.py").symlink_to("real.py")  # sorts first, and still loses to the real name
    (tmp_path / "other.py").write_text(UPLOAD)
    proc = run_cli("--no-cache", "--format", "json", cwd=tmp_path)
    assert [(path, code) for path, code, _ in _json(proc)] == [("other.py", "OFF105"), ("real.py", "OFF105")]
    fixed = run_cli("--no-cache", "--fix", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert fixed.stdout.startswith("Fixed 2 findings in 2 files.\n")
    assert (tmp_path / "alias.py").is_symlink() and (tmp_path / "real.py").read_text() == FIXED


# ------------------------------------------------ item 5: workers and parent

def _children(pid: int) -> list[int]:
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                out.append(int(entry))
    return out


def _alive(pid: int) -> bool:
    """Running or sleeping; a zombie (which no init may reap in a container) has died."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state not in ("Z", "X")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_workers_die_when_the_parent_is_killed(tmp_path: Path) -> None:
    for n in range(400):
        (tmp_path / f"m{n}.py").write_text(LOOP.format(n=n))
    parent = subprocess.Popen(
        [sys.executable, "-m", "linter", "--no-cache", "--jobs", "2", "."], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while len(workers) < 2 and time.monotonic() < deadline and parent.poll() is None:
            workers = _children(parent.pid)
            time.sleep(0.02)
        assert len(workers) == 2, "the pool never started; make the tree larger"
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 10
        while any(_alive(w) for w in workers) and time.monotonic() < deadline:
            time.sleep(0.05)
        survivors = [w for w in workers if _alive(w)]
    finally:
        parent.kill()
        for w in _children(parent.pid) + (workers if "workers" in locals() else []):
            if _alive(w):
                os.kill(w, signal.SIGKILL)
    assert survivors == [], f"workers {survivors} outlived their parent"


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")
def test_a_worker_killed_under_the_run_is_one_line_and_exit_two(tmp_path: Path) -> None:
    for n in range(400):
        (tmp_path / f"m{n}.py").write_text(LOOP.format(n=n))
    parent = subprocess.Popen(
        [sys.executable, "-m", "linter", "--no-cache", "--jobs", "2", "."], cwd=tmp_path,
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )
    try:
        deadline = time.monotonic() + 60
        workers: list[int] = []
        while not workers and time.monotonic() < deadline and parent.poll() is None:
            workers = _children(parent.pid)
            time.sleep(0.02)
        assert workers, "the pool never started; make the tree larger"
        os.kill(workers[0], signal.SIGKILL)
        _, stderr = parent.communicate(timeout=60)
    finally:
        parent.kill()
    assert parent.returncode == 2
    assert stderr == "offload-lint: a worker process ended abruptly (killed, or out of memory); run again, or with --jobs 1\n"


# -------------------------------------------------------------- item 6: --fix

def _limit_file_size(limit: int) -> None:
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


@posix
def test_a_fix_that_cannot_be_written_is_not_counted_and_exits_two(tmp_path: Path) -> None:
    source = UPLOAD.replace("\n\n", "\n# " + "x" * 3000 + "\n")
    (tmp_path / "a.py").write_text(source)
    proc = subprocess.run(  # files may not grow past 1 KiB: the rewrite fails part way
        [sys.executable, "-m", "linter", "--no-cache", "--fix", "a.py"], cwd=tmp_path, capture_output=True,
        text=True, timeout=120, preexec_fn=lambda: _limit_file_size(1024),
    )
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert not proc.stdout.startswith("Fixed") and proc.stdout.startswith("a.py:4:5: OFF105 [*]")
    assert proc.stderr.strip() == "offload-lint: a.py: cannot write the fixed file: File too large; the file is unchanged"
    assert (tmp_path / "a.py").read_text() == source
    assert sorted(os.listdir(tmp_path)) == ["a.py"], "no temporary file is left behind"


@posix
def test_a_fixed_file_keeps_its_mode_its_hard_links_and_its_symlink(tmp_path: Path) -> None:
    (tmp_path / "private.py").write_text(UPLOAD)
    (tmp_path / "private.py").chmod(0o640)
    (tmp_path / "linked.py").write_text(UPLOAD)
    os.link(tmp_path / "linked.py", tmp_path / "other_name.txt")  # not a .py: linted once, under linked.py
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "target.txt").write_text(UPLOAD)
    (tmp_path / "via_link.py").symlink_to(tmp_path / "real" / "target.txt")
    proc = run_cli("--no-cache", "--fix", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.startswith("Fixed 3 findings in 3 files.\n")
    assert (tmp_path / "private.py").stat().st_mode & 0o777 == 0o640
    assert (tmp_path / "other_name.txt").read_text() == FIXED and (tmp_path / "linked.py").stat().st_nlink == 2
    assert (tmp_path / "via_link.py").is_symlink() and (tmp_path / "real" / "target.txt").read_text() == FIXED
    assert sorted(os.listdir(tmp_path)) == ["linked.py", "other_name.txt", "private.py", "real", "via_link.py"]


REWRITE = """
import sys
from pathlib import Path
from linter.outputs.rewrite import rewrite
try:
    rewrite(Path(sys.argv[1]), b"n" * int(sys.argv[2]), Path(sys.argv[1]).read_bytes())
except OSError as exc:
    sys.exit(f"{exc.strerror}")
"""


@posix
def test_rewrite_puts_back_what_a_failed_write_overwrote(tmp_path: Path) -> None:
    path = tmp_path / "f.py"
    old = b"o" * 5000
    path.write_bytes(old)
    for size in (3000, 9000):  # shorter and longer than the original; files may not grow past 2 KiB
        proc = subprocess.run([sys.executable, "-c", REWRITE, str(path), str(size)], capture_output=True, text=True,
                              timeout=60, preexec_fn=lambda: _limit_file_size(2048))
        assert (proc.returncode, proc.stderr.strip()) == (1, "File too large")
        assert path.read_bytes() == old
    from linter.outputs.rewrite import rewrite

    rewrite(path, b"short\n", old)
    assert path.read_bytes() == b"short\n"


def _without_write_access(folder: Path) -> list[str] | None:
    """Make `folder` unwritable to the command; returns the prefix that runs the command so, or None.

    As a normal user the folder's mode does it. Root ignores modes unless it
    drops CAP_DAC_OVERRIDE, which util-linux's `setpriv` does for the
    command it runs. None when neither works here (then the test skips).
    """
    folder.chmod(0o555)
    prefix: list[str] = []
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            return None
        prefix = [setpriv, "--bounding-set=-dac_override,-dac_read_search"]
    probe = subprocess.run([*prefix, sys.executable, "-c", "import sys; open(sys.argv[1], 'w')", str(folder / "probe")],
                           capture_output=True, timeout=60)
    return prefix if probe.returncode != 0 and not (folder / "probe").exists() else None


@posix
def test_a_writable_file_in_a_read_only_folder_is_fixed(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    target = folder / "a.py"
    target.write_text(UPLOAD)
    try:
        prefix = _without_write_access(folder)
        if prefix is None:
            pytest.skip("cannot take write access to a folder away here")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PRE_COMMIT"))}
        proc = subprocess.run([*prefix, sys.executable, "-m", "linter", "--no-cache", "--fix", "a.py"], cwd=folder,
                              env=env, capture_output=True, text=True, timeout=120)
        assert proc.returncode == 0, proc.stdout + proc.stderr
        assert proc.stdout.startswith("Fixed 1 finding in 1 file.\n")
        assert target.read_text() == FIXED and sorted(os.listdir(folder)) == ["a.py"]
    finally:
        folder.chmod(0o755)


# ------------------------------------------------ Ctrl-C at any moment

FIXABLE = "import cupy as cp\nimport numpy as np\n\ndef f(n):\n    for i in range(n):\n        x = cp.asarray(np.zeros(8))\n"


def test_ctrl_c_after_the_answer_is_ignored(tmp_path: Path) -> None:
    """Once the command has its status, SIGINT is ignored through the interpreter's teardown.

    Python hands SIGINT back to the default action while it tears down, so a
    Ctrl-C in the last tenth of a second killed the finished run with status
    -2 (7 of 60 runs interrupted near their end; once in CI). An ignored
    signal stays ignored through the teardown.
    """
    (tmp_path / "a.py").write_text(FIXABLE)
    probe = ("import signal, sys\nsys.argv = ['offload-lint', '--no-cache', 'a.py']\nfrom linter.cli import main\n"
             "status = main()\nprint(status, signal.getsignal(signal.SIGINT) is signal.SIG_IGN)\n")
    proc = subprocess.run([sys.executable, "-c", probe], cwd=tmp_path, capture_output=True, text=True, timeout=120,
                          env={k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PRE_COMMIT"))})
    assert proc.stdout.splitlines()[-1] == "1 True", proc.stdout + proc.stderr


@pytest.mark.parametrize("delay", [0.05, 0.15, 0.3, 0.6, 1.0, 1.6])
def test_ctrl_c_ends_the_run_with_130_and_one_line(tmp_path: Path, delay: float) -> None:
    """Whenever SIGINT comes (loading, linting, fixing), the run says one line and exits 130, or had finished.

    Only a signal that comes before the interpreter reaches the package's
    first line (runpy still finding it, on a loaded machine 50 ms in) is
    Python's to handle: then no frame of the traceback is the linter's.

    Before, Ctrl-C while the command's modules loaded printed a traceback, one
    inside LibCST's import became "internal error: RuntimeError", and one after
    the message sometimes left the process dead of the signal (status -2).
    """
    for k in range(40):
        (tmp_path / f"m{k}.py").write_text(FIXABLE)
    proc = subprocess.Popen([sys.executable, "-m", "linter", "--no-cache", "--jobs", "1", "--fix", "--unsafe-fixes", "."],
                            cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={k: v for k, v in os.environ.items() if not k.startswith(("OFFLOAD_", "PRE_COMMIT"))})
    time.sleep(delay)
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    if proc.returncode == -signal.SIGINT:  # only before the package's first line ran: Python's own start-up
        frames = re.findall(r'File "([^"]+)"', err)
        assert frames and not any(Path(f).is_relative_to(PACKAGE) for f in frames), err
        return
    assert proc.returncode in (130, 0, 1), (proc.returncode, err)
    if proc.returncode == 130:
        assert err == "offload-lint: interrupted\n"
    for k in range(40):  # each file is the original or the whole fix, never half of one
        text = (tmp_path / f"m{k}.py").read_text()
        compile(text, f"m{k}.py", "exec")
        assert text == FIXABLE or "cp.zeros(8)" in text
