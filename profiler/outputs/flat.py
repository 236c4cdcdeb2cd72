"""`export --format json`: the runs' records as plain JSON objects, one per record, for jq, pandas or a notebook.

A trace file is built to load fast (columns of base64 integers, a site
table), which is the wrong shape for a quick `jq` query or
`pandas.json_normalize`. This export spells every record out with its
field names and its call site inline, and keeps each run's metadata
beside its records; it is an output only (`offload-prof` does not read it
back; the trace file is the format to keep).
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict
from pathlib import Path
from typing import Any, Sequence

from offload_core.outfiles import write_atomically

from ..trace.model import Run
from ..trace.records import RECORD_FIELDS

FORMAT = "offload-prof-records"


def to_flat(runs: Sequence[Run], paths: Sequence[str]) -> dict[str, Any]:
    """The JSON object: for each run its trace path, metadata and records as objects."""
    out = []
    for run, path in zip(runs, paths):
        records = []
        for r in run.records:
            row = {name: getattr(r, name) for name in RECORD_FIELDS}
            site = r.site
            row["site"] = None if site is None else {"file": site.file, "line": site.line, "column": site.column,
                                                     "function": site.function, "text": site.text}
            records.append(row)
        out.append({"trace": path, "meta": asdict(run.meta), "records": records})
    return {"format": FORMAT, "runs": out}


def export_flat(runs: Sequence[Run], paths: Sequence[str], target: str | os.PathLike[str]) -> Path:
    """Write `to_flat` to `target`, atomically."""
    out = Path(target)
    write_atomically(out, json.dumps(to_flat(runs, paths), separators=(",", ":")).encode())
    return out
