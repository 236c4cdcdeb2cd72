"""profiler: records offload_core's copies and launches, finds runtime anti-patterns, gates CI.

The pieces, in dependency order (each only reads the ones above it):

* `profiler.model`: the trace model, `Run` (metadata + records), with
  `save/load/to_json/from_json`. Everything else reads a `Run`.
* `profiler.recorder`: `Recorder`, which subscribes to `offload_core.events`.
* `profiler.summary`: totals and aggregates per launch, kernel, call site
  and direction, as pure functions of a `Run`.
* `profiler.detectors`: the runtime rules OFF501-OFF507 of the catalog.
* `profiler.report`, `profiler.chrome`, `profiler.gate`: text reports,
  Chrome Trace Event export, the CI gate.
* `profiler.cli`: `offload-prof`; `profiler.pytest_plugin`: the pytest
  fixture and marker.

`import profiler` loads none of them (the pytest plugin is imported by
every pytest run of an environment that has offload-guard installed).
"""

__version__ = "0.1.0"
