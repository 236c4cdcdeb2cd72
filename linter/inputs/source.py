"""Reading a source file: what the main process needs of it without LibCST.

The runner decodes and prefilters every file before any parsing, and a warm
run answers everything from the cache, so none of this may import the
parser: start-up time is most of a warm run.
"""

from __future__ import annotations

import codecs
import errno
import io
import os
import stat
import tokenize
from dataclasses import dataclass


@dataclass(frozen=True)
class Decoded:
    text: str
    encoding: str


class DecodeError(ValueError):
    pass


class UnreadableError(ValueError):
    """A path that cannot be linted as a file; the message is the OFF902 reason."""


_KINDS = (
    (stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO"), (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
)


def read_source(path: str | os.PathLike[str]) -> bytes:
    """The bytes of a regular file; anything else is an `UnreadableError`, found without blocking.

    A FIFO named `p.py` would block a plain `open()` until a writer comes, and
    `/dev/zero` behind a `z.py` symlink would be read until memory runs out,
    so the file is opened non-blocking and its type checked on the open
    descriptor (no window between a check and the open). Regular files
    ignore O_NONBLOCK.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise UnreadableError(_reason(exc)) from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            kind = next((name for test, name in _KINDS if test(mode)), "not a regular file")
            raise UnreadableError(f"not a regular file ({kind})")
        with os.fdopen(fd, "rb", closefd=False) as fh:
            return fh.read()
    except OSError as exc:
        raise UnreadableError(_reason(exc)) from None
    finally:
        os.close(fd)


def _reason(exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "a symlink loop"
    return exc.strerror or type(exc).__name__


def decode(data: bytes) -> Decoded:
    """Bytes to text the way Python reads a source file: BOM, then `# coding:`, else UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
        codecs.lookup(encoding)
        text = data.decode(encoding)
    except (SyntaxError, LookupError, UnicodeDecodeError) as exc:
        raise DecodeError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__) from None
    if text.startswith("\ufeff"):
        text = text[1:]
    return Decoded(text, encoding)
