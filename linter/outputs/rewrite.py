"""Writing a fixed source file: whole or not at all, keeping what the file is.

Where the folder is writable the new text goes to a temporary file beside
the original, which then replaces it (`os.replace`): a full disk, a
file-size limit or a kill in the middle leaves the original untouched. The
replacement keeps the original's permission bits and, where allowed, its
owner; a symlink is followed, so the link stays a link and its target gets
the fix. Two cases are written in place instead: a file with other hard
links (a replacement would cut them), and a writable file in a folder that
is not (no temporary file can be made there). In place, nothing is
truncated before every new byte is written, and a write that fails puts
back the bytes it overwrote from the original (blocks the file already
has, so a full disk cannot stop that) before the error is raised.
"""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

_BINARY = getattr(os, "O_BINARY", 0) | getattr(os, "O_CLOEXEC", 0)


def write_fixed(path: Path, new: bytes, old: bytes) -> None:
    """Replace the content of `path` (now `old`) with `new`; raises OSError and leaves it as it was."""
    target = os.path.realpath(path)
    info = os.stat(target)
    if info.st_nlink == 1:
        try:
            fd, temporary = tempfile.mkstemp(dir=os.path.dirname(target), prefix=".offload-lint-", suffix=".tmp")
        except OSError:  # a folder this process may not write into: in place
            pass
        else:
            _replace(fd, temporary, target, new, info)
            return
    rewrite(Path(target), new, old)


def _replace(fd: int, temporary: str, target: str, new: bytes, info: os.stat_result) -> None:
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(new)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(temporary, stat.S_IMODE(info.st_mode))
        if (info.st_uid, info.st_gid) != (os.geteuid(), os.getegid()):
            try:
                os.chown(temporary, info.st_uid, info.st_gid)
            except OSError:  # only root may give a file away: it stays ours
                pass
        os.replace(temporary, target)
    except BaseException:
        try:
            os.unlink(temporary)
        except OSError:
            pass
        raise


def rewrite(path: Path, new: bytes, old: bytes) -> None:
    """Overwrite the file at `path` (whose content is `old`) with `new`, in place."""
    fd = os.open(path, os.O_WRONLY | _BINARY)
    try:
        written = 0
        try:
            while written < len(new):
                written += _write_at(fd, memoryview(new)[written:], written)
            os.ftruncate(fd, len(new))
        except OSError:
            _restore(fd, old, written)
            raise
    finally:
        os.close(fd)


def _write_at(fd: int, data: memoryview, offset: int) -> int:
    os.lseek(fd, offset, os.SEEK_SET)
    return os.write(fd, data)


def _restore(fd: int, old: bytes, written: int) -> None:
    """Put back the first `written` bytes of the original, and its length; best effort."""
    try:
        done = 0
        head = memoryview(old)[: min(written, len(old))]
        while done < len(head):
            done += _write_at(fd, head[done:], done)
        os.ftruncate(fd, len(old))
    except OSError:
        pass
