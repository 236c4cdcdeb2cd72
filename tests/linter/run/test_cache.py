"""The results cache: keys depend on content, module name and salt; bad entries are misses."""

from __future__ import annotations

import os
from pathlib import Path

from linter.run.cache import Cache, fingerprint
from linter.findings import FileResult, Finding


def test_round_trip_and_keys(tmp_path: Path) -> None:
    cache = Cache(tmp_path / "c", "salt")
    result = FileResult("a.py", (Finding("OFF101", 1, 2, 1, 5, "m"),))
    key = cache.key(b"x = 1\n", "a")
    assert cache.get(key) is None
    cache.put(key, result)
    assert cache.get(key) == result and cache.hits == 1
    assert key != cache.key(b"x = 2\n", "a") != cache.key(b"x = 1\n", "b")
    assert key != Cache(tmp_path / "c", "other").key(b"x = 1\n", "a")
    assert (tmp_path / "c" / ".gitignore").read_text().endswith("*\n") and (tmp_path / "c" / "CACHEDIR.TAG").exists()


def test_corrupt_entries_and_internal_errors(tmp_path: Path) -> None:
    cache = Cache(tmp_path, "s")
    key = cache.key(b"", "m")
    (tmp_path / key[:2]).mkdir()
    (tmp_path / key[:2] / key).write_bytes(b"not a pickle")
    assert cache.get(key) is None
    cache.put(key, FileResult("a.py", error="boom"))  # results of a failing check are never cached
    assert cache.get(key) is None


def test_fingerprint_changes_with_catalog_and_settings(tmp_path: Path) -> None:
    rule = tmp_path / "rule.yaml"
    rule.write_text("a")
    one = fingerprint("1", [rule], {"enabled": ["OFF101"]})
    assert one == fingerprint("1", [rule], {"enabled": ["OFF101"]})
    assert one != fingerprint("1", [rule], {"enabled": ["OFF102"]})
    assert one != fingerprint("2", [rule], {"enabled": ["OFF101"]})
    rule.write_text("b")
    assert one != fingerprint("1", [rule], {"enabled": ["OFF101"]})


def test_fingerprint_follows_an_edit_anywhere_in_the_linter() -> None:
    """An edited analysis module must invalidate cached results, not only an edit of the runner's own room."""
    import linter.analysis.reaching as edited

    source = Path(edited.__file__)
    before = source.stat()
    one = fingerprint("1", [], {})
    try:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns + 1_000_000_000))
        assert fingerprint("1", [], {}) != one
    finally:
        os.utime(source, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert fingerprint("1", [], {}) == one


def test_no_directory_means_no_cache() -> None:
    cache = Cache(None, "s")
    cache.put("ab" * 20, FileResult("a.py"))
    assert cache.get("ab" * 20) is None
