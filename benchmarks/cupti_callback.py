"""What the CUPTI source's API callback costs on the CPU, per callback: this tree against another revision's.

The callback runs on every intercepted CUDA call, twice (entry and exit),
so its cost in Python is the recording's and the transfer guard's floor.
No GPU is needed: the fake CUPTI of the tests
(`tests/profiler/sources/cupti/fakelib/fakecupti.py`) builds the real
`CUpti_CallbackData` and parameter blocks in memory, and this script
calls the subscribed callback directly on them, in the patterns a
program makes:

* `h2d async`: `cudaMemcpyAsync` H2D with its driver call
  (`cuMemcpyHtoDAsync_v2`) inside: 4 callbacks;
* `d2h sync`: `cudaMemcpy` D2H with `cuMemcpyDtoH_v2` inside: 4 callbacks;
* `item`: PyTorch's `.item()`, an async D2H and a stream sync from one
  statement (the fingerprint waits for the sync): 6 callbacks;
* `launch`: `cudaLaunchKernel` with `cuLaunchKernel` inside, every
  launch given a site (`launch_sites="all"`): 4 callbacks;
* `sync`: `cudaStreamSynchronize`: 2 callbacks;
* `guard h2d`: the listening-only session of the transfer guard (no
  recording) on the `h2d async` pattern, one listener that does nothing;
* `no-op`: a callback that returns at once, the loop's own cost (subtract it).

Each call has a correlation id of its own, as CUPTI gives; the tracer's
tables are emptied between passes, outside the timing. The recording
fingerprints copies (the recorder's default), of 4 KiB. Each revision is
measured in a fresh interpreter whose `profiler` package is that
revision's (`git archive`), the revisions taking turns; a cell is the
fastest pass of all rounds, in ns per callback.

    python benchmarks/cupti_callback.py [--against main] [--rounds 5] [--calls 2000] [--passes 20]

Nothing is asserted; a table on stdout.
"""

from __future__ import annotations

import argparse
import ctypes
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parent.parent
FAKE = ROOT / "tests" / "profiler" / "sources" / "cupti" / "fakelib" / "fakecupti.py"
PATTERNS = ("h2d async", "d2h sync", "item", "launch", "sync", "guard h2d", "no-op")

Step = tuple[int, int, int]  # (domain, cbid, address of the CUpti_CallbackData)


