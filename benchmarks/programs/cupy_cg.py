"""A CuPy iterative solver, for measuring what recording costs (benchmarks/cupti_overhead.py).

    python benchmarks/programs/cupy_cg.py [--grid 256] [--iters 3000]

Conjugate gradient on the 2-D Poisson matrix (5-point stencil, CSR, grid
x grid unknowns), written as a textbook solver is: per iteration one
sparse matrix-vector product, two dot products, three vector updates
(alpha and beta stay on the device), and the residual read back to the
host (`float(...)`: a copy and a sync) to test for convergence. It runs `--iters` iterations whatever the residual
(convergence is tested and printed, not acted on), so every run does the
same work.

Prints one JSON line: {"program", "grid", "iters", "loop_s", "residual"}; `loop_s`
is the iterations only, between device syncs.
"""

from __future__ import annotations

import argparse
import json
import sys
import time


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--grid", type=int, default=256)
    p.add_argument("--iters", type=int, default=3000)
    args = p.parse_args()
    try:
        import cupy as cp
        import cupyx.scipy.sparse as sp
    except ImportError:
        print("cupy_cg: needs CuPy", file=sys.stderr)
        return 2
    g = args.grid
    one = sp.identity(g, dtype=cp.float64, format="csr")
    line = sp.diags([-1.0, 2.0, -1.0], [-1, 0, 1], shape=(g, g), dtype=cp.float64, format="csr")
    a = (sp.kron(line, one) + sp.kron(one, line)).tocsr()
    b = cp.ones(g * g, dtype=cp.float64)
    x = cp.zeros_like(b)
    r = b - a @ x
    pvec = r.copy()
    rs = r @ r  # stays on the device: alpha and beta never visit the host
    first = float(rs)
    cp.cuda.Device().synchronize()
    start = time.perf_counter()
    converged_at = None
    for k in range(args.iters):
        ap = a @ pvec
        alpha = rs / (pvec @ ap)
        x += alpha * pvec
        r -= alpha * ap
        rs_new = r @ r
        residual = float(rs_new)  # the convergence test on the host: a copy and a sync per iteration
        if converged_at is None and residual <= 1e-20 * first:
            converged_at = k
        pvec = r + (rs_new / cp.maximum(rs, 1e-300)) * pvec
        rs = rs_new
    cp.cuda.Device().synchronize()
    loop_s = time.perf_counter() - start
    print(json.dumps({"program": "cupy_cg", "grid": g, "iters": args.iters, "loop_s": round(loop_s, 6),
                      "residual": float(rs), "converged_at": converged_at}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
