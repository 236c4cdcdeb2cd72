"""benchmarks/rajaperf_compare.py against sample reports written the way RAJAPerf's Executor writes them.

The samples follow RAJAPerf's output code (src/common/Executor.cpp at
develop 2024-10): the timing CSV (title line, a variant line and a tuning
line headed 'Kernel', ' , ' separators, seconds with six decimals, 'Not
run'), the fixed-width checksum report (20 significant digits, summed over
passes) and the kernel summary CSV. Their numbers are made from our own
JSON, so the expected agreement, ratios and geomeans are known exactly.
"""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "benchmarks" / "rajaperf_compare.py"
PASSES = 3

# ours: kernel -> (group, size, reps, tolerance, checksum, {variant: pass times})
OURS = {
    "ADD": ("Stream", 1_000_000, 1000, 1e-14, "340985.868450904342", {"baseline": [5e-3, 5.2e-3], "baseline-graph": [3.4e-3, 3.6e-3], "batched": [3.5e-3, 3.3e-3]}),
    "DOT": ("Stream", 1_000_000, 2000, 1e-10, "39999973.3798400018", {"baseline": [2e-2, 2e-2], "batched": [1.1e-2, 1.3e-2]}),
    "TRIAD": ("Stream", 1_000_000, 1000, 1e-14, "135919.849561700001", {"baseline": [5.4e-3, 5.4e-3], "batched": [3.4e-3, 3.6e-3]}),
    "JACOBI_2D": ("Polybench", 1_000_000, 2000, 1e-10, "442178.104679700002", {"baseline": [2.1e-2, 2.1e-2], "batched": [1.7e-2, 1.8e-2]}),
    "FIR_ALG": ("Apps", 1_000_000, 160, 1e-10, "-273.043720960100002", {"baseline": [1.1e-3, 1.2e-3], "batched": [1e-3, 1e-3]}),
}
# RAJAPerf: kernel -> {(variant, tuning): seconds}; its reps and iterations per rep
TIMES = {
    "Stream_ADD": {("Base_CUDA", "block_256"): 4.0e-3, ("RAJA_CUDA", "block_256"): 4.2e-3},
    "Stream_DOT": {("Base_CUDA", "blkatm_direct_256"): 2.6e-2, ("Base_CUDA", "blkatm_occgs_256"): 2.4e-2,
                   ("RAJA_CUDA", "block_256"): 2.5e-2},
    "Stream_TRIAD": {("Base_CUDA", "block_256"): 4.0e-3, ("RAJA_CUDA", "block_256"): 4.1e-3},
    "Polybench_JACOBI_2D": {("Base_CUDA", "block_256"): 1.75e-2, ("RAJA_CUDA", "block_256"): 1.8e-2},
}
WORK = {"Stream_ADD": (1000, 1_000_000), "Stream_DOT": (2000, 1_000_000), "Stream_TRIAD": (1000, 1_000_000),
        "Polybench_JACOBI_2D": (50, 40 * 2 * 1_000_000)}  # 50 reps of 40 time steps, as in RAJAPerf 2024-10
SCALE = {"Stream_TRIAD": 1e-3, "Polybench_JACOBI_2D": 1e-4}


