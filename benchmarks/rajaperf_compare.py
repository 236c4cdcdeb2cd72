"""Put offload-bench's times beside RAJAPerf's own CUDA build: one table, ratios, checksum agreement.

Run: python benchmarks/rajaperf_compare.py RESULTS.json RAJAPERF_DIR
         [--combiner Average|Minimum] [--prefix RAJAPerf] [--rajaperf-passes N] [--unscaled]
         [--variants Base_CUDA [RAJA_CUDA]]

RESULTS.json is `offload-bench --json` output from the GPU run; RAJAPERF_DIR
is the folder RAJAPerf wrote its reports into (`raja-perf.exe --outdir`):

* `<prefix>-timing-<combiner>.csv`: one row per kernel, one column per
  variant and tuning, seconds for the whole rep loop (RAJAPerf's
  startTimer/stopTimer, device synchronised at both ends), combined over
  passes by the mean (`Average`) or the minimum (`Minimum`);
* `<prefix>-checksum.txt`: each variant's checksum, summed over the passes
  (KernelBase::execute adds one checksum per pass), printed with 20
  significant digits;
* `<prefix>-kernels.csv`: problem size, reps and iterations per rep, used to
  check that both programs did the same work;
* `rajaperf-stdout.txt` (what raja-perf.exe printed, saved by the run
  script): the number of passes, unless --rajaperf-passes says it.

Per kernel the table gives offload batched, the hand-written CuPy baseline
and baseline-graph, and RAJAPerf Base_CUDA (its fastest tuning, named) and
RAJA_CUDA, the ratios batched/Base_CUDA and baseline-graph/Base_CUDA, the
geometric means of those and of baseline/Base_CUDA, and whether RAJAPerf's
checksums agree with ours.

Our times are combined over our passes the same way (mean or minimum of
the JSON's `times_s`), so both sides are read alike. `--variants` names
other RAJAPerf variants to set beside ours (the first one is the ratios'
denominator): `Base_Seq RAJA_Seq` checks a CPU build against a NumPy run.

Two fairer summaries follow the plain geomeans, because one tuning can
dominate them: in RAJAPerf 2024-10, Base_CUDA's reductions (DOT,
PI_REDUCE) exist only as block-atomic tunings into a result in managed
memory (RAJAPerf's default reduction data space), which on the H200 ran
tens of times slower than RAJA_CUDA's block-and-device tunings
(docs/benchmarks.md). The script prints the geomeans without the
reductions (`REDUCTIONS`), and, per kernel against the fastest RAJAPerf
time of any listed variant and tuning, the column bat/fastest and its
geomeans.

Checksums: RAJAPerf develop at 2024-10 (the tree this was written against)
multiplies some checksums by a scale factor, `c * default size / actual
size` (`CHECKSUM_SCALE`); the script divides it out, and the per-pass sum
by the number of passes, then compares with our reference variant's exact
checksum at the kernel's tolerance, but no tighter than `CROSS_FLOOR` (the
20 printed digits and the division by the passes round at about 1e-19).
`--unscaled` is for a RAJAPerf whose checksums carry no scale (later
develop). FIR_ALG is this project's rewrite and has no RAJAPerf row.

Exit codes: 0 every compared checksum agrees; 1 one does not; 2 bad input
(a missing or malformed file), in one line.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, NoReturn

import numpy as np

PROG = "rajaperf_compare.py"
COMBINERS = ("Average", "Minimum")
#: RAJAPerf's variants set beside ours by default; the first is the ratios' denominator.
VARIANTS = ("Base_CUDA", "RAJA_CUDA")
#: RAJAPerf develop 2024-10 (9af20b3): checksum_scale_factor = c * default / actual size, by kernel.
CHECKSUM_SCALE = {"TRIAD": 1e-3, "FIR": 1e-4, "JACOBI_1D": 1e-4, "JACOBI_2D": 1e-4, "HEAT_3D": 1e-4,
                  "GEMM": 1e-3, "2MM": 1e-6, "ATAX": 1e-3}
#: Time-stepped kernels: RAJAPerf 2024-10 runs several time steps per rep, the suite one.
TIME_STEPPED = ("JACOBI_1D", "JACOBI_2D", "HEAT_3D")
#: Relative agreement no comparison across the two programs can beat (printed digits, per-pass sum).
CROSS_FLOOR = 1e-18
#: RAJAPerf's default problem size, the same for every kernel the suite runs (ADD .. ATAX).
RAJAPERF_DEFAULT_SIZE = 1_000_000
#: The suite's reductions: RAJAPerf 2024-10's Base_CUDA has only block-atomic tunings for them,
#: so a second geomean leaves them out.
REDUCTIONS = ("DOT", "PI_REDUCE")
#: Our variants with geomean lines: the baseline's too, so that the part graph capture plays shows.
OURS_SUMMARISED = ("batched", "baseline-graph", "baseline")


class BadInput(ValueError):
    """Input the script cannot use; the message is the one line printed."""


@dataclass(frozen=True)
class RajaperfKernel:
    """One kernel as RAJAPerf reported it: work done, time and checksum per (variant, tuning)."""

    name: str
    size: int | None = None
    reps: int | None = None
    its_per_rep: int | None = None
    times: dict[tuple[str, str], float] = field(default_factory=dict)
    checksums: dict[tuple[str, str], np.longdouble] = field(default_factory=dict)

    def best(self, variant: str) -> tuple[str, float] | None:
        """(tuning, seconds) of the variant's fastest tuning, or None when it did not run."""
        runs = [(t, s) for (v, t), s in self.times.items() if v == variant]
        return min(runs, key=lambda r: r[1]) if runs else None

    def fastest(self, variants: tuple[str, ...]) -> tuple[str, float] | None:
        """('variant-tuning', seconds) of the fastest run of any of the variants, or None when none ran."""
        runs = [(f"{v}-{t}", s) for (v, t), s in self.times.items() if v in variants]
        return min(runs, key=lambda r: r[1]) if runs else None

    def time_steps(self) -> int | None:
        """Time steps RAJAPerf ran in all (reps x steps per rep; two sweeps of the interior per step)."""
        if self.reps is None or self.its_per_rep is None or not self.size:
            return None
        return self.reps * self.its_per_rep // (2 * self.size)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise BadInput(f"cannot read {str(path)!r}: {exc.strerror or exc}") from None


