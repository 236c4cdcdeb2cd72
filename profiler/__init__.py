"""profiler: records offload_core's events, finds runtime anti-patterns, gates CI (see DESIGN.md)."""
