"""Reading input files without trusting them: every byte the profiler reads from a file.

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

Writing is the linter's too: `offload_core.outfiles.write_atomically`
writes every file the profiler makes (through a temporary file beside the
target and a rename, so that an interrupted or failed write leaves the
previous file or none; 0666 less the umask; missing folders created; a
symlink written through, a character device written in place), and
`offload_core.outfiles.output_problem` refuses, before any work, an
output that cannot be written safely (a FIFO, a folder, a socket).
"""

from __future__ import annotations

import gzip
import io
import json
import os
import stat
import zlib
from typing import Any, Final

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
