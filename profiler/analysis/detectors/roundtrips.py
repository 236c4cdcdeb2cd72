"""OFF503 and OFF506: data that goes back to the host for nothing.

Both follow one host buffer (by address) through the run. OFF503 needs
fingerprints: a download into the buffer followed by an upload of exactly
those bytes, a round trip through the host that left the data unchanged;
both copies are claimed. OFF506 needs no fingerprints: a download into the
buffer that is overwritten by the next download into it, with no upload of
the buffer in between, so the host never sent it anywhere. The profiler
cannot see host *reads*; the rule says so, and only fires on repeats. One
read it does see: a torch.distributed call on a tensor sharing the buffer
(`dist.send(torch.from_numpy(u), dst=1)`) sends the downloaded bytes to
another rank, so a collective on the buffer, other than a receive into
it, ends the download's wait for a reader as an upload does.
OFF506 skips the backends its `skip_backends` option lists (CUPTI traces,
whose host addresses are the libraries' own download buffers).
"""

from __future__ import annotations

from collections import defaultdict

from ...trace.records import Site
from ..replay import keep_resident
from .base import Context, Draft, line_of, names

#: torch.distributed's calls that only write their tensor: a receive into a buffer reads none of it
RECEIVES = frozenset({"recv", "irecv"})


def round_trip(ctx: Context) -> None:
    """OFF503: D2H then H2D of the same buffer with unchanged bytes."""
    if not ctx.run.meta.fingerprints:
        return
    min_count = int(ctx.option("OFF503", "min_count"))
    records = ctx.records
    last_down: dict[tuple[int, int], tuple[str, int]] = {}
    by_site: dict[Site | None, list[tuple[int, int]]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.array is None or r.fingerprint is None:
            continue
        key = (r.array, r.nbytes)
        if r.kind == "d2h":
            last_down[key] = (r.fingerprint, i)
        elif r.kind == "h2d":
            prev = last_down.pop(key, None)
            if prev is not None and prev[0] == r.fingerprint and not ctx.claimed(i) and not ctx.claimed(prev[1]):
                by_site[r.site].append((prev[1], i))
    for site, pairs in by_site.items():
        if len(pairs) < min_count:
            continue
        idxs = sorted(j for pair in pairs for j in pair)
        ctx.add(Draft(
            "OFF503", site, len(pairs), sum(records[j].nbytes for j in idxs),
            {"arrays": names(records[up].param for _, up in pairs),
             "d2h_line": line_of(records[pairs[0][0]])},
            idxs, fix=lambda claimed: keep_resident(ctx.run, claimed),
        ))


def write_back_never_read(ctx: Context) -> None:
    """OFF506: a D2H into a buffer overwritten by the next D2H, with no upload between."""
    if ctx.run.meta.backend in tuple(ctx.option("OFF506", "skip_backends") or ()):
        return
    min_count = int(ctx.option("OFF506", "min_count"))
    records = ctx.records
    last_down: dict[tuple[int, int], int] = {}
    by_site: dict[Site | None, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.array is None:
            continue
        key = (r.array, r.nbytes)
        if r.kind == "h2d":
            last_down.pop(key, None)
        elif r.kind == "collective" and r.kernel not in RECEIVES:
            for held in [k for k in last_down if k[0] == r.array]:  # the tensor may cover part of the buffer only
                del last_down[held]
        elif r.kind == "d2h":
            prev = last_down.get(key)
            if prev is not None and not ctx.claimed(prev):
                by_site[records[prev].site].append(prev)
            last_down[key] = i
    for site, idxs in by_site.items():
        if len(idxs) < min_count:
            continue
        ctx.add(Draft(
            "OFF506", site, len(idxs), sum(records[i].nbytes for i in idxs),
            {"arrays": names(records[i].param for i in idxs)},
            sorted(idxs), fix=lambda claimed: keep_resident(ctx.run, claimed, "copy back once"),
        ))
