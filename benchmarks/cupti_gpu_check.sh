#!/usr/bin/env bash
# The CUPTI source's GPU check, in one command, on a machine with an NVIDIA GPU and no network:
#
#   bash benchmarks/cupti_gpu_check.sh
#
# 1. installs into /tmp/site the wheels of .whl/ whose distribution is not installed already
#    (cupti-python and what it needs; a distribution the machine has, e.g. torch's
#    nvidia-cuda-cupti, is left alone so that one libcupti serves both),
# 2. runs the CUPTI tests (CPU tests and the `gpu` tests that record plain CuPy, PyTorch and
#    Numba programs with `offload-prof run --source cupti`),
# 3. runs the overhead benchmark and prints its table.
# Exit status: the tests' (the benchmark only prints). Takes about 3 minutes on the H200 machine.
set -uo pipefail
cd "$(dirname "$0")/.."
SITE=${CUPTI_SITE:-/tmp/site}
PY=${PYTHON:-python3}

echo "== wheels"
mapfile -t NEEDED < <("$PY" - <<'EOF'
import glob, re
from importlib import metadata
for path in sorted(glob.glob(".whl/*.whl")):
    dist = re.split(r"-\d", path.rsplit("/", 1)[-1], maxsplit=1)[0]
    try:
        have = metadata.version(dist.replace("_", "-"))
    except metadata.PackageNotFoundError:
        print(path)
        continue
    print(f"   have {dist} {have}, skipping {path}", file=__import__("sys").stderr)
EOF
)
if ((${#NEEDED[@]})); then
    printf '   installing %s\n' "${NEEDED[@]}"
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${NEEDED[@]}" \
        || { echo "wheel install failed"; exit 2; }
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

echo "== environment"
"$PY" - <<'EOF' || exit 2
import importlib.util, sys
from importlib import metadata
from profiler.sources.cupti.probe import import_cupti, load_driver, query_driver
module, why = import_cupti()
driver = query_driver(load_driver())
def version(d):
    try:
        return metadata.version(d)
    except metadata.PackageNotFoundError:
        return "-"
print(f"   python {sys.version.split()[0]}; GPU {driver.device or driver.problem}; driver CUDA {driver.version}")
print("   " + ", ".join(f"{d} {version(d)}" for d in ("cupti-python", "cuda-bindings", "nvidia-cuda-cupti",
                                                     "cupy-cuda13x", "torch", "numba", "numba-cuda", "pytest")))
if module is None:
    sys.exit(f"   cupti-python does not import: {why}")
if driver.problem:
    sys.exit(f"   no usable GPU: {driver.problem}")
EOF

echo "== tests (tests/profiler/sources/cupti)"
"$PY" -m pytest -q -p no:cacheprovider -rs tests/profiler/sources/cupti
status=$?

echo "== overhead (benchmarks/cupti_overhead.py)"
"$PY" benchmarks/cupti_overhead.py --no-programs --repeats 3 --large-reps 5 || echo "   benchmark failed (exit $?)"
exit $status
