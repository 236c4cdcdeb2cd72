"""The suite's two outputs: the table people read and the JSON the plot script and docs read.

Both are pure functions of a `SuiteResult`. The table has one row per
kernel: the four times (median rep-loop time, as RAJAPerf times it), the
ratios the project is about (batched/baseline: the price of
ownership-derived transfers against hand-written code; batched/baseline-
graph: the same against hand-written code whose rep loop is one captured
graph, the strongest CuPy baseline; naive/batched: the price of copying on
every launch), the batched variant's achieved
bandwidth against the measured peak, its checksum, and whether every
variant's checksum agrees with the reference within the kernel's
tolerance. A variant that cannot run on the backend (baseline-graph
without a GPU) shows "n/a" and a footnote with the reason; one that was
not asked for shows "-". The JSON keeps everything, including each pass,
the exact long-double checksums and the copies each variant made; it only
ever gains keys (`not_applicable`, the baseline-graph variant and ratio),
so readers of older files keep working.
"""

from __future__ import annotations

import math
from typing import Any

from .checksum import exact_text
from .runner import KernelResult, SuiteResult, VariantResult
from .variants import VARIANTS

SCHEMA = 1
REFERENCE = "LLNL/RAJAPerf develop (2025): problem sizes, reps, data initialisation, checksum and tolerances"


#: Each ratio the report gives: (JSON key, numerator, denominator, table heading).
RATIOS = (
    ("batched/baseline", "batched", "baseline", "bat/base"),
    ("batched/baseline-graph", "batched", "baseline-graph", "bat/base-graph"),
    ("naive/batched", "naive", "batched", "naive/bat"),
)
NOT_APPLICABLE = "n/a"


def _ms(v: VariantResult | None, missing: str = "-") -> str:
    return missing if v is None else f"{v.time_s * 1e3:.3f}"


def _x(r: float | None, missing: str = "-") -> str:
    return missing if r is None else f"{r:.2f}"


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v > 0]
    if not values:
        return None
    return math.exp(sum(math.log(v) for v in values) / len(values))


def table(result: SuiteResult) -> str:
    env = result.environment
    peak = env.peak_bytes_per_s
    header = ("kernel", "size", "reps", *(f"{v} ms" for v in VARIANTS), *(r[3] for r in RATIOS),
              "GB/s", "%peak", "checksum", "agree")
    skipped = result.not_applicable
    rows = []
    for k in result.kernels:
        shown = k.variants.get("batched") or next(iter(k.variants.values()))
        bw = k.bandwidth(shown.variant)
        rows.append((
            k.name, str(k.size), str(k.reps),
            *(_ms(k.variants.get(v), NOT_APPLICABLE if v in skipped else "-") for v in VARIANTS),
            *(_x(k.ratio(num, den), NOT_APPLICABLE if {num, den} & set(skipped) else "-")
              for _, num, den, _ in RATIOS),
            "-" if bw is None else f"{bw / 1e9:.1f}", "-" if bw is None else f"{100 * bw / peak:.0f}",
            f"{float(shown.checksum):.12e}",
            "yes" if k.checksums_agree else f"NO ({max(k.differences.values()):.1e})",
        ))
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    left = {0, len(header) - 2, len(header) - 1}

    def line(cells: tuple[str, ...]) -> str:
        return "  ".join(c.ljust(w) if i in left else c.rjust(w) for i, (c, w) in enumerate(zip(cells, widths)))

    out = [line(header), line(tuple("-" * w for w in widths))]
    out += [line(r) for r in rows]
    out.append("")
    out.append(f"backend {env.backend}: {env.device}; peak (measured copy) {peak / 1e9:.1f} GB/s; "
               f"size factor {result.size_factor:g}; median of {result.passes} pass(es)"
               f"{'; batched rep loop replayed as captured graphs' if result.graphs else ''}")
    summary = summarise(result)
    parts = []
    if summary["geomean_batched_over_baseline"] is not None:
        parts.append(f"batched/baseline geomean {summary['geomean_batched_over_baseline']:.3f}")
    if summary["geomean_batched_over_baseline_graph"] is not None:
        parts.append(f"batched/baseline-graph geomean {summary['geomean_batched_over_baseline_graph']:.3f}")
    if summary["geomean_naive_over_batched"] is not None:
        worst = summary["max_naive_over_batched"]
        parts.append(f"naive/batched geomean {summary['geomean_naive_over_batched']:.1f}, "
                     f"max {worst['ratio']:.1f} ({worst['kernel']})")
    if parts:
        out.append("; ".join(parts))
    for variant, reason in skipped.items():
        out.append(f"{variant}: {reason}")
    shown_variant = "batched" if all("batched" in k.variants for k in result.kernels) else "first variant run"
    out.append(f"times: the rep loop, as RAJAPerf times it; GB/s, %peak and checksum: {shown_variant}; "
               "agree: every variant's checksum within the kernel's tolerance of the reference")
    return "\n".join(out)


