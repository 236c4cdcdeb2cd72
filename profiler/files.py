"""Reading input files without trusting them, and writing output files whole: every byte of the profiler's file I/O.

Whatever a user names as a trace, baseline, budget, link profile or
rocprofv3 output may be anything: a FIFO nobody writes to (opening it
would wait for ever), `/dev/zero` (reading it never ends), a file of
100 GB, a gzip stream that inflates without bound or stops in the middle.
`read_input` opens without blocking, checks on the open descriptor that
it is a regular file, and reads (and inflates) at most a fixed number of
bytes, so each of those is a one-line `TraceError` before memory or time
runs out. `decode_json` turns the bytes into JSON data with the same
care: a document nested too deeply for the parser, or an integer of
thousands of digits, is a one-line error, not a `RecursionError` or
`ValueError` traceback; `read_yaml` does the same for the small YAML
files (budgets, link profiles).

`write_atomically` writes through a temporary file beside the target and
renames it over the target, so that an interrupted or failed write (Ctrl-C,
a full disk) leaves the previous file or none, never half of one; the
temporary file is created with mode 0666, so the kernel applies the umask
and the result has the permissions any other tool's output has. Missing
folders of the target are created, as every offload-prof command that
writes a file promises. What a user names as an output may be something
other than a file: a symlink is written through (the file it points to is
renamed over, in that file's folder, so the link stays a link), a
character device (`-o /dev/null`) is opened and written to, never
replaced, and anything else (a FIFO, whose reader may never come; a
folder; a socket; a block device) is refused by `output_problem`, which
the commands ask before any work.
"""

from __future__ import annotations

import errno
import gzip
import io
import json
import os
import secrets
import stat
import zlib
from pathlib import Path
from typing import Any, Final, Iterable

from .errors import TraceError
from .units import fmt_bytes

#: the most bytes read from an input file, and the most a gzip-compressed one may inflate to
MAX_INPUT_BYTES: Final = 4 * 1024**3
#: the limit for the small YAML files (budgets, link profiles)
MAX_CONFIG_BYTES: Final = 16 * 1024**2

_GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


def read_input(path: str | os.PathLike[str], what: str, limit: int | None = None) -> bytes:
    """The bytes of a regular file, inflated when gzip-compressed, at most `limit` (`MAX_INPUT_BYTES`).

    Anything else (no such file, a folder, a FIFO or device, a file or a
    gzip stream too large) is a one-line `TraceError` naming the file.
    """
    name = str(path)
    limit = MAX_INPUT_BYTES if limit is None else limit
    try:
        # O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; the
        # descriptor's type is checked before anything is read from it.
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0))
    except IsADirectoryError:
        raise TraceError(f"{name}: is a directory, not a {what} file") from None
    except OSError as exc:
        raise TraceError(f"{name}: cannot read {what} file ({exc.strerror or exc})") from None
    try:
        info = os.fstat(fd)
        if stat.S_ISDIR(info.st_mode):
            raise TraceError(f"{name}: is a directory, not a {what} file")
        if not stat.S_ISREG(info.st_mode):
            raise TraceError(f"{name}: is {_file_type(info.st_mode)}, not a {what} file")
        if info.st_size > limit:
            raise TraceError(f"{name}: {_size(info.st_size)} is more than the {_size(limit)} offload-prof reads "
                             f"from a {what} file")
        raw = _read_at_most(fd, limit + 1)
    except OSError as exc:
        raise TraceError(f"{name}: cannot read {what} file ({exc.strerror or exc})") from None
    finally:
        os.close(fd)
    if len(raw) > limit:  # it grew while being read
        raise TraceError(f"{name}: more than the {_size(limit)} offload-prof reads from a {what} file")
    if raw[:2] == _GZIP_MAGIC:
        raw = _gunzip(raw, name, what, limit)
    return raw


def decode_json(raw: bytes, name: str, what: str) -> Any:
    """The JSON data in `raw` (UTF-8 text), or a one-line `TraceError` naming the file."""
    if not raw.strip():
        raise TraceError(f"{name}: empty file, not a {what}")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{name}: not a {what} (not UTF-8 text: byte {exc.start})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        # An unterminated string runs to the end of the input; any other error
        # at the very end means the document stopped before it was complete.
        if exc.msg.startswith("Unterminated string") or exc.pos >= len(text.rstrip()):
            raise TraceError(f"{name}: truncated: the JSON document ends before it is complete "
                             f"({len(raw)} bytes read)") from None
        raise TraceError(f"{name}: not valid JSON at line {exc.lineno} column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise TraceError(f"{name}: not a {what}: JSON nested too deeply to read") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise TraceError(f"{name}: not a {what}: {str(exc).splitlines()[0]}") from None
    except MemoryError:
        raise TraceError(f"{name}: too large to load into memory ({_size(len(raw))} of JSON)") from None


def read_yaml(path: str | os.PathLike[str], what: str) -> Any:
    """The YAML data of a small configuration file (a budget, a link profile), or a one-line `TraceError`."""
    import yaml

    from offload_core.catalog import YAML_LOADER

    name = str(path)
    raw = read_input(path, what, MAX_CONFIG_BYTES)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise TraceError(f"{name}: not a {what} (not UTF-8 text: byte {exc.start})") from None
    try:
        return yaml.load(text, Loader=YAML_LOADER)
    except yaml.YAMLError as exc:
        raise TraceError(f"{name}: not a {what} (invalid YAML: {str(exc).splitlines()[0]})") from None
    except RecursionError:
        raise TraceError(f"{name}: not a {what}: YAML nested too deeply to read") from None
    except ValueError as exc:  # an integer of more digits than Python converts
        raise TraceError(f"{name}: not a {what}: {str(exc).splitlines()[0]}") from None


def json_type(value: Any) -> str:
    """What a JSON value is, in JSON's words (`an object`, `null`), for messages about wrong types."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    if isinstance(value, dict):
        return "an object"
    return f"a {type(value).__name__}"


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
        if exc.errno == errno.ENOTDIR:
            return None  # a file where a folder should be: the folder check says so
        return None  # permission problems are the folder check's to report
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


def write_atomically(target: Path, payload: bytes | Iterable[bytes]) -> None:
    """Write `payload` (bytes, or pieces of them in order) to `target` through a temporary file in the same folder
    and a rename. Pieces are written as they come, so a large trace is never in memory twice.

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


def _pieces(payload: bytes | Iterable[bytes]) -> Iterable[bytes]:
    return (payload,) if isinstance(payload, (bytes, bytearray, memoryview)) else payload


def _write_device(target: Path, payload: bytes | Iterable[bytes]) -> None:
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
    """What an output path is when offload-prof must not write it (None for a file or a character device)."""
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode):
        return None
    if stat.S_ISDIR(mode):
        return "a directory"
    return _file_type(mode)


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


def _read_at_most(fd: int, n: int) -> bytes:
    chunks = []
    left = n
    while left > 0:
        chunk = os.read(fd, min(left, _CHUNK))
        if not chunk:
            break
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def _gunzip(raw: bytes, name: str, what: str, limit: int) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(raw)) as fh:
            out = fh.read(limit + 1)
    except (EOFError, OSError, zlib.error) as exc:
        why = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        raise TraceError(f"{name}: truncated or corrupt gzip data ({why})") from None
    if len(out) > limit:
        raise TraceError(f"{name}: gzip data inflates to more than the {_size(limit)} offload-prof reads "
                         f"from a {what} file")
    return out


def _file_type(mode: int) -> str:
    for test, label in ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
                        (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return label
    return "not a regular file"


def _size(n: int) -> str:
    return fmt_bytes(n)
