"""offload_core.outfiles: standard output and files written whole or not at all, each failure in the tool's words."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from offload_core import outfiles
from offload_core.outfiles import reason, write_atomically, write_report, write_stdout


class Refused(Exception):
    """A tool's one-line error, as `failed` makes it."""


def failed(why: str) -> Refused:
    return Refused(f"cannot write: {why}")


class _Stream:
    """A stdout whose write raises `exc`."""

    def __init__(self, exc: OSError) -> None:
        self.exc = exc

    def write(self, text: str) -> int:
        raise self.exc

    def flush(self) -> None:
        pass


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


# ------------------------------------------------------------------ standard output
def test_stdout_gets_the_text(capsys: pytest.CaptureFixture[str]) -> None:
    write_stdout("one\ntwo\n", failed)
    assert capsys.readouterr().out == "one\ntwo\n"


def test_a_full_stdout_is_the_tools_error_without_the_oserror(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _Stream(OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))))
    with pytest.raises(Refused) as exc:
        write_stdout("x", failed)
    assert str(exc.value) == "cannot write: No space left on device"
    assert exc.value.__suppress_context__ and exc.value.__cause__ is None


def test_a_reader_gone_away_stays_a_broken_pipe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "stdout", _Stream(BrokenPipeError(errno.EPIPE, "Broken pipe")))
    with pytest.raises(BrokenPipeError):
        write_stdout("x", failed)


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_stdout_on_dev_full_is_one_line() -> None:
    code = ("from offload_core.outfiles import write_stdout\n"
            "write_stdout('x' * 100_000, lambda why: SystemExit(f'tool: error: {why}'))")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-c", code], stdout=full, stderr=subprocess.PIPE, text=True,
                              timeout=60)
    assert (proc.returncode, proc.stderr) == (1, "tool: error: No space left on device\n")


def test_reason_is_the_systems_words_else_the_message() -> None:
    assert reason(OSError(errno.EACCES, os.strerror(errno.EACCES))) == "Permission denied"
    assert reason(OSError("no temporary file")) == "no temporary file"


# ------------------------------------------------------------------ atomically (offload-prof)
def test_a_file_is_written_whole_with_its_missing_folders(tmp_path: Path) -> None:
    target = tmp_path / "new" / "deep" / "r.txt"
    write_report(target, "é\n", failed)
    assert target.read_bytes() == "é\n".encode("utf-8")
    assert sorted(p.name for p in target.parent.iterdir()) == ["r.txt"], "no temporary file left"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX permissions")
@pytest.mark.parametrize("in_place", [False, True])
def test_a_new_file_takes_the_umask(tmp_path: Path, in_place: bool) -> None:
    for umask in (0o022, 0o077, 0o002):
        target = tmp_path / f"u{umask:o}.txt"
        old = os.umask(umask)
        try:
            write_report(target, "x", failed, in_place=in_place)
        finally:
            os.umask(old)
        assert _mode(target) == 0o666 & ~umask, (oct(umask), oct(_mode(target)))


def test_a_failed_write_keeps_the_previous_file_and_no_temporary(tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "r.txt"
    target.write_text("previous")

    def full(fd: int) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(outfiles.os, "fsync", full)
    with pytest.raises(Refused, match="^cannot write: No space left on device$"):
        write_report(target, "new text", failed)
    assert target.read_text() == "previous"
    assert [p.name for p in tmp_path.iterdir()] == ["r.txt"]
    with pytest.raises(OSError) as exc:  # the raw writer: the OSError itself, after the same clean-up
        write_atomically(target, b"new bytes")
    assert exc.value.errno == errno.ENOSPC and [p.name for p in tmp_path.iterdir()] == ["r.txt"]


def test_a_folder_that_is_a_file_is_the_tools_error(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("")
    with pytest.raises(Refused, match="^cannot write: (File exists|Not a directory)$"):
        write_report(tmp_path / "file" / "r.txt", "x", failed)


# ------------------------------------------------------------------ in place (offload-lint's --output-file)
@pytest.mark.skipif(not os.path.exists("/dev/null"), reason="needs /dev/null")
def test_in_place_writes_through_a_device() -> None:
    write_report(Path("/dev/null"), "x" * 10_000, failed, in_place=True)
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode), "a device is written to, never replaced"


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="needs /dev/full")
def test_in_place_on_a_full_device_is_the_tools_error_and_the_device_stays() -> None:
    with pytest.raises(Refused, match="^cannot write: No space left on device$"):
        write_report(Path("/dev/full"), "x" * 100_000, failed, in_place=True)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode)


def test_in_place_creates_no_folder(tmp_path: Path) -> None:
    with pytest.raises(Refused, match="^cannot write: No such file or directory$"):
        write_report(tmp_path / "missing" / "r.txt", "x", failed, in_place=True)
    assert not (tmp_path / "missing").exists()


def test_in_place_keeps_a_symlink_and_writes_its_target(tmp_path: Path) -> None:
    (tmp_path / "real.txt").write_text("old")
    (tmp_path / "link.txt").symlink_to("real.txt")
    write_report(tmp_path / "link.txt", "new", failed, in_place=True)
    assert (tmp_path / "link.txt").is_symlink() and (tmp_path / "real.txt").read_text() == "new"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_in_place_removes_a_half_written_file(tmp_path: Path) -> None:
    code = ("import resource, sys\nfrom pathlib import Path\nfrom offload_core.outfiles import write_report\n"
            "resource.setrlimit(resource.RLIMIT_FSIZE, (1024, 1024))\n"
            "write_report(Path(sys.argv[1]), 'x' * 5000, lambda why: SystemExit(why), in_place=True)")
    target = tmp_path / "r.txt"
    target.write_text("previous")
    proc = subprocess.run([sys.executable, "-c", code, str(target)], capture_output=True, text=True, timeout=60)
    assert (proc.returncode, proc.stderr) == (1, "File too large\n")
    assert not target.exists(), "a truncated report is worse than none"