def _cells(text: str) -> list[list[str]]:
    return [[c.strip() for c in row] for row in csv.reader(text.splitlines()) if any(c.strip() for c in row)]


def read_timing(path: Path) -> dict[str, dict[tuple[str, str], float]]:
    """`<prefix>-timing-<combiner>.csv`: seconds by kernel and (variant, tuning); 'Not run' cells left out."""
    rows = _cells(_read(path))
    if len(rows) < 3 or rows[1][0] != "Kernel" or rows[2][0] != "Kernel":
        raise BadInput(f"{str(path)!r} is not a RAJAPerf timing report (no 'Kernel' variant and tuning lines)")
    columns = list(zip(rows[1][1:], rows[2][1:]))
    out: dict[str, dict[tuple[str, str], float]] = {}
    for row in rows[3:]:
        times = {}
        for column, cell in zip(columns, row[1:]):
            try:
                seconds = float(cell)
            except ValueError:
                continue  # "Not run"
            if seconds > 0:
                times[column] = seconds
        out[row[0]] = times
    return out


def read_checksums(path: Path) -> dict[str, dict[tuple[str, str], np.longdouble]]:
    """`<prefix>-checksum.txt`: each kernel's checksum by (variant, tuning), as printed (summed over passes)."""
    text = _read(path)
    if "Checksum Report" not in text:
        raise BadInput(f"{str(path)!r} is not a RAJAPerf checksum report")
    out: dict[str, dict[tuple[str, str], np.longdouble]] = {}
    lines = [line.strip() for line in text.splitlines()]
    start = next((i for i, line in enumerate(lines) if line.startswith("----")), len(lines))
    kernel = None
    for line in lines[start + 1:]:
        if not line or line.startswith(("....", "----", "====")):
            continue
        parts = line.split()
        if len(parts) == 1:
            kernel = parts[0]
            out[kernel] = {}
        elif kernel is not None and "-" in parts[0] and len(parts) >= 2:
            variant, tuning = parts[0].split("-", 1)
            try:
                out[kernel][(variant, tuning)] = np.longdouble(parts[1])
            except ValueError:
                continue  # "Not Run"
    return out


