"""The runtime rules of distributed jobs: OFF508 host-staged peer transfer, OFF509 logging collective, OFF510 stall.

OFF509 looks at one rank's records (a collective of a few bytes from one
line, step after step), so it is an ordinary detector, run per rank and
folded across ranks like every other (`profiler.analysis.ranks`). The two
others need the ranks side by side, so they read the job's trace
(`detect_job`):

* **OFF508** follows content across ranks: a download on one rank whose
  bytes (fingerprint and size) are uploaded on another rank afterwards,
  where the receiving rank never had those bytes before, went through
  both hosts instead of device to device. Content a rank held itself
  (every rank uploading the same zeros) is not a transfer.
* **OFF510** lines up the collectives of the ranks (the k-th collective of
  every rank is one meeting, as torch.distributed requires), finds the
  rank that arrived last at each, and the sync on that rank since its
  previous collective that made it late: the other ranks' wait is charged
  to that rank and that line.

Job findings carry the job's record indices and their ranks; their
expected saving is what the job's wall time would lose (for OFF508 the
rank whose copies go, replayed as any rank is; for OFF510 the part of
each blamed sync that others waited for).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from offload_core.catalog import Rule

from ...trace.records import Link, Site
from ...units import fmt_bytes, fmt_ns, parse_size, parse_duration
from ..replay import Timeline, hoist, replayed_wall
from .base import Context, Draft, Finding, lost_text

if TYPE_CHECKING:
    from ...trace.job import Job

#: the rules that read the job as a whole, in the order they run
JOB_RULES = ("OFF508", "OFF510")


# ------------------------------------------------------------ OFF509, per rank
def logging_collective(ctx: Context) -> None:
    """OFF509: a collective of at most `max_bytes` from one line, at least `min_count` times."""
    max_bytes = parse_size(ctx.option("OFF509", "max_bytes"), "OFF509 max_bytes")
    min_count = int(ctx.option("OFF509", "min_count"))
    by_site: dict[tuple[Site | None, str | None], list[int]] = defaultdict(list)
    for i, r in enumerate(ctx.records):
        if r.kind == "collective" and r.nbytes <= max_bytes and not (r.kernel or "").startswith("nccl") \
                and not ctx.claimed(i):
            by_site[(r.site, r.kernel)].append(i)
    for (site, op), found in by_site.items():
        if len(found) < min_count:
            continue
        nbytes = sum(ctx.records[i].nbytes for i in found)
        # a collective's time is no copy over the modelled link: measured only
        ctx.add(Draft("OFF509", site, len(found), nbytes,
                      {"op": op or "collective", "size": fmt_bytes(max(ctx.records[i].nbytes for i in found))},
                      found, sum(ctx.records[i].duration_ns for i in found), None, explicit_lost=True))


# ------------------------------------------------------------ the job's rules
@dataclass
class _Group:
    site: Site | None
    ranks: set[int]
    records: list[int]
    nbytes: int = 0
    lost: int = 0
    saving: int = 0
    fields: dict[str, Any] | None = None


def detect_job(job: Job, rules: Mapping[str, Rule], options: Mapping[str, Mapping[str, Any]],
               link: Link | None = None, claimed: frozenset[int] = frozenset()) -> list[Finding]:
    """The job rules' findings (`JOB_RULES`, those enabled in `rules`); `claimed`: job records blamed already."""
    def option(code: str, name: str) -> Any:
        return options.get(code, {}).get(name, rules[code].options[name])

    records = job.run.records
    of_records = job.rank_of_records().tolist()
    out: list[Finding] = []
    if "OFF508" in rules and job.run.meta.fingerprints:
        out += _finish("OFF508", rules["OFF508"], _staged(records, of_records, option, claimed), job, link)
    if "OFF510" in rules:
        out += _finish("OFF510", rules["OFF510"], _stalls(records, of_records, option), job, link)
    return out