def _fake() -> Any:
    """The tests' fake CUPTI, loaded by path (it imports `profiler`, whichever revision is on sys.path)."""
    spec = importlib.util.spec_from_file_location("fakecupti", FAKE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class Prepared:
    """Prepared CUDA calls: callback records and parameter blocks kept alive, as (domain, cbid, address) steps."""

    def __init__(self, fake: Any) -> None:
        self.fake = fake
        self.keep: list[Any] = []
        self.result = ctypes.c_int(0)
        self.corr = 1

    def call(self, domain: Any, name: str, params: Any = None, corr: int | None = None) -> tuple[Step, Step]:
        """Entry and exit steps of one call (its own correlation id unless given)."""
        f = self.fake
        ids = f.runtime_api_trace_cbid if domain == f.CallbackDomain.RUNTIME_API else f.driver_api_trace_cbid
        cbid = int(getattr(ids, name))
        if corr is None:
            corr, self.corr = self.corr, self.corr + 1
        steps = []
        for site in (0, 1):
            data = f.CallbackData(callback_site=site, function_name=name.encode(),
                                  function_params=ctypes.addressof(params) if params is not None else None,
                                  function_return_value=ctypes.addressof(self.result), correlation_id=corr)
            self.keep += [data, params]
            steps.append((int(domain), cbid, ctypes.addressof(data)))
        return steps[0], steps[1]

    def nested(self, outer: tuple[str, Any], inner: tuple[str, Any]) -> list[Step]:
        """A runtime call making its driver call inside it: 4 callbacks."""
        f = self.fake
        o_in, o_out = self.call(f.CallbackDomain.RUNTIME_API, *outer)
        i_in, i_out = self.call(f.CallbackDomain.DRIVER_API, *inner)
        return [o_in, i_in, i_out, o_out]

    def pattern(self, name: str, host: Any, device: Any) -> list[Step]:
        f = self.fake
        n = host.nbytes
        h, d = host.ctypes.data, device.ctypes.data
        if name in ("h2d async", "guard h2d"):
            return self.nested(("cudaMemcpyAsync_v3020", f.MemcpyParams(dst=d, src=h, count=n, kind=1)),
                               ("cuMemcpyHtoDAsync_v2", f.DriverCopyParams(dst=d, src=h, count=n)))
        if name == "d2h sync":
            return self.nested(("cudaMemcpy_v3020", f.MemcpyParams(dst=h, src=d, count=n, kind=2)),
                               ("cuMemcpyDtoH_v2", f.DriverCopyParams(dst=h, src=d, count=n)))
        if name == "item":
            return [*self.nested(("cudaMemcpyAsync_v3020", f.MemcpyParams(dst=h, src=d, count=n, kind=2)),
                                 ("cuMemcpyDtoHAsync_v2", f.DriverCopyParams(dst=h, src=d, count=n))),
                    *self.call(f.CallbackDomain.RUNTIME_API, "cudaStreamSynchronize_v3020")]
        if name == "launch":
            return self.nested(("cudaLaunchKernel_v7000", None), ("cuLaunchKernel", None))
        if name in ("sync", "no-op"):
            return list(self.call(f.CallbackDomain.RUNTIME_API, "cudaStreamSynchronize_v3020"))
        raise ValueError(name)


def measure(calls: int, passes: int) -> dict[str, float]:
    """ns per callback of each pattern, fastest pass, with the `profiler` on sys.path (runs in the child)."""
    import numpy as np

    from profiler.sources.cupti import tracer as tracer_module
    from profiler.sources.cupti.frames import FrameFilter
    from profiler.sources.cupti.listening import listen

    fake = _fake()
    host = np.arange(1024, dtype=np.float32)
    device = np.zeros_like(host)
    out: dict[str, float] = {}
    for name in PATTERNS:
        cupti = fake.FakeCupti()
        tracer_module._REGISTERED = None
        stop: Callable[[], None] | None = None
        tracer = None
        if name == "no-op":
            def callback(userdata: Any, domain: int, cbid: int, address: int) -> None:
                return None
        elif name.startswith("guard"):
            stop = listen(lambda *args: None, cupti, cupti.native)
            (callback,) = cupti.native.subscribers.values()
        else:
            frames = FrameFilter(folders=(str(FAKE.parent) + os.sep,))
            tracer = tracer_module.Tracer(cupti, fingerprints=True, frames=frames, native=cupti.native,
                                          launch_sites="all").start()
            (callback,) = cupti.native.subscribers.values()
        made = Prepared(fake)
        steps = [step for _ in range(calls) for step in made.pattern(name, host, device)]
        best = float("inf")
        for _ in range(passes):
            began = time.perf_counter_ns()
            for domain, cbid, address in steps:
                callback(None, domain, cbid, address)
            best = min(best, (time.perf_counter_ns() - began) / len(steps))
            if tracer is not None:  # a fresh recording's tables: every correlation id is new again
                for table in (tracer._calls, tracer._late, tracer._sync_ends, tracer._outer):
                    table.clear()
        if tracer is not None:
            tracer.stop()
            assert not tracer.stop().errors, tracer.stop().errors
        if stop is not None:
            stop()
        out[name] = best
    return out


def tree_of(revision: str, into: Path) -> Path:
    """The revision's `profiler` and `offload_core` packages, unpacked under `into`."""
    archive = into / "tree.tar"
    subprocess.run(["git", "-C", str(ROOT), "archive", "-o", str(archive), revision, "profiler", "offload_core"],
                   check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "tree", filter="data")
    return into / "tree"


def child(tree: Path, calls: int, passes: int) -> dict[str, float]:
    code = ("import json, sys; sys.path[:0] = [sys.argv[1], sys.argv[2]]\n"
            "import cupti_callback as b; print(json.dumps(b.measure(int(sys.argv[3]), int(sys.argv[4]))))")
    env = {k: v for k, v in os.environ.items() if not k.startswith("OFFLOAD_")}
    proc = subprocess.run([sys.executable, "-c", code, str(tree), str(Path(__file__).parent), str(calls), str(passes)],
                          capture_output=True, text=True, cwd=tempfile.gettempdir(), env=env, check=False)
    if proc.returncode != 0:
        raise SystemExit(f"cupti_callback: measuring {tree} failed: {proc.stderr.strip()[-800:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--against", default="main", help="the revision to compare with (default: %(default)s)")
    parser.add_argument("--rounds", type=int, default=5, help="fresh processes per revision (default: %(default)s)")
    parser.add_argument("--calls", type=int, default=2000, help="CUDA calls per pass (default: %(default)s)")
    parser.add_argument("--passes", type=int, default=20, help="timed passes per process (default: %(default)s)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        old = tree_of(args.against, Path(tmp))
        best: dict[str, dict[str, float]] = {"old": {}, "new": {}}
        for round_ in range(args.rounds):  # the two take turns going first
            for label, tree in (("old", old), ("new", ROOT))[:: 1 if round_ % 2 == 0 else -1]:
                for name, ns in child(tree, args.calls, args.passes).items():
                    best[label][name] = min(best[label].get(name, ns), ns)
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                          check=False).stdout.strip()
    print(f"# {time.strftime('%Y-%m-%d')} {platform.python_implementation()} {platform.python_version()}, "
          f"{platform.machine()}; fake CUPTI, {args.calls} calls x {args.passes} passes x {args.rounds} rounds; "
          f"old: {args.against}, new: this tree ({head or '?'}); fastest pass, ns per callback")
    print(f"{'pattern':<10} {'old':>8} {'new':>8} {'new-old':>8} {'new/old':>8}")
    for name in PATTERNS:
        a, b = best["old"][name], best["new"][name]
        print(f"{name:<10} {a:>8.0f} {b:>8.0f} {b - a:>+8.0f} {b / a:>8.3f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
