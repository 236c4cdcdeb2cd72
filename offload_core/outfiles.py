"""Writing a tool's output: to standard output, or to a file whole or not at all.

offload-lint and offload-prof promise the same things of what they write
(docs/design.md, "Full disks and unwritable files"): a failure is one
line saying why, in the tool's own words, and exit status 2, never a
traceback; a file is created with the permissions any other tool's
output has (0666 less the umask); a failed write never leaves half a
file for the next CI step to upload; and a reader that went away
(`offload-prof report x | head`) is no error. The mechanics live here,
beside the catalog, where both tools can import them without loading the
offload_core runtime; the words stay each tool's: every writer takes
`failed`, the function that turns the system's reason ("No space left
on device") into the tool's one-line error, which is raised without the
`OSError` behind it.

Files are written one of two ways. `write_atomically` (offload-prof:
traces, baselines, exports, reports) writes a temporary file beside the
target and renames it over the target, creating missing folders, so an
interrupted or failed write (Ctrl-C, a full disk) leaves the previous
file or none. In place (offload-lint's `--output-file`) the target is
opened and written as it is, so it may be a device or a FIFO
(`/dev/stdout`), no folder is created, and a regular file left half
written is removed.
"""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path
from typing import Callable

#: the system's reason a write failed (one line) -> the tool's one-line error, to raise
Failure = Callable[[str], Exception]


def reason(exc: OSError) -> str:
    """Why a write failed, in the system's words (`No space left on device`); the message when it gives none."""
    return exc.strerror or str(exc)


def write_stdout(text: str, failed: Failure) -> None:
    """Write `text` to standard output now (flushed); a full disk or a closed terminal behind it is `failed(reason)`.

    A reader that went away stays a `BrokenPipeError`: the tools end
    quietly on it, as other Unix tools do.
    """
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise failed(reason(exc)) from None


def write_report(target: Path, text: str, failed: Failure, *, in_place: bool = False) -> None:
    """Write `text` (UTF-8) to `target` whole, or raise `failed(reason)` and leave no partial file.

    By default through `write_atomically` (missing folders created, the
    previous file kept on failure); `in_place`: opened and written as it
    is (see the module's docstring).
    """
    payload = text.encode("utf-8")
    try:
        if in_place:
            _write_in_place(target, payload)
        else:
            write_atomically(target, payload)
    except OSError as exc:
        raise failed(reason(exc)) from None


def write_atomically(target: Path, payload: bytes) -> None:
    """Write `payload` to `target` through a temporary file in the same folder and a rename.

    Creates missing folders; the file gets 0666 less the umask. On any
    failure the temporary file is removed and the exception (an `OSError`
    for a full disk or a folder that cannot be written) propagates.
    """
    # A trace is written after the program under test has run: an interrupted
    # write must leave the previous file (or none), never a truncated one.
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(directory, target.name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(payload)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _create_temporary(directory: Path, name: str) -> tuple[int, Path]:
    """A new file beside the target, mode 0666 before the umask (`tempfile.mkstemp` makes 0600)."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = directory / f".{name}.{secrets.token_hex(6)}.tmp"
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(f"cannot create a temporary file in {directory}")  # pragma: no cover


def _write_in_place(target: Path, payload: bytes) -> None:
    """Open `target` for writing as it is (0666 less the umask when created) and write `payload`.

    On failure a regular file this wrote into is removed (truncated or half
    written, it is worse than no file), and the `OSError` propagates.
    """
    opened = False
    try:
        with open(target, "wb") as fh:
            opened = True
            fh.write(payload)
    except OSError:
        if opened and target.is_file():
            try:
                target.unlink()
            except OSError:
                pass
        raise