def _staged(records: Any, ranks: list[int], option: Any, claimed: frozenset[int]) -> list[_Group]:
    """OFF508: downloads on one rank whose bytes are uploaded on another, grouped by (ranks, lines)."""
    min_bytes = parse_size(option("OFF508", "min_bytes"), "OFF508 min_bytes")
    held: dict[tuple[str, int], dict[int, int]] = defaultdict(dict)  # content -> rank -> when it first held it
    sent: dict[tuple[str, int], tuple[int, int]] = {}  # content -> (index, rank) of its latest download
    groups: dict[tuple[int, Site | None, int, Site | None], _Group] = {}
    for i, r in enumerate(records):
        if r.kind not in ("h2d", "d2h") or r.fingerprint is None or r.nbytes < min_bytes or ranks[i] < 0:
            continue
        key, rank = (r.fingerprint, r.nbytes), ranks[i]
        if r.kind == "h2d":
            origin = sent.get(key)
            if origin is not None and i not in claimed and origin[0] not in claimed:
                src, src_rank = origin
                had = held[key].get(rank)
                if src_rank != rank and (had is None or had > records[src].start_ns):
                    d = records[src]
                    g = groups.setdefault((src_rank, d.site, rank, r.site), _Group(d.site, {src_rank, rank}, []))
                    g.records += [src, i]
                    g.nbytes += r.nbytes
                    g.lost += d.duration_ns + r.duration_ns
                    g.fields = {"src": src_rank, "dst": rank, "line": r.site.line if r.site else 0}
        else:
            sent[key] = (i, rank)
        held[key].setdefault(rank, r.start_ns)
    min_count = int(option("OFF508", "min_count"))
    return [g for g in groups.values() if len(g.records) // 2 >= min_count]


def _stalls(records: Any, ranks: list[int], option: Any) -> list[_Group]:
    """OFF510: the rank that arrived last at a collective, and the sync on it that made it late."""
    min_wait = parse_duration(option("OFF510", "min_wait"), "OFF510 min_wait")
    min_share = float(option("OFF510", "min_share"))
    per_rank: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.kind == "collective" and ranks[i] >= 0:
            per_rank[ranks[i]].append(i)
    # torch.distributed's own calls where a rank has them (CUPTI adds NCCL's kernels of the same collectives)
    for rank, found in per_rank.items():
        calls = [i for i in found if not (records[i].kernel or "").startswith("nccl")]
        per_rank[rank] = calls or found
    if len(per_rank) < 2:
        return []
    # syncs claimed by a rank's own finding (OFF506, OFF507) stay in: a stall explains them better, and
    # `job_findings` drops the rank's finding that it supersedes
    syncs: dict[int, list[int]] = defaultdict(list)
    for i, r in enumerate(records):
        if r.kind == "sync" and ranks[i] >= 0:
            syncs[ranks[i]].append(i)
    groups: dict[tuple[int, Site | None], _Group] = {}
    previous_end = {rank: 0 for rank in per_rank}
    for k in range(min(len(v) for v in per_rank.values())):
        meeting = {rank: records[found[k]] for rank, found in per_rank.items()}
        if len({r.kernel for r in meeting.values()}) > 1:
            break  # the ranks no longer call the same collectives: nothing further lines up
        late = max(meeting, key=lambda rank: (meeting[rank].start_ns, rank))
        arrival = meeting[late].start_ns
        waits = {rank: min(arrival - r.start_ns, r.duration_ns) for rank, r in meeting.items() if rank != late}
        longest = max(waits.values())
        since = previous_end[late]
        previous_end.update({rank: r.end_ns for rank, r in meeting.items()})
        if longest < min_wait:
            continue
        window = [i for i in syncs[late] if since <= records[i].start_ns and records[i].end_ns <= arrival]
        if not window:
            continue
        cause = max(window, key=lambda i: records[i].duration_ns)
        sync = records[cause]
        if sync.duration_ns < min_share * longest:
            continue
        g = groups.setdefault((late, sync.site), _Group(sync.site, {late}, []))
        g.records.append(cause)
        g.lost += sum(waits.values())
        g.saving += min(sync.duration_ns, longest)
        at = meeting[late]
        g.fields = {"rank": late, "op": at.kernel or "collective", "line": at.site.line if at.site else 0,
                    "others": ", ".join(str(r) for r in sorted(waits))}
    min_count = int(option("OFF510", "min_count"))
    return [g for g in groups.values() if len(g.records) >= min_count]


def _finish(code: str, rule: Rule, groups: list[_Group], job: Job, link: Link | None) -> list[Finding]:
    out = []
    wall = job.run.meta.wall_ns
    for g in groups:
        count = len(g.records) // 2 if code == "OFF508" else len(g.records)
        saving = g.saving if code == "OFF510" else _rank_saving(job, g.records)
        values = dict(g.fields or {})
        values.update(count=count, bytes=fmt_bytes(g.nbytes), lost=lost_text(g.lost, None, None),
                      static=", ".join(rule.related) or "no static rule", wait=fmt_ns(g.lost))
        out.append(Finding(
            code=rule.id, name=rule.name, severity=rule.severity, message=rule.format(**values), site=g.site,
            count=count, nbytes=g.nbytes, lost_ns=g.lost, modelled_lost_ns=None, link=None, related=rule.related,
            records=tuple(sorted(g.records)), expected_saving_ns=saving, fix=JOB_FIXES[code], wall_ns=wall,
            ranks=tuple(sorted(g.ranks)),
        ))
    return out


def _rank_saving(job: Job, blamed: list[int]) -> int:
    """What the job saves when the blamed records of each rank no longer happen: the most any one rank saves."""
    import numpy as np

    of_records = job.rank_of_records()
    best = 0
    for rank in sorted({int(of_records[i]) for i in blamed}):
        indices = np.flatnonzero(of_records == rank)
        position = {int(j): n for n, j in enumerate(indices)}
        mine = [position[i] for i in blamed if i in position]
        timeline = Timeline.of(job.rank_run(rank))
        best = max(best, replayed_wall(timeline) - replayed_wall(timeline, hoist(mine, JOB_FIXES["OFF508"])))
    return max(best, 0)


#: the fix each job rule's message advises, in a few words
JOB_FIXES: dict[str, str] = {"OFF508": "send device tensors", "OFF510": "read after the collective"}


def is_job_rule(code: str) -> bool:
    return code in JOB_RULES


__all__ = ["JOB_FIXES", "JOB_RULES", "detect_job", "is_job_rule", "logging_collective"]
