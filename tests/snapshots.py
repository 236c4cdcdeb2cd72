"""Snapshot files for text outputs: one plain UTF-8 file per snapshot, so a diff reads like the output.

Used through the `text_snapshot` fixture (tests/conftest.py). After a
deliberate change of an output, `pytest --snapshot-update` rewrites the
files under the test's `__snapshots__/` folder; review them like code.
"""

from __future__ import annotations

from syrupy.extensions.single_file import SingleFileSnapshotExtension, WriteMode


class TextSnapshot(SingleFileSnapshotExtension):
    _write_mode = WriteMode.TEXT
    _file_extension = "txt"
