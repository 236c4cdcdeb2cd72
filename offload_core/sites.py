"""`Site`: a line of user code that issued an operation, the one call-site type of the project.

offload_core stamps every event with the user's site (`events.callsite`,
the first frame outside offload_core), its borrow and residency errors
name the line that moved or mapped an array, and the profiler's trace
records carry the same type with the source text filled in. It lives in
a module of its own, importing nothing, so that the profiler can read a
trace without starting the offload_core runtime.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Site:
    """A line of user code: file, 1-based line, function; the stripped source text and statement column if known.

    offload_core's events leave `text` empty and `column` 1 (reading source
    lines on the hot path would cost every launch); the profiler's recorder
    fills them in once per site after the run. The gate matches sites by
    file, function and text, so that code moving up or down a file keeps
    its baseline.
    """

    file: str
    line: int
    function: str
    text: str = ""
    column: int = 1

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"
