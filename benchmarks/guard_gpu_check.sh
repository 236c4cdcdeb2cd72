#!/usr/bin/env bash
# The transfer guard's GPU check, in one command, on a machine with an NVIDIA GPU (H200) and no network:
#
#   bash benchmarks/guard_gpu_check.sh
#
# 1. installs the wheels of .whl/ that the machine lacks into /tmp/site (cupti-python and
#    what it needs, as benchmarks/cupti_gpu_check.sh does),
# 2. runs the guard's tests: the CPU ones and the `gpu` ones (CuPy, PyTorch .item()/.cpu()/.to("cuda"),
#    Numba, JAX each raising at the right line; OFFLOAD_GUARD and the pytest marker on a PyTorch
#    training loop naming its .item() line),
# 3. runs the overhead benchmark (an active guard against a CUPTI recording) and prints its table.
# Exit status: the tests' (the benchmark only prints).
set -uo pipefail
cd "$(dirname "$0")/.."
SITE=${CUPTI_SITE:-/tmp/site}
PY=${PYTHON:-python3}

mapfile -t NEEDED < <("$PY" - <<'PYEOF'
import glob, re
from importlib import metadata
for path in sorted(glob.glob(".whl/*.whl")):
    dist = re.split(r"-\d", path.rsplit("/", 1)[-1], maxsplit=1)[0]
    try:
        metadata.version(dist.replace("_", "-"))
    except metadata.PackageNotFoundError:
        print(path)
PYEOF
)
if ((${#NEEDED[@]})); then
    "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target "$SITE" "${NEEDED[@]}" \
        || { echo "wheel install failed"; exit 2; }
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"

echo "== tests (tests/profiler/guard, tests/profiler/sources/cupti/test_guard_cupti.py)"
"$PY" -m pytest -q -p no:cacheprovider -rs tests/profiler/guard tests/profiler/sources/cupti/test_guard_cupti.py
status=$?

echo "== overhead (benchmarks/guard_overhead.py)"
"$PY" benchmarks/guard_overhead.py --steps 300 --repeats 5 || echo "   benchmark failed (exit $?)"
exit $status