def read_kernel_info(path: Path) -> dict[str, tuple[int, int, int]]:
    """`<prefix>-kernels.csv`: (problem size, reps, iterations per rep) by kernel."""
    rows = [r for r in _cells(_read(path)) if len(r) > 1]
    if not rows or rows[0][:4] != ["Kernels", "Problem size", "Reps", "Iterations/rep"]:
        raise BadInput(f"{str(path)!r} is not a RAJAPerf kernel summary")
    try:
        return {r[0]: (int(r[1]), int(r[2]), int(r[3])) for r in rows[1:]}
    except (ValueError, IndexError):
        raise BadInput(f"{str(path)!r}: a kernel row is not numbers") from None


def passes_from_log(path: Path) -> int | None:
    """The '# passes = N' RAJAPerf prints in its run summary, or None."""
    if not path.is_file():
        return None
    found = re.search(r"#\s*passes\s*=\s*(\d+)", _read(path))
    return int(found.group(1)) if found else None


def load_rajaperf(folder: Path, prefix: str, combiner: str) -> dict[str, RajaperfKernel]:
    if not folder.is_dir():
        raise BadInput(f"{str(folder)!r} is not a folder of RAJAPerf reports")
    times = read_timing(folder / f"{prefix}-timing-{combiner}.csv")
    checksums = read_checksums(folder / f"{prefix}-checksum.txt")
    info = read_kernel_info(folder / f"{prefix}-kernels.csv")
    out = {}
    for name in dict.fromkeys([*times, *checksums]):
        size, reps, its = info.get(name, (None, None, None))
        out[name] = RajaperfKernel(name, size, reps, its, times.get(name, {}), checksums.get(name, {}))
    return out


