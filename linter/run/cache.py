"""A results cache keyed by file content, configuration and tool version.

One small file per entry under `.offload-lint-cache/` (sharded by the first
two hex digits), written atomically, so parallel runs and interrupted runs
never see half an entry; a corrupt or foreign entry reads as a miss. The key
is a BLAKE2 hash of the file's bytes (for a notebook: the Python of its
code cells and where each cell lies in it), its kind, its module name
(relative imports and the kernel index depend on it), and a salt made of
the tool's version, a
fingerprint of the linter's own code, the rule catalog's files and the run's
rule settings. Per-file ignores and output options are applied after the
cache, so they never invalidate it.

A cached result remembers the signatures of the kernels it imported from
other files (`needs`); the runner re-lints it when one of them changed.
"""

from __future__ import annotations

import hashlib
import json
import os
import pickle
import tempfile
from pathlib import Path
from typing import Any, Iterable

from ..findings import FileResult

FORMAT = 1


def fingerprint(version: str, files: Iterable[Path], settings: Any) -> str:
    """The salt: tool version and code, catalog contents, and the rule settings of the run."""
    h = hashlib.blake2b(digest_size=16)
    h.update(f"{FORMAT}|{version}|".encode())
    here = Path(__file__).resolve().parent.parent  # the whole linter package, not only this room
    for source in sorted(here.rglob("*.py")):
        stat = source.stat()
        h.update(f"{source.relative_to(here)}:{stat.st_size}:{stat.st_mtime_ns}|".encode())
    for path in files:
        try:
            h.update(path.read_bytes())
        except OSError:
            h.update(b"<missing>")
    h.update(json.dumps(settings, sort_keys=True, default=str).encode())
    return h.hexdigest()


class Cache:
    def __init__(self, directory: Path | None, salt: str) -> None:
        self.directory = directory
        self.salt = salt.encode()
        self.hits = 0
        self._ready = False

    def key(self, data: bytes, module_name: str, kind: str = "py") -> str:
        """The entry of one file: `data` is a Python file's bytes, or a notebook's code and cell layout."""
        h = hashlib.blake2b(self.salt, digest_size=20)
        h.update(f"{kind}\0{module_name}\0".encode())
        h.update(data)
        return h.hexdigest()

    def get(self, key: str) -> FileResult | None:
        if self.directory is None:
            return None
        try:
            with open(self.directory / key[:2] / key, "rb") as fh:
                result = pickle.load(fh)
        except Exception:  # missing, truncated, or written by another version: a miss
            return None
        if not isinstance(result, FileResult):
            return None
        self.hits += 1
        return result

    def put(self, key: str, result: FileResult) -> None:
        if self.directory is None or result.error is not None:
            return
        try:
            self._prepare()
            folder = self.directory / key[:2]
            folder.mkdir(exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            with os.fdopen(fd, "wb") as fh:
                pickle.dump(result, fh, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, folder / key)
        except OSError:
            self.directory = None  # a read-only tree: run without the cache rather than fail

    def _prepare(self) -> None:
        if self._ready or self.directory is None:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# created by offload-lint\n*\n")
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text("Signature: 8a477f597d28d172789f06886806bc55\n# offload-lint cache\n")
        self._ready = True