def summarise(result: SuiteResult) -> dict[str, Any]:
    bat_base = [r for k in result.kernels if (r := k.ratio("batched", "baseline")) is not None]
    bat_graph = [r for k in result.kernels if (r := k.ratio("batched", "baseline-graph")) is not None]
    naive_bat = [(r, k.name) for k in result.kernels if (r := k.ratio("naive", "batched")) is not None]
    worst = max(naive_bat, default=None)
    return {
        "geomean_batched_over_baseline": geomean(bat_base),
        "geomean_batched_over_baseline_graph": geomean(bat_graph),
        "geomean_naive_over_batched": geomean([r for r, _ in naive_bat]),
        "max_naive_over_batched": None if worst is None else {"kernel": worst[1], "ratio": worst[0]},
        "all_checksums_agree": all(k.checksums_agree for k in result.kernels),
    }


def _variant_json(k: KernelResult, v: VariantResult, peak: float) -> dict[str, Any]:
    bw = k.bandwidth(v.variant)
    t = v.transfers
    return {
        "time_s": v.time_s,
        "times_s": list(v.times_s),
        "time_per_rep_s": v.time_s / k.reps,
        "total_s": v.total_s,
        "bandwidth_gbs": None if bw is None else bw / 1e9,
        "peak_fraction": None if bw is None else bw / peak,
        "checksum": float(v.checksum),
        "checksum_exact": exact_text(v.checksum),
        "rel_diff": k.differences.get(v.variant, 0.0),
        "transfers": {"h2d": t.h2d, "h2d_bytes": t.h2d_bytes, "d2h": t.d2h, "d2h_bytes": t.d2h_bytes,
                      "launches": t.launches},
    }


def to_json(result: SuiteResult, command: str) -> dict[str, Any]:
    env = result.environment
    kernels = []
    for k in result.kernels:
        kernels.append({
            "kernel": k.name,
            "group": k.group,
            "size": k.size,
            "dims": k.dims,
            "reps": k.reps,
            "bytes_per_rep": k.bytes_per_rep,
            "tolerance": {"class": k.tolerance, "value": k.tolerance_value},
            "reference_variant": k.reference,
            "variants": {name: _variant_json(k, k.variants[name], env.peak_bytes_per_s)
                         for name in VARIANTS if name in k.variants},
            "ratios": {key: k.ratio(num, den) for key, num, den, _ in RATIOS},
            "checksums_agree": k.checksums_agree,
        })
    return {
        "schema": SCHEMA,
        "date": env.date,
        "command": command,
        "backend": env.backend,
        "device": env.device,
        "versions": env.versions,
        "peak_bandwidth_gbs": env.peak_bytes_per_s / 1e9,
        "size_factor": result.size_factor,
        "reps": result.reps,
        "passes": result.passes,
        "graphs": result.graphs,
        "not_applicable": dict(result.not_applicable),
        "reference": REFERENCE,
        "summary": summarise(result),
        "kernels": kernels,
    }