def load_ours(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(_read(path))
    except json.JSONDecodeError as exc:
        raise BadInput(f"{str(path)!r} is not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(data, dict) or not isinstance(data.get("kernels"), list) or not data["kernels"]:
        raise BadInput(f"{str(path)!r} has no 'kernels' list; write it with offload-bench --json")
    for k in data["kernels"]:
        if not (isinstance(k, dict) and isinstance(k.get("variants"), dict) and k.get("reference_variant")):
            raise BadInput(f"{str(path)!r}: a kernel lacks 'variants' or 'reference_variant'")
    return data


def combine(times: list[float], combiner: str) -> float:
    return min(times) if combiner == "Minimum" else sum(times) / len(times)


def checksum_scale(kernel: str, size: int, default_size: int) -> np.longdouble:
    """RAJAPerf 2024-10's scale for this kernel: (double) (c * (long double) default / actual)."""
    c = CHECKSUM_SCALE.get(kernel)
    if c is None:
        return np.longdouble(1.0)
    return np.longdouble(np.float64(np.longdouble(c) * (np.longdouble(default_size) / np.longdouble(size))))


@dataclass(frozen=True)
class Row:
    kernel: str
    ours: dict[str, float | None]
    base: tuple[str, float] | None
    raja: tuple[str, float] | None
    fastest: tuple[str, float] | None  # over every listed variant and tuning
    diff: float | None
    tolerance: float
    work: str  # "" when both did the same work, else what differs

    @property
    def agrees(self) -> bool | None:
        return None if self.diff is None else self.diff <= self.tolerance

    def ratio(self, variant: str, against_fastest: bool = False) -> float | None:
        """Our variant's time over the first RAJAPerf variant's (or the fastest run's); None if not comparable."""
        t = self.ours.get(variant)
        theirs = self.fastest if against_fastest else self.base
        if t is None or theirs is None or self.work:
            return None
        return t / theirs[1]


def build_rows(ours: dict[str, Any], rp: dict[str, RajaperfKernel], combiner: str, passes: int,
               scaled: bool, variants: tuple[str, ...] = VARIANTS) -> list[Row]:
    rows = []
    for k in ours["kernels"]:
        name = k["kernel"]
        times = {v: combine(d["times_s"], combiner) for v, d in k["variants"].items() if d.get("times_s")}
        theirs = rp.get(f"{k.get('group', '')}_{name}")
        tolerance = max(float(k.get("tolerance", {}).get("value", 0.0)), CROSS_FLOOR)
        if theirs is None:
            rows.append(Row(name, times, None, None, None, None, tolerance, ""))
            continue
        work = ""
        steps = theirs.time_steps() if name in TIME_STEPPED else theirs.reps
        if theirs.size is not None and theirs.size != k["size"]:
            work = f"size {theirs.size} vs {k['size']}"
        elif steps is not None and steps != k["reps"]:
            work = f"reps {steps} vs {k['reps']}"
        reference = np.longdouble(k["variants"][k["reference_variant"]]["checksum_exact"])
        scale = checksum_scale(name, k["size"], RAJAPERF_DEFAULT_SIZE) if scaled else np.longdouble(1.0)
        diffs = []
        for (variant, _), value in theirs.checksums.items():
            if variant in variants:
                mine = value / np.longdouble(passes) / scale
                diffs.append(float(abs(mine - reference) / abs(reference)) if reference != 0 else float(abs(mine)))
        second = theirs.best(variants[1]) if len(variants) > 1 else None
        rows.append(Row(name, times, theirs.best(variants[0]), second, theirs.fastest(variants),
                        max(diffs) if diffs else None, tolerance, work))
    return rows


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v > 0]
    return math.exp(sum(math.log(v) for v in values) / len(values)) if values else None


def _ms(t: float | None) -> str:
    return "-" if t is None else f"{t * 1e3:.3f}"


def _ratio(x: float | None) -> str:
    return "-" if x is None else f"{x:.2f}"


def summary(rows: list[Row], variants: tuple[str, ...]) -> list[str]:
    """The geomean lines: against the first variant, without the reductions, against the fastest run."""
    first = variants[0]
    out = []

    def line(label: str, variant: str, keep: Callable[[Row], bool], against_fastest: bool = False,
             note: str = "") -> None:
        ratios = [x for r in rows if keep(r) and (x := r.ratio(variant, against_fastest)) is not None]
        g = geomean(ratios)
        if g is not None:
            out.append(f"{label} geomean {g:.3f} over {len(ratios)} kernels{note}")

    for variant in OURS_SUMMARISED:
        line(f"{variant}/{first}", variant, lambda r: True)
    if any(r.kernel in REDUCTIONS and r.ratio("batched") is not None for r in rows):
        for variant in OURS_SUMMARISED:
            line(f"{variant}/{first} without the reductions ({', '.join(REDUCTIONS)})", variant,
                 lambda r: r.kernel not in REDUCTIONS)
    if len(variants) > 1:
        for variant in OURS_SUMMARISED:
            line(f"{variant}/fastest RAJAPerf", variant, lambda r: True, against_fastest=True,
                 note=f" (per kernel the fastest of {', '.join(variants)} and all their tunings)")
    return out


def table(rows: list[Row], ours: dict[str, Any], folder: Path, combiner: str, passes: int, scaled: bool,
          variants: tuple[str, ...] = VARIANTS) -> str:
    first = variants[0]
    several = len(variants) > 1
    header = ("kernel", "batched ms", "baseline ms", "baseline-graph ms", f"{first} ms", "tuning",
              *(f"{v} ms" for v in variants[1:]), f"bat/{first}", f"graph/{first}",
              *(["bat/fastest"] if several else []), "checksum diff", "agree")
    cells = []
    for r in rows:
        if r.agrees is None:
            agree = "-"
        else:
            agree = "yes" if r.agrees else "NO"
        cells.append((
            r.kernel, _ms(r.ours.get("batched")), _ms(r.ours.get("baseline")), _ms(r.ours.get("baseline-graph")),
            _ms(r.base[1] if r.base else None), r.base[0] if r.base else "-",
            *([_ms(r.raja[1] if r.raja else None)] if several else []),
            _ratio(r.ratio("batched")), _ratio(r.ratio("baseline-graph")),
            *([_ratio(r.ratio("batched", against_fastest=True))] if several else []),
            "-" if r.diff is None else f"{r.diff:.1e}", agree + (f" (work differs: {r.work})" if r.work else ""),
        ))
    widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(header)]
    left = {0, 5, len(header) - 1}

    def line(values: tuple[str, ...]) -> str:
        return "  ".join(v.ljust(w) if i in left else v.rjust(w) for i, (v, w) in enumerate(zip(values, widths)))

    out = [line(header), line(tuple("-" * w for w in widths)), *(line(c) for c in cells), ""]
    out.append(f"ours: {ours.get('device', '?')}, {ours.get('date', '?')}, `{ours.get('command', '?')}`")
    out.append(f"RAJAPerf: {folder}, {combiner.lower()} of {passes} pass(es); ours: the {combiner.lower()} "
               "of the JSON's passes; times are whole rep loops, device synchronised at both ends")
    out.extend(summary(rows, variants))
    scale = "RAJAPerf's checksum scale factors divided out" if scaled else "checksums taken unscaled"
    out.append(f"checksum diff: worst |RAJAPerf / {passes} passes - ours| / |ours| over {', '.join(variants)} and "
               f"their tunings ({scale}); agree: within the kernel's tolerance, floor {CROSS_FLOOR:g}")
    return "\n".join(out)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _positive_int(text: str) -> int:
    if not text.isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text!r}")
    return int(text)


