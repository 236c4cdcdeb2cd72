"""The one exception type a user of the profiler can meet for bad input.

Every problem with a trace, a baseline, a budget, a link profile or a
command line is a `ProfilerError` whose message is one line that names the
file (when there is one) and says what is wrong; the CLI prints it and
exits with status 2. Anything else reaching the CLI is a bug in the
profiler: it prints one `internal error` line asking for a report, and
exits 2 as well, never 1 (the gate's "regression").
"""

from __future__ import annotations


class ProfilerError(Exception):
    """Bad input: a one-line message, printed without a traceback (exit 2)."""


class TraceError(ProfilerError):
    """A trace or baseline file that cannot be read: truncated, malformed or too new."""
