"""A real JAX loop recorded with `--source cupti`: its uploads are on the `jax.device_put` line, not the sync's.

JAX copies from threads of its own runtime, so without its entry points
wrapped (`profiler.sources.cupti.jaxcalls`) every upload took the line the
main thread was waiting on, `float(f(d, w))`. Marked `gpu`; skipped
without cupti-python or JAX's CUDA plugin.
"""

from __future__ import annotations

import importlib.metadata
import importlib.util
from pathlib import Path

import pytest

from profiler.analysis.detectors import detect
from profiler.model import Run
from profiler.phrases import saving_text
from profiler.sources.cupti.probe import import_cupti

from ...kit import prof
from .test_gpu import PROGRAMS, at, marker

PROGRAM = "jax_loop.py"


def _jax_on_cuda() -> bool:
    """JAX with its CUDA plugin, found without importing JAX (which would take the GPU's memory here)."""
    if importlib.util.find_spec("jax") is None:
        return False
    return any((d.metadata["Name"] or "").lower().startswith(("jax-cuda", "jax_cuda"))
               for d in importlib.metadata.distributions())


pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(import_cupti()[0] is None, reason="cupti-python is not installed (the cupti extra)"),
              pytest.mark.skipif(not _jax_on_cuda(), reason="needs JAX with its CUDA plugin")]


def test_jax_uploads_are_on_the_device_put_line(tmp_path: Path) -> None:
    proc = prof("run", "--source", "cupti", "-o", "t.json", "--", str(PROGRAMS / PROGRAM), cwd=tmp_path,
                timeout=600, XLA_PYTHON_CLIENT_PREALLOCATE="false")
    assert proc.returncode == 0, proc.stderr[-4000:]
    run = Run.load(tmp_path / "t.json")
    assert marker(PROGRAM, "put") == 8
    ups = at(run, PROGRAM, "put", "h2d")
    big = [r for r in run.records if r.kind == "h2d" and r.nbytes == 512 * 512 * 4]
    where = sorted({(r.site.line if r.site else 0) for r in big})
    print(f"{len(big)} uploads of x, at lines {where}; {len(ups)} on line 8")
    assert len(ups) == 200 and all(r.nbytes == 512 * 512 * 4 for r in ups), where
    waits = at(run, PROGRAM, "sync", "h2d")
    print(f"uploads on the waiting line: {[(r.nbytes, r.start_ns) for r in waits]}")
    # The jitted call on that line may upload a few small buffers of its own
    # once, when it is first dispatched (2 KB on the H100, 2026-12-05); none of
    # them is x, and none recurs per step.
    assert not [r for r in waits if r.nbytes == 512 * 512 * 4], "no upload of x is charged to the line that waits"
    assert len(waits) < 10, "no per-step upload is charged to the line that waits"
    for f in detect(run):
        print(f"{f.code} line {f.line}: {f.fix}, {saving_text(f)}; lost {f.lost_ns}")
        if f.lost_ns:
            assert not saving_text(f).startswith("saves 0 "), "a saving of nothing says why"