def main(argv: list[str] | None = None) -> int:
    p = _Parser(prog=PROG, description="offload-bench --json beside RAJAPerf's CUDA reports.")
    p.add_argument("results", type=Path, help="JSON written by offload-bench --json on the GPU")
    p.add_argument("rajaperf", type=Path, help="folder of RAJAPerf's reports (raja-perf.exe --outdir)")
    p.add_argument("--combiner", choices=COMBINERS, default="Average",
                   help="which RAJAPerf timing report, and how to combine our passes (default: Average)")
    p.add_argument("--prefix", default="RAJAPerf", help="RAJAPerf's --outfile prefix (default: RAJAPerf)")
    p.add_argument("--rajaperf-passes", type=_positive_int, metavar="N",
                   help="passes RAJAPerf ran (default: read from rajaperf-stdout.txt in the folder)")
    p.add_argument("--variants", nargs="+", default=list(VARIANTS), metavar="VARIANT",
                   help="RAJAPerf variants to set beside ours, at most two, the first the ratios' denominator "
                   "(default: Base_CUDA RAJA_CUDA)")
    p.add_argument("--unscaled", action="store_true",
                   help="RAJAPerf's checksums carry no scale factor (develop after 2024-10)")
    args = p.parse_args(argv)
    if len(args.variants) > 2:
        p.error(f"--variants takes one or two RAJAPerf variants, got {len(args.variants)}")
    variants = tuple(args.variants)
    try:
        ours = load_ours(args.results)
        rp = load_rajaperf(args.rajaperf, args.prefix, args.combiner)
        passes = args.rajaperf_passes or passes_from_log(args.rajaperf / "rajaperf-stdout.txt")
        if not passes:
            raise BadInput("cannot tell how many passes RAJAPerf ran (its checksums are summed over them): "
                           "give --rajaperf-passes N or keep rajaperf-stdout.txt in the folder")
    except BadInput as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return 2
    rows = build_rows(ours, rp, args.combiner, passes, not args.unscaled, variants)
    print(table(rows, ours, args.rajaperf, args.combiner, passes, not args.unscaled, variants))
    bad = [r.kernel for r in rows if r.agrees is False]
    if bad:
        print(f"{PROG}: checksums disagree for {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