def our_json(path: Path) -> Path:
    kernels = []
    for name, (group, size, reps, tol, checksum, times) in OURS.items():
        kernels.append({
            "kernel": name, "group": group, "size": size, "reps": reps,
            "tolerance": {"class": "x", "value": tol}, "reference_variant": "baseline",
            "variants": {v: {"time_s": sorted(t)[len(t) // 2], "times_s": t, "checksum": float(checksum),
                             "checksum_exact": checksum} for v, t in times.items()},
        })
    path.write_text(json.dumps({"date": "2026-12-04", "device": "NVIDIA H200", "command": "offload-bench --json r.json",
                                "kernels": kernels}))
    return path


def _columns() -> list[tuple[str, str]]:
    return sorted({c for t in TIMES.values() for c in t})


def timing_csv(combine: Any, title: str) -> str:
    cols = _columns()
    lines = [title + " , " * len(cols)]
    lines.append("Kernel               " + "".join(f" , {v:<20}" for v, _ in cols))
    lines.append("Kernel               " + "".join(f" , {t:<20}" for _, t in cols))
    for kernel, times in TIMES.items():
        cells = "".join(f" , {('%.6f' % combine(times[c])) if c in times else 'Not run':>20}" for c in cols)
        lines.append(f"{kernel:<21}{cells}")
    return "\n".join(lines) + "\n"


def checksum_txt(checksums: dict[str, np.longdouble]) -> str:
    eq, dots = "=" * 99, "." * 56
    out = [eq, "Checksum Report ", eq, "Kernel  ".ljust(36), dots,
           "Variants".ljust(36) + "Checksum  ".ljust(28) + "Checksum Diff  ".ljust(28),
           " " * 36 + " " * 28 + "(vs. first variant listed)  ", "-" * 88]
    for kernel, value in checksums.items():
        out += [kernel.ljust(36), dots]
        for i, (variant, tuning) in enumerate(_columns()):
            name = f"{variant}-{tuning}".ljust(36)
            if (variant, tuning) not in TIMES[kernel]:
                out.append(name + "Not Run".ljust(28) + "Not Run".ljust(28))
                continue
            # the two printed forms of %#.20Lg: positional for this magnitude, scientific below
            text = (np.format_float_positional(value, precision=20, unique=False, fractional=False) if i % 2
                    else np.format_float_scientific(value, precision=19, unique=False))
            out.append(name + text.ljust(28) + "0.0000000000000000000".ljust(28))
        out += ["", "-" * 55]
    return "\n".join(out) + "\n"


def kernels_csv(sizes: dict[str, int]) -> str:
    lines = ["Kernels run without MPI",
             "Kernels                , Problem size , Reps , Iterations/rep , Kernels/rep , Bytes/rep , FLOPS/rep"]
    for kernel, (reps, its) in WORK.items():
        lines.append(f"{kernel:<23} , {sizes.get(kernel, 1_000_000):>12} , {reps:>4} , {its:>14} , 1 , 0 , 0")
    return "\n".join(lines) + "\n"


def rajaperf_dir(folder: Path, perturb: dict[str, float] | None = None, sizes: dict[str, int] | None = None,
                 log: bool = True) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "RAJAPerf-timing-Average.csv").write_text(timing_csv(lambda t: t, "Mean Runtime Report (sec.) "))
    (folder / "RAJAPerf-timing-Minimum.csv").write_text(timing_csv(lambda t: t * 0.9, "Min Runtime Report (sec.) "))
    checksums = {}
    for kernel in TIMES:
        name = kernel.split("_", 1)[1]
        ours = np.longdouble(OURS[name][4])
        scale = np.longdouble(np.float64(SCALE.get(kernel, 1.0)))
        checksums[kernel] = ours * (1 + np.longdouble((perturb or {}).get(name, 0.0))) * scale * PASSES
    (folder / "RAJAPerf-checksum.txt").write_text(checksum_txt(checksums))
    (folder / "RAJAPerf-kernels.csv").write_text(kernels_csv(sizes or {}))
    if log:
        (folder / "rajaperf-stdout.txt").write_text("How suite will be run:\n\t # passes = 3\n\t Kernel rep factor = 1\n")
    return folder


