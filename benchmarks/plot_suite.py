"""Plot the suite's ratios from `offload-bench --json` output: one PNG, two panels.

Run: python benchmarks/plot_suite.py RESULTS.json [-o suite_ratios.png]

Top panel: batched/baseline per kernel (linear scale), with the issue's
targets drawn in: 1.0 (parity with hand-written code), 1.05 (the
geometric-mean target) and 1.15 (the per-kernel limit), and the geometric
mean as a dashed line. Bottom panel: naive/batched per kernel on a log
scale, with the study's 400x worst case marked. Kernels a run did not time
in both variants of a ratio are left out of that panel. The title names
the device, the date and the command, so a figure always says where its
numbers came from.

Needs matplotlib (`pip install 'offload-guard[bench]'`); it renders with
the Agg backend, so no display is needed. Bad input (a missing or
malformed file, a JSON without kernels) fails with one line and exit 2.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path
from typing import Any

PROG = "plot_suite.py"
BATCHED_TARGETS = ((1.0, "parity", "-"), (1.05, "geomean target 1.05", "--"), (1.15, "per-kernel limit 1.15", ":"))
STUDY_WORST = 400.0


def _fail(message: str) -> int:
    print(f"{PROG}: error: {message}", file=sys.stderr)
    return 2


def load(path: Path) -> dict[str, Any]:
    """The results, or ValueError with one line saying what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ValueError(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{str(path)!r} is not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list) or not data["kernels"]:
        raise ValueError(f"{str(path)!r} has no 'kernels' list; write it with offload-bench --json")
    for k in data["kernels"]:
        if not (isinstance(k, dict) and isinstance(k.get("kernel"), str) and isinstance(k.get("variants"), dict)):
            raise ValueError(f"{str(path)!r}: every kernel needs 'kernel' and 'variants'")
    return data


def ratios(data: dict[str, Any], numerator: str, denominator: str) -> list[tuple[str, float]]:
    out = []
    for k in data["kernels"]:
        v = k["variants"]
        if numerator in v and denominator in v and v[denominator].get("time_s"):
            out.append((k["kernel"], float(v[numerator]["time_s"]) / float(v[denominator]["time_s"])))
    return out


def _geomean(values: list[float]) -> float:
    return math.exp(sum(math.log(x) for x in values) / len(values))


def plot(data: dict[str, Any], output: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    bat_base = ratios(data, "batched", "baseline")
    naive_bat = ratios(data, "naive", "batched")
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(11, 8.5), constrained_layout=True)
    device = data.get("device", "unknown device")
    fig.suptitle(f"offload-bench on {device}\n{data.get('date', '')}   {data.get('command', '')}", fontsize=10)

    if bat_base:
        names, values = zip(*bat_base)
        colours = ["tab:green" if v <= 1.05 else "tab:orange" if v <= 1.15 else "tab:red" for v in values]
        top.bar(names, values, color=colours)
        for level, label, style in BATCHED_TARGETS:
            top.axhline(level, color="grey", linewidth=0.9, linestyle=style, label=label)
        g = _geomean(list(values))
        top.axhline(g, color="tab:blue", linestyle="-.", linewidth=1.2, label=f"geomean of this run {g:.3f}")
        for i, v in enumerate(values):
            top.annotate(f"{v:.2f}", (i, v), ha="center", va="bottom", fontsize=7)
        top.set_ylim(0, max(1.3, max(values) * 1.15))
        top.legend(loc="upper left", fontsize=7, framealpha=0.9)
    top.set_ylabel("batched / baseline time")
    top.set_title("ownership-derived copies (batched) against hand-written code (baseline)", fontsize=9)

    if naive_bat:
        names, values = zip(*naive_bat)
        bottom.bar(names, values, color="tab:purple")
        bottom.set_yscale("log")
        bottom.axhline(STUDY_WORST, color="tab:red", linestyle=":", linewidth=1,
                       label=f"the study's worst case, {STUDY_WORST:.0f}x")
        bottom.legend(loc="upper left", fontsize=7, framealpha=0.9)
        for i, v in enumerate(values):
            bottom.annotate(f"{v:.0f}x" if v >= 10 else f"{v:.1f}x", (i, v), ha="center", va="bottom", fontsize=7)
        bottom.set_ylim(0.5, max(STUDY_WORST, max(values)) * 3)
    bottom.set_ylabel("naive / batched time (log)")
    bottom.set_title("copying on every launch (naive) against copying once (batched)", fontsize=9)
    for ax in (top, bottom):
        ax.tick_params(axis="x", labelrotation=45, labelsize=8)
    fig.savefig(output, dpi=120)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog=PROG, description="Plot offload-bench --json results as a PNG of ratios.")
    p.add_argument("results", type=Path, help="JSON written by offload-bench --json")
    p.add_argument("-o", "--output", type=Path, default=Path("suite_ratios.png"), help="PNG to write")
    args = p.parse_args(argv)
    try:
        data = load(args.results)
    except ValueError as exc:
        return _fail(str(exc))
    if not ratios(data, "batched", "baseline") and not ratios(data, "naive", "batched"):
        return _fail(f"{str(args.results)!r} has no kernel with two variants to compare")
    if not args.output.parent.is_dir():
        return _fail(f"cannot write {str(args.output)!r}: no such folder")
    try:
        plot(data, args.output)
    except ImportError:
        return _fail("needs matplotlib: pip install 'offload-guard[bench]'")
    print(f"wrote {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
