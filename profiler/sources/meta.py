"""The one `Meta` builder for runs recorded in this process, whatever the source of their events.

offload_core's recorder and the CUPTI recorder describe a run the same
way: the profiler's version, where it ran (working folder, Python, host
name) and when it started. Building that here keeps the two traces
comparable field by field (the host name once came from two different
calls), and leaves each recorder only what it knows: backend, device,
mode and the wall time.
"""

from __future__ import annotations

import os
import platform
import socket
from datetime import datetime, timezone
from typing import Sequence

from ..version import __version__
from ..trace.records import Link, Meta, Outcome


def started_now() -> str:
    """This moment as a trace's `started_at`: ISO 8601 in UTC, to the millisecond."""
    return datetime.now(timezone.utc).isoformat(timespec="milliseconds")


def recorded_meta(
    *,
    backend: str,
    device: str,
    mode: str,
    started_at: str,
    wall_ns: int,
    fingerprints: bool,
    command: Sequence[str] = (),
    argv: Sequence[str] = (),
    outcome: Outcome = "ok",
    exit_code: int = 0,
    link: Link | None = None,
    estimated: Sequence[str] = (),
    exits_ns: tuple[int, int] = (0, 0),
) -> Meta:
    """The `Meta` of a run this process recorded: the given facts plus version, folder, Python and host."""
    return Meta(
        backend=backend,
        device=device,
        mode=mode,
        started_at=started_at,
        wall_ns=max(wall_ns, 0),
        tool_version=__version__,
        command=tuple(command),
        argv=tuple(argv),
        cwd=os.getcwd(),
        python=f"{platform.python_implementation()} {platform.python_version()}",
        host=_hostname(),
        fingerprints=fingerprints,
        outcome=outcome,
        exit_code=exit_code,
        link=link,
        estimated=tuple(estimated),
        exits_ns=exits_ns,
    )


def _hostname() -> str:
    try:
        return socket.gethostname()
    except OSError:  # pragma: no cover - a host without a name
        return ""
