"""What the target's child processes left in the run's folder, read when the target ends.

`children` arms the recording in every child and `ChildRecording` stops
it; this module holds what the target's process does with the folder
then, and what `offload-prof run` and `offload-prof recover` ask of it:
whether a process (a child, or the run that made a folder) is still
running, the parts once the children still running had time to append
what they hold, and the folder's removal.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

from .partrecorders import FLUSH_INTERVAL_S
from .parts import Part, Unrecorded


@dataclass(frozen=True)
class Gathered:
    """What the children left: their parts and the notes about children that could not record."""

    parts: list[Part]
    unrecorded: list[Unrecorded]


#: how long the target waits, when it ends, for children still running to append what they hold: two flushes
SETTLE_S = 2 * FLUSH_INTERVAL_S


def settled_parts(folder: Path) -> list[Part]:
    """The children's parts once those still running had time to append what they recorded (`SETTLE_S`).

    A child still running when the target ends (a DataLoader's persistent
    workers, idle in their loop) has no end yet and may hold up to one
    flush interval of records; its flusher appends them within
    `FLUSH_INTERVAL_S`. Such a part is marked `running`: its missing end
    is no loss. Any other part without an end belongs to a child that was
    killed.
    """
    from .parts import read_parts

    parts = read_parts(folder)
    if any(p.end is None and process_running(p.hello.pid) for p in parts):
        time.sleep(SETTLE_S)
        parts = read_parts(folder)
    return [replace(p, running=True) if p.end is None and process_running(p.hello.pid) else p for p in parts]


def process_running(pid: int) -> bool:
    """Whether process `pid` is alive (a zombie, dead and not yet waited for, is not)."""
    if pid == os.getpid():
        return False
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            state = fh.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X", b"x")
    except FileNotFoundError:
        return False
    except (OSError, IndexError):  # no /proc here (macOS): ask the kernel with a null signal
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def remove_folder(folder: Path) -> None:
    """Remove the run's folder and all in it (what is already gone is no error)."""
    import shutil

    shutil.rmtree(folder, ignore_errors=True)
