"""How fast the HTML report is written and opens in a browser with 10^6 events; prints a table (not a timed test).

    python benchmarks/html_load.py                  # ~10^6-event traces, recorded for real on the NumPy backend
    python benchmarks/html_load.py --events 100000  # smaller, quicker

Two pages, from runs recorded with offload_core's NumPy backend and the
profiler's Recorder (so the records are what real runs produce):

* single: `report --format html` of the suite's naive path (~`--events` records);
* pair:   `compare --format html` of that run beside its batched path.

For each: the analysis (detectors and verdict) and the page's rendering in
Python, the file's size, and in headless Chromium (tests/browser.py finds
it) the time from navigation to every timeline drawn (HTML parsed, the
data's JSON parsed, the overviews drawn: `offloadProf.drawnMs`), to the
load event, and the time to redraw after zooming into 0.1% of the run,
which decodes the packed per-event columns. Each browser figure is the
median of `--repeats` fresh page loads. The target is a load under 2 s.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import offload_core  # noqa: E402
from offload_core.suite import run_suite  # noqa: E402
from profiler.analysis.diagnosis import analyse  # noqa: E402
from profiler.model import Run  # noqa: E402
from profiler.outputs.html.page import named, render_page  # noqa: E402
from profiler.sources.recorder import Recorder  # noqa: E402
from profiler.trace.link import SHIPPED_DIR, load_link  # noqa: E402
from tests.browser import Browser, find  # noqa: E402

KERNELS = ["TRIAD", "DAXPY", "JACOBI_1D"]
PER_REP_NAIVE = 38  # records per rep of these three kernels on the naive path


def record(mode: str, reps: int) -> Run:
    offload_core.set_mode(mode)
    with Recorder() as rec:
        run_suite(KERNELS, size_factor=0.0001, mode=mode, reps=reps)
    offload_core.set_mode("batched")
    return rec.run(argv=("suite", mode))


def in_browser(browser: Browser, page_path: Path, repeats: int) -> dict[str, float]:
    from playwright.sync_api import sync_playwright

    drawn, loaded, zoomed = [], [], []
    with sync_playwright() as p:
        b = p.chromium.launch(**browser.launch_options())  # type: ignore[arg-type]
        for _ in range(repeats):
            page = b.new_page(viewport={"width": 1280, "height": 900})
            page.goto(page_path.as_uri(), wait_until="load", timeout=120_000)
            page.wait_for_selector("html[data-timeline=drawn]", timeout=120_000)
            drawn.append(page.evaluate("offloadProf.drawnMs"))
            loaded.append(page.evaluate("performance.getEntriesByType('navigation')[0].loadEventEnd"))
            zoomed.append(page.evaluate(
                "(() => { const box = document.querySelector('.timeline'); const wall = JSON.parse("
                "document.getElementById('timeline-data').textContent)[0].wall; const t = performance.now();"
                " offloadProf.zoom(0, wall * 0.5, wall * 0.501); if (box.dataset.mode !== 'events') return -1;"
                " return performance.now() - t; })()"))
            page.close()
        b.close()
    return {"drawn ms": statistics.median(drawn), "load event ms": statistics.median(loaded),
            "zoom 0.1% ms": statistics.median(zoomed)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1_000_000, help="records in the naive trace (default: %(default)s)")
    parser.add_argument("--repeats", type=int, default=3, help="page loads per figure (default: %(default)s)")
    args = parser.parse_args()
    browser = find()
    if not isinstance(browser, Browser):
        sys.exit(f"html_load: {browser}")
    offload_core.set_backend("numpy")
    reps = max(args.events // PER_REP_NAIVE, 1)
    print(f"recording ~{args.events:,} events ...", file=sys.stderr, flush=True)
    naive, batched = record("naive", reps), record("batched", reps)
    link = load_link(SHIPPED_DIR / "pcie5-x16.yaml")
    folder = Path(tempfile.mkdtemp(prefix="html-load-"))
    rows = []
    for case, runs in (("single", [naive]), ("pair", [naive, batched])):
        t = time.perf_counter()
        analysed = [analyse(r, link) for r in runs]
        analysis_s = time.perf_counter() - t
        t = time.perf_counter()
        html = render_page(named(runs, [f"{r.meta.mode}.json" for r in runs], analysed), link=link)
        render_s = time.perf_counter() - t
        path = folder / f"{case}.html"
        path.write_text(html, encoding="utf-8")
        figures = in_browser(browser, path, args.repeats)
        rows.append([case, f"{sum(len(r.records) for r in runs):,}", f"{len(html.encode()) / 1e6:.1f} MB",
                     f"{analysis_s:.2f}", f"{render_s:.2f}", f"{figures['drawn ms']:.0f}",
                     f"{figures['load event ms']:.0f}", f"{figures['zoom 0.1% ms']:.0f}"])
    head = ["page", "events", "size", "analysis s", "render s", "drawn ms", "load event ms", "zoom 0.1% ms"]
    widths = [max(len(r[i]) for r in [head, *rows]) for i in range(len(head))]
    for r in [head, *rows]:
        print("  ".join(c.rjust(w) if i else c.ljust(w) for i, (c, w) in enumerate(zip(r, widths))))
    print(f"\nbrowser: {browser.describe()}; median of {args.repeats} loads; pages in {folder}")


if __name__ == "__main__":
    main()
