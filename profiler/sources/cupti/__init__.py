"""CUPTI recorded live (NVIDIA): every CUDA copy, memset, kernel and host wait of the process.

offload_core's events cover offload_core's own launches; this source
covers everything else a CUDA program does, plain CuPy, PyTorch and Numba
code included, and turns it into the same `profiler.trace.model.Run`, so
that reports, comparisons, detectors, the gate and the TUI need nothing
new (AMD's counterpart is `profiler.sources.rocprof`, which imports
rocprofv3's output). The modules, in dependency order:

* `activity`: CUPTI's records and intercepted calls as plain frozen records.
* `apis`: the CUDA calls to intercept and how to read their arguments.
* `frames`: the Python call site of a CUDA call.
* `convert`: a `Capture` -> `Run` records, in issue order.
* `probe`: is cupti-python installed, is there an NVIDIA GPU, will CUPTI start (one-line errors).
* `native`: libcupti's hot paths (API callbacks, activity buffers) through ctypes.
* `callbacks`: what an API callback looks up on every call (the tracer's and the listening session's).
* `buffers`: activity buffers lent to CUPTI and decoded in bulk with NumPy.
* `listeners`: who must hear of a copy or sync while its Python line is on the stack (the transfer guard).
* `tracer`: the live CUPTI session (with `native` and `listening`, the only code that calls CUPTI); it
  also calls the listeners.
* `listening`: a listening-only CUPTI session for the listeners while no recording runs.
* `jaxcalls`: JAX's copy calls as the program made them (wrapped while a recording runs).
* `runtimecopies`: the copies JAX's threads made, given the line of the call that asked for them.
* `recorder`: `CuptiRecorder`, the `Recorder` interface `offload-prof run --source cupti` uses.

Importing this package imports neither cupti-python nor CuPy: cupti-python
is imported by `probe.require()` when a recording starts, so a machine
without the `cupti` extra loads traces, and fails `--source cupti` with a
message, not an ImportError.
"""

from .recorder import CuptiRecorder

__all__ = ["CuptiRecorder"]
