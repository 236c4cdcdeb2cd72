"""What the target hands its children, and which children cannot record themselves (from their command lines)."""

from __future__ import annotations

from pathlib import Path

import pytest

from profiler.sources.handover import ENV, STARTUP, Settings, popen_command, popen_env, unrecordable

OURS = {ENV: "{}", "PYTHONPATH": str(STARTUP)}


@pytest.mark.parametrize("command, env, source, why", [
    (["python3", "x.py"], None, "offload", ""),
    (["/usr/bin/python3.12", "-B", "-W", "error", "x.py"], OURS, "offload", ""),
    (["python", "-I", "x.py"], None, "offload", "started with -I, which skips the profiler's start-up hook"),
    (["python", "-BsE", "-c", "pass"], None, "offload", "started with -E, which skips the profiler's start-up hook"),
    (["python", "-X", "importtime", "-c", "-S"], None, "offload", ""),
    (["python", "-c", "pass"], {"PATH": "/bin"}, "offload", "started with an environment of its own, without the profiler's variables"),
    (["python", "-c", "pass"], {ENV: "{}"}, "offload", "started with an environment of its own, without the profiler's variables"),
    (["nvidia-smi"], None, "offload", ""),
    ([], None, "cupti", ""),
])
def test_which_children_cannot_record_themselves(command: list[str], env: dict[str, str] | None, source: str,
                                                  why: str) -> None:
    assert unrecordable(command, env, source) == why  # type: ignore[arg-type]


def test_a_program_that_may_use_cuda_is_named_with_cupti_only(tmp_path: Path) -> None:
    cuda_program = tmp_path / "saxpy"
    cuda_program.write_bytes(b"\x7fELF" + bytes(4000) + b"libcuda.so.1\x00" + bytes(100))
    plain = tmp_path / "uname"
    plain.write_bytes(b"\x7fELF" + bytes(4000))
    why = "not a Python program, and it may use CUDA: what it does on the GPU is not recorded"
    assert unrecordable([str(cuda_program), "-n", "3"], None, "cupti") == why
    assert unrecordable([str(cuda_program)], None, "offload") == "", "offload_core runs in Python only"
    assert unrecordable([str(plain), "-p"], None, "cupti") == ""
    assert unrecordable(["no-such-program-xyz"], None, "cupti") == ""


def test_settings_round_trip_and_refuse_an_unknown_source() -> None:
    s = Settings("/tmp/x", "cupti", False, "/src")
    assert Settings.decode(s.encode()) == s
    with pytest.raises(ValueError, match="unknown source 'rocm'"):
        Settings.decode('{"folder": "f", "source": "rocm", "fingerprints": true, "root": "r"}')


def test_a_popen_call_read_as_the_child_will_run() -> None:
    assert popen_command((["python3", "-c", "pass"],), {}) == ["python3", "-c", "pass"]
    assert popen_command(("python3 -I w.py | tee log",), {"shell": True})[:3] == ["python3", "-I", "w.py"]
    assert popen_command((["x", "-n"],), {"executable": "/usr/bin/python3"}) == ["/usr/bin/python3", "-n"]
    assert popen_env((["x"],), {}) is None and popen_env((["x"],), {"env": {b"A": b"1"}}) == {"A": "1"}
