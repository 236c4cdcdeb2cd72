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
file or none. What a user names as an output may be something other than
a file: a symlink is written through (the file it points to is renamed
over, in that file's folder, so the link stays a link; a dangling link's
target is created), a character device (`-o /dev/null`) is opened and
written to, never replaced (as root, a rename would replace the system's
`/dev/null` with a file), and anything else (a FIFO, whose reader may
never come; a folder; a socket; a block device; a symlink loop) is
refused by `output_problem`, which offload-prof asks before any work,
and again by the writer. In place (offload-lint's `--output-file`) the
target is opened and written as it is, so it may be a device or a FIFO
(`/dev/stdout`), no folder is created, and a regular file left half
written is removed.

Payloads may be bytes or an iterable of byte pieces written as they come
(a trace of millions of records is encoded piece by piece, never held
whole as text and again as bytes).
"""

from __future__ import annotations

import errno
import os
import secrets
import stat
import sys
from pathlib import Path
from typing import Callable, Iterable

#: the system's reason a write failed (one line) -> the tool's one-line error, to raise
Failure = Callable[[str], Exception]
#: what is written: bytes, or pieces of them in order
Payload = bytes | Iterable[bytes]
#: the most bytes handed to one `os.write` on a device
_CHUNK = 1 << 20


def reason(exc: OSError) -> str:
    """Why a write failed, in the system's words (`No space left on device`); the message when it gives none."""
    return exc.strerror or str(exc)


def write_stdout(text: str | bytes, failed: Failure) -> None:
    """Write `text` to standard output now (flushed); a full disk or a closed terminal behind it is `failed(reason)`.

    Bytes go to the stream's buffer as they are, after what the text layer
    holds (`encoded` text that the stream's encoding cannot take). A reader
    that went away stays a `BrokenPipeError`: the tools end quietly on it,
    as other Unix tools do.
    """
    try:
        if isinstance(text, bytes):
            sys.stdout.flush()
            sys.stdout.buffer.write(text)
        else:
            sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except OSError as exc:
        raise failed(reason(exc)) from None


def encoded(text: str, encoding: str = "utf-8") -> bytes:
    """`text` as bytes; a file name that is not UTF-8 (held as lone surrogates) gets its own bytes back, as `ls`
    shows it; a surrogate that stands for no byte, or a character a narrower encoding lacks, is written `\\uXXXX`."""
    try:
        return text.encode(encoding, "surrogateescape")
    except UnicodeEncodeError:
        return text.encode(encoding, "backslashreplace")


def write_report(target: Path, text: str | bytes, failed: Failure, *, in_place: bool = False) -> None:
    """Write `text` (UTF-8; bytes as they are) to `target` whole, or raise `failed(reason)` and leave no partial file.

    By default through `write_atomically` (missing folders created, the
    previous file kept on failure; a symlink written through, a device in
    place); `in_place`: opened and written as it is (see the module's
    docstring).
    """
    payload = text if isinstance(text, bytes) else text.encode("utf-8")
    try:
        if in_place:
            _write_in_place(target, payload)
        else:
            write_atomically(target, payload)
    except OSError as exc:
        raise failed(reason(exc)) from None


def output_problem(path: str | os.PathLike[str]) -> str | None:
    """Why `path` cannot be written as an output file, in a few words (`is a FIFO`), or None when it can.

    A path that does not exist, a regular file, a character device, or a
    symlink to any of these (dangling included: writing creates its target)
    can be written; a FIFO, a folder, a socket, a block device or a symlink
    loop cannot, and neither can a symlink to one (`is a symlink to a FIFO`).
    """
    try:
        info = os.stat(path)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return "is a symlink loop"
        return None  # a file where a folder should be, no permission: the folder check says so
    kind = _output_kind(info.st_mode)
    if kind is None:
        return None
    return f"is a symlink to {kind}" if os.path.islink(path) else f"is {kind}"


def is_device(path: str | os.PathLike[str]) -> bool:
    """Whether `path` is (or points to) a character device, which is written to in place (`/dev/null`)."""
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def resolved(path: str | os.PathLike[str]) -> Path:
    """The file `path` names once its symlinks are followed (itself when it is none; a dangling link's target)."""
    return Path(os.path.realpath(path))


def write_atomically(target: Path, payload: Payload) -> None:
    """Write `payload` to `target` through a temporary file in the same folder and a rename.

    Creates missing folders; the file gets 0666 less the umask. A symlink
    is followed: the file it names is replaced, in its own folder, and the
    link stays. A character device is written to as it is (no rename).
    Anything else that is not a file (a FIFO created since the command
    checked) is an `OSError` saying what it is. On any failure the
    temporary file is removed and the exception (an `OSError` for a full
    disk or a folder that cannot be written) propagates.
    """
    target = resolved(target) if os.path.islink(target) else target
    try:
        info: os.stat_result | None = os.stat(target)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISCHR(info.st_mode):
        _write_device(target, payload)
        return
    if info is not None and not stat.S_ISREG(info.st_mode):
        raise OSError(errno.EINVAL, f"{target} is {_output_kind(info.st_mode) or 'not a file'}, not a file")
    # A trace is written after the program under test has run: an interrupted
    # write must leave the previous file (or none), never a truncated one.
    directory = target.parent if str(target.parent) else Path(".")
    directory.mkdir(parents=True, exist_ok=True)
    fd, tmp = _create_temporary(directory, target.name)
    try:
        with os.fdopen(fd, "wb") as fh:
            for piece in _pieces(payload):
                fh.write(piece)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, target)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def _pieces(payload: Payload) -> Iterable[bytes]:
    return (payload,) if isinstance(payload, (bytes, bytearray, memoryview)) else payload


def _write_device(target: Path, payload: Payload) -> None:
    """Write `payload` to the character device `target` as `cat > /dev/null` would: opened, written, closed.

    The descriptor's type is checked once more after opening, so that a
    file swapped in since is never truncated or half written in place.
    """
    fd = os.open(target, os.O_WRONLY | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0))
    try:
        if not stat.S_ISCHR(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, f"{target} is no longer a character device")
        for piece in _pieces(payload):
            view = memoryview(piece)
            while view:
                view = view[os.write(fd, view[:_CHUNK]):]
    finally:
        os.close(fd)


def _output_kind(mode: int) -> str | None:
    """What an output path is when it must not be written (None for a file or a character device)."""
    for test, label in ((stat.S_ISREG, None), (stat.S_ISCHR, None), (stat.S_ISDIR, "a directory"),
                        (stat.S_ISFIFO, "a FIFO"), (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return label
    return "not a regular file"


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
