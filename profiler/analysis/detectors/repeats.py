"""OFF501 and OFF502: the same host buffer copied again and again.

OFF501 looks at launches: a call site whose launches copy the same host
buffer on every launch (the naive path of a loop). Of those copies only
the first upload and the last download are needed once a region keeps the
buffer resident; the rest are claimed as waste. OFF502 needs content
fingerprints: an upload whose bytes are identical to the previous upload
of the same buffer, wherever it comes from (a region entered in a loop,
`update_device` of untouched data, launches at different call sites).
"""

from __future__ import annotations

from collections import defaultdict

from ...trace.records import DIRECTION_NAMES, Direction, Site
from ...units import fmt_bytes
from ..replay import keep_resident
from .base import Context, Draft, line_of, names


def per_launch_transfer(ctx: Context) -> None:
    """OFF501: per-launch copies of the same buffer at one call site."""
    min_launches = int(ctx.option("OFF501", "min_launches"))
    records = ctx.records
    groups: dict[tuple[Site | None, int, int], list[int]] = defaultdict(list)
    kernels: dict[Site | None, dict[str, None]] = defaultdict(dict)
    launches: dict[Site | None, set[int]] = defaultdict(set)
    for i, r in enumerate(records):
        if r.launch is None:
            continue
        if r.kind == "launch":
            launches[r.site].add(r.launch)
            if r.kernel:
                kernels[r.site][r.kernel] = None
        elif (r.kind == "h2d" or r.kind == "d2h") and r.array is not None:
            groups[(r.site, r.array, r.nbytes)].append(i)

    by_site: dict[Site | None, list[tuple[str, list[int], list[int]]]] = defaultdict(list)
    for (site, _, _), idxs in groups.items():
        if len({records[i].launch for i in idxs}) < min_launches:
            continue
        up = [i for i in idxs if records[i].kind == "h2d"]
        down = [i for i in idxs if records[i].kind == "d2h"]
        wasted = [i for i in up[1:] + down[:-1] if not ctx.claimed(i)]
        ways: tuple[tuple[Direction, list[int]], ...] = (("h2d", up), ("d2h", down))
        dirs = "+".join(DIRECTION_NAMES[k] for k, part in ways if part)
        by_site[site].append((f"'{records[idxs[0]].param or '?'}' ({dirs})", idxs, wasted))

    for site, parts in by_site.items():
        wasted = sorted(i for _, _, w in parts for i in w)
        if not wasted:
            continue
        moved = sum(records[i].nbytes for _, idxs, _ in parts for i in idxs)
        ctx.add(Draft(
            "OFF501", site, len(launches[site]) or len({records[i].launch for i in wasted}), moved,
            {"kernel": ", ".join(kernels[site]) or "?", "arrays": ", ".join(p for p, _, _ in parts),
             "avoidable": fmt_bytes(sum(records[i].nbytes for i in wasted))},
            wasted, fix=lambda claimed: keep_resident(ctx.run, claimed),
        ))


def reupload_unchanged(ctx: Context) -> None:
    """OFF502: an upload of bytes identical to the previous upload of the same buffer."""
    if not ctx.run.meta.fingerprints:
        return
    min_count = int(ctx.option("OFF502", "min_count"))
    records = ctx.records
    last: dict[tuple[int, int], tuple[str, int]] = {}
    by_site: dict[Site | None, list[tuple[int, int]]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.kind != "h2d" or r.array is None or r.fingerprint is None:
            continue
        key = (r.array, r.nbytes)
        prev = last.get(key)
        if prev is not None and prev[0] == r.fingerprint and not ctx.claimed(i):
            by_site[r.site].append((i, prev[1]))
        last[key] = (r.fingerprint, i)
    for site, pairs in by_site.items():
        if len(pairs) < min_count:
            continue
        idxs = [i for i, _ in pairs]
        first = min(p for _, p in pairs)
        ctx.add(Draft(
            "OFF502", site, len(idxs), sum(records[i].nbytes for i in idxs),
            {"arrays": names(records[i].param for i in idxs), "first_line": line_of(records[first])},
            idxs, fix=lambda claimed: keep_resident(ctx.run, claimed, "upload once"),
        ))