def compare(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def _rows(stdout: str) -> dict[str, list[str]]:
    return {line.split()[0]: line.split() for line in stdout.splitlines()[2:] if line and line.split()[0] in OURS}


def test_agreeing_reports_give_times_ratios_and_geomeans(tmp_path: Path) -> None:
    proc = compare(str(our_json(tmp_path / "r.json")), str(rajaperf_dir(tmp_path / "rp")))
    assert proc.returncode == 0, proc.stderr
    rows = _rows(proc.stdout)
    assert list(rows) == list(OURS)
    # kernel, batched, baseline, baseline-graph, Base_CUDA, tuning, RAJA_CUDA, bat/Base, graph/Base, bat/fastest,
    # diff, agree
    graph = (3.4e-3 + 3.6e-3) / 2 / 4.0e-3
    assert rows["ADD"][1:9] == ["3.400", "5.100", "3.500", "4.000", "block_256", "4.200", "0.85", f"{graph:.2f}"]
    assert rows["DOT"][4:7] == ["24.000", "blkatm_occgs_256", "25.000"]  # the fastest Base_CUDA tuning
    assert rows["DOT"][8] == "-"  # no baseline-graph in ours
    assert rows["TRIAD"][-1] == "yes" and rows["JACOBI_2D"][-1] == "yes"  # scale divided out, 50 x 40 = 2000 steps
    assert rows["ADD"][9] == "0.85"  # Base_CUDA is the fastest run here
    assert rows["FIR_ALG"][4:] == ["-"] * 8  # no RAJAPerf kernel of that name
    bat = [3.4 / 4.0, 12 / 24, 3.5 / 4.0, 17.5 / 17.5]
    expected = math.exp(sum(map(math.log, bat)) / 4)
    assert f"batched/Base_CUDA geomean {expected:.3f} over 4 kernels" in proc.stdout
    assert f"baseline-graph/Base_CUDA geomean {graph:.3f} over 1 kernels" in proc.stdout
    base = [5.1 / 4.0, 20 / 24, 5.4 / 4.0, 21 / 17.5]
    assert f"baseline/Base_CUDA geomean {math.exp(sum(map(math.log, base)) / 4):.3f} over 4 kernels" in proc.stdout
    assert "average of 3 pass(es)" in proc.stdout and "NVIDIA H200" in proc.stdout


def test_slow_base_reductions_get_a_fair_summary_without_them_and_against_the_fastest_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # as on the H200: Base_CUDA's DOT only block-atomic and slow, RAJA_CUDA faster on DOT and JACOBI_2D
    monkeypatch.setitem(TIMES, "Stream_DOT", {
        ("Base_CUDA", "blkatm_direct_256"): 2.0, ("Base_CUDA", "blkatm_occgs_256"): 2.1,
        ("RAJA_CUDA", "blkatm_direct_256"): 2.2, ("RAJA_CUDA", "blkdev_occgs_256"): 2.2e-2})
    monkeypatch.setitem(TIMES, "Polybench_JACOBI_2D", {("Base_CUDA", "block_256"): 1.75e-2,
                                                       ("RAJA_CUDA", "block_256"): 1.4e-2})
    proc = compare(str(our_json(tmp_path / "r.json")), str(rajaperf_dir(tmp_path / "rp")))
    assert proc.returncode == 0, proc.stderr
    rows = _rows(proc.stdout)
    assert rows["DOT"][4:10] == ["2000.000", "blkatm_direct_256", "22.000", f"{12 / 2000:.2f}", "-", f"{12 / 22:.2f}"]
    assert rows["JACOBI_2D"][7] == "1.00" and rows["JACOBI_2D"][9] == f"{17.5 / 14:.2f}"

    def line(label: str, ratios: list[float], note: str = "") -> str:
        g = math.exp(sum(map(math.log, ratios)) / len(ratios))
        return f"{label} geomean {g:.3f} over {len(ratios)} kernels{note}"

    add, triad, graph = 3.4 / 4.0, 3.5 / 4.0, 3.5 / 4.0
    lines = proc.stdout.splitlines()
    assert line("batched/Base_CUDA", [add, 12 / 2000, triad, 1.0]) in lines
    assert line("batched/Base_CUDA without the reductions (DOT, PI_REDUCE)", [add, triad, 1.0]) in lines
    assert line("baseline-graph/Base_CUDA without the reductions (DOT, PI_REDUCE)", [graph]) in lines
    note = " (per kernel the fastest of Base_CUDA, RAJA_CUDA and all their tunings)"
    assert line("batched/fastest RAJAPerf", [add, 12 / 22, triad, 17.5 / 14], note) in lines
    assert line("baseline-graph/fastest RAJAPerf", [graph], note) in lines
    assert line("baseline/fastest RAJAPerf", [5.1 / 4.0, 20 / 22, 5.4 / 4.0, 21 / 14], note) in lines


def test_minimum_reads_the_minimum_report_and_our_fastest_pass(tmp_path: Path) -> None:
    proc = compare(str(our_json(tmp_path / "r.json")), str(rajaperf_dir(tmp_path / "rp")), "--combiner", "Minimum")
    assert proc.returncode == 0, proc.stderr
    add = _rows(proc.stdout)["ADD"]
    assert add[1:5] == ["3.300", "5.000", "3.400", "3.600"]
    assert add[7] == f"{3.3 / 3.6:.2f}"


def test_a_checksum_outside_the_tolerance_is_reported_and_exits_1(tmp_path: Path) -> None:
    folder = rajaperf_dir(tmp_path / "rp", perturb={"ADD": 3e-13, "DOT": 3e-13})
    proc = compare(str(our_json(tmp_path / "r.json")), str(folder))
    assert proc.returncode == 1
    rows = _rows(proc.stdout)
    assert rows["ADD"][-1] == "NO" and rows["ADD"][-2].startswith("3.0e-13")  # tight: 1e-14
    assert rows["DOT"][-1] == "yes"  # normal: 1e-10
    assert proc.stderr.strip() == "rajaperf_compare.py: checksums disagree for ADD"


def test_the_scale_factor_matters(tmp_path: Path) -> None:
    proc = compare(str(our_json(tmp_path / "r.json")), str(rajaperf_dir(tmp_path / "rp")), "--unscaled")
    assert proc.returncode == 1
    rows = _rows(proc.stdout)
    assert rows["TRIAD"][-1] == "NO" and rows["JACOBI_2D"][-1] == "NO" and rows["ADD"][-1] == "yes"
    assert "checksums taken unscaled" in proc.stdout


def test_different_work_is_flagged_and_left_out_of_the_geomean(tmp_path: Path) -> None:
    folder = rajaperf_dir(tmp_path / "rp", sizes={"Stream_ADD": 500_000})
    proc = compare(str(our_json(tmp_path / "r.json")), str(folder))
    line = next(line for line in proc.stdout.splitlines() if line.startswith("ADD"))
    assert "work differs: size 500000 vs 1000000" in line
    assert line.split()[7:9] == ["-", "-"]
    assert "over 3 kernels" in proc.stdout


def test_passes_come_from_the_option_when_there_is_no_log(tmp_path: Path) -> None:
    folder = rajaperf_dir(tmp_path / "rp", log=False)
    results = str(our_json(tmp_path / "r.json"))
    proc = compare(results, str(folder))
    assert proc.returncode == 2 and "give --rajaperf-passes N" in proc.stderr
    assert compare(results, str(folder), "--rajaperf-passes", "3").returncode == 0
    wrong = compare(results, str(folder), "--rajaperf-passes", "1")  # checksums then read 3x too large
    assert wrong.returncode == 1


@pytest.mark.parametrize("breakage, message", [
    ("no-folder", "is not a folder of RAJAPerf reports"),
    ("no-timing", "cannot read"),
    ("bad-timing", "is not a RAJAPerf timing report"),
    ("bad-checksum", "is not a RAJAPerf checksum report"),
    ("bad-json", "is not JSON"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path: Path, breakage: str, message: str) -> None:
    results = our_json(tmp_path / "r.json")
    folder = rajaperf_dir(tmp_path / "rp")
    if breakage == "no-folder":
        folder = tmp_path / "nowhere"
    elif breakage == "no-timing":
        (folder / "RAJAPerf-timing-Average.csv").unlink()
    elif breakage == "bad-timing":
        (folder / "RAJAPerf-timing-Average.csv").write_text("a , b\n")
    elif breakage == "bad-checksum":
        (folder / "RAJAPerf-checksum.txt").write_text("nothing here\n")
    else:
        results.write_text("{")
    proc = compare(str(results), str(folder))
    assert proc.returncode == 2 and proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and message in proc.stderr


def test_option_errors_are_one_line(tmp_path: Path) -> None:
    proc = compare(str(our_json(tmp_path / "r.json")), str(rajaperf_dir(tmp_path / "rp")), "--rajaperf-passes", "0")
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1
    assert "must be a positive integer" in proc.stderr


def test_other_rajaperf_variants_can_be_set_beside_ours(tmp_path: Path) -> None:
    results, folder = str(our_json(tmp_path / "r.json")), str(rajaperf_dir(tmp_path / "rp"))
    proc = compare(results, folder, "--variants", "RAJA_CUDA")
    assert proc.returncode == 0, proc.stderr
    assert "RAJA_CUDA ms" in proc.stdout.splitlines()[0] and "bat/RAJA_CUDA" in proc.stdout.splitlines()[0]
    add = _rows(proc.stdout)["ADD"]
    assert add[4:7] == ["4.200", "block_256", f"{3.4 / 4.2:.2f}"]  # one RAJAPerf variant: one time column
    assert "over RAJA_CUDA and their tunings" in proc.stdout
    assert "fastest" not in proc.stdout  # one variant: its fastest tuning is the denominator already
    nothing = compare(results, folder, "--variants", "Base_Seq")  # a variant the reports do not have
    assert nothing.returncode == 0 and _rows(nothing.stdout)["ADD"][4:] == ["-"] * 6
    too_many = compare(results, folder, "--variants", "Base_CUDA", "RAJA_CUDA", "Base_Seq")
    assert too_many.returncode == 2 and "one or two RAJAPerf variants" in too_many.stderr
