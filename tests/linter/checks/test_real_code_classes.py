"""One test per class of mistake the linter made on public GPU code (issue 12), each on a small self-written example.

The classes come from labelled findings on four public code bases
(benchmarks/data/lint-realworld-dev.json; the table is in docs/linter.md).
No code here is taken from those repositories: each example is written to
show the class and nothing else.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from linter.run import engine

from ..kit import codes, lint, run_cli

# ------------------------------------------------------------------------------------------------
# False positives


@pytest.mark.parametrize("code", [
    "import cupy\nx = cupy.zeros(3)\nx = cupy.asarray(x)\n",
    "import jax\nimport jax.numpy as jnp\nx = jnp.zeros(3)\nx = jax.device_put(x, s)\n",
    "import jax.numpy as jnp\nx = jnp.zeros(3)\nx = jnp.asarray(x)\n",
    "import torch\nx = torch.zeros(3, device='cuda')\nx = torch.tensor(x, device='cuda')\n",
    "def f(n):\n    return (f(n - 1), 1) if n else (0, 1)\nimport cupy\na, b = f(3)\nc = cupy.asarray(a)\n",
])
def test_self_referring_values_are_analysed_not_reported_as_syntax_errors(code: str) -> None:
    result = lint(code, select=["OFF101", "OFF105", "OFF901"])
    assert result.error is None and [f.code for f in result.findings] == []


def test_an_internal_error_is_the_tools_fault_not_off901(monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(ctx: object) -> None:
        raise RecursionError("maximum recursion depth exceeded")

    monkeypatch.setattr(engine, "checks_for", lambda enabled: [broken])
    result = lint("import cupy\nx = cupy.zeros(3)\n", select=["OFF101"])
    assert result.findings == () and result.error is not None and result.error.startswith("RecursionError")


@pytest.mark.parametrize("expr", ["cupy.random.randint(0, 9, (2, 3)).get()", "cupy.asarray(np.random.rand(3))",
                                  "cupy.random.random_integers(0, 2).get()"])
def test_random_draws_are_never_loop_invariant(expr: str) -> None:
    code = f"import cupy\nimport numpy as np\nvals = [{expr} for _ in range(20)]\n"
    assert [c for c, _, _ in codes(code, select=["OFF101"])] == []


def test_torch_random_in_a_loop_is_not_hoisted_but_drawn_on_the_device() -> None:
    code = "import torch\ndef f(n, dev):\n    for _ in range(n):\n        z = torch.randn(4, 8).to(dev)\n"
    assert [c for c, _, _ in codes(code, select=["OFF101", "OFF107"])] == ["OFF107"]


def test_tests_and_benchmarks_have_their_own_policy(tmp_path: Path) -> None:
    loop = ("import cupy as cp\nimport torch\ndef f(x, n, e):\n    for i in range(n):\n        d = cp.asarray(x)\n"
            "        torch.cuda.synchronize()\n")
    for name in ("tests/test_copy.py", "benchmarks/bench_copy.py", "examples/copy.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(loop)
    proc = run_cli("--format", "json", "--no-cache", ".", cwd=tmp_path)
    found = {(f["path"], f["code"], f["context"]) for f in json.loads(proc.stdout)}
    assert found == {
        ("examples/copy.py", "OFF101", "example"), ("examples/copy.py", "OFF104", "example"),
        ("benchmarks/bench_copy.py", "OFF101", "benchmark"),  # the sync is silenced, the copy is not
    }
    (tmp_path / "pyproject.toml").write_text("[tool.offload-lint.contexts.test]\nignore = []\n")
    proc = run_cli("--format", "json", "--no-cache", ".", cwd=tmp_path)
    assert {f["code"] for f in json.loads(proc.stdout) if f["context"] == "test"} == {"OFF101", "OFF104"}


@pytest.mark.parametrize("code", [
    # the value drives control flow: the host needs it now (a stopping test is OFF104, see test_unseen_classes.py)
    "import cupy as cp\ndef f(n):\n    acc = cp.zeros(())\n    for i in range(n):\n        acc += i\n        if acc.item() > 10:\n"
    "            n += 1\n",
    "import cupy as cp\ndef f(x, n):\n    for _ in range(n):\n        x = x * 0.5\n        k = int(cp.count_nonzero(x))\n"
    "        e = cp.eye(k)\n",
    # an event wait before reading the elapsed time is the measurement
    "import cupy as cp\ndef f(run, n):\n    for _ in range(n):\n        s, e = cp.cuda.Event(), cp.cuda.Event()\n"
    "        s.record(); run(); e.record()\n        e.synchronize()\n        print(cp.cuda.get_elapsed_time(s, e))\n",
])
def test_syncs_the_host_needs_are_not_reported(code: str) -> None:
    assert codes(code, select=["OFF104", "OFF301", "OFF302"]) == []


def test_an_invariant_read_is_hoisted_not_accumulated() -> None:
    code = "import cupy as cp\ndef f(w, n):\n    d = cp.asarray(w)\n    for i in range(n):\n        print(i, float(d.sum()))\n"
    result = lint(code, select=["OFF104", "OFF301"])
    assert [f.code for f in result.findings] == ["OFF104"] and "hoist the read" in result.findings[0].message


def test_numba_is_told_only_what_it_can_do() -> None:
    for creator, expected in (("zeros", []), ("ones", []), ("arange", []), ("empty", ["OFF105"])):
        code = f"import numpy as np\nfrom numba import cuda\nd = cuda.to_device(np.{creator}(1024))\n"
        assert [c for c, _, _ in codes(code, select=["OFF105"])] == expected, creator


def test_one_cost_one_finding_for_a_host_built_upload_in_a_loop() -> None:
    code = "import cupy as cp\nimport numpy as np\ndef f(n):\n    for _ in range(n):\n        d = cp.asarray(np.zeros(8))\n"
    assert [c for c, _, _ in codes(code, select=["OFF101", "OFF105", "OFF106"])] == ["OFF105"]


@pytest.mark.parametrize("code", [
    "import cupy as cp\ndef f(x, n):\n    for dev in range(n):\n        with cp.cuda.Device(dev):\n            d = cp.asarray(x)\n",
    "import cupy as cp\ndef f(x, n):\n    for dev in range(n):\n        cp.cuda.Device(dev).use()\n        d = cp.asarray(x)\n",
    "import torch\ndef f(x, n):\n    for dev in range(n):\n        torch.cuda.set_device(dev)\n        d = x.cuda()\n",
])
def test_loops_over_devices_are_not_invariant(code: str) -> None:
    assert [c for c, _, _ in codes(code, select=["OFF101", "OFF106"])] == ["OFF106"]


def test_waits_on_each_chunks_own_event_are_not_reported() -> None:
    code = "import cupy as cp\ndef f(chunks):\n    for c in chunks:\n        c.ready.synchronize()\n"
    assert codes(code, select=["OFF104"]) == []


@pytest.mark.parametrize("test", ['name == "fc"', "step % 100 == 0", "i == 0 and debug", "shown < 3"])
def test_a_branch_taken_once_is_not_every_iteration(test: str) -> None:
    code = (f"import cupy as cp\nimport torch\ndef f(x, names, dev):\n    for step, name in enumerate(names):\n"
            f"        loss = (x * step).to(dev).sum()\n        i = step\n        debug = True\n        if {test}:\n"
            f"            shown += 1\n            w = cp.asarray(x)\n            print(loss.item())\n")
    assert codes(code, select=["OFF101", "OFF104", "OFF301"]) == []


def test_metadata_of_a_mapped_array_is_not_host_access() -> None:
    code = ("import numpy as np\nfrom offload_core import InOut, kernel, offload, region\n\n@kernel\n"
            "def scale(y: InOut, a: float) -> None:\n    y *= a\n\ny = np.ones(8)\nwith region(y) as r:\n"
            "    offload(scale, y, 2.0)\n    n = y.shape\n    m = len(y)\n    t = y.dtype\n    ok = r.is_resident(y)\n"
            "    z = np.empty_like(y)\n    bad = y[0]\n")
    assert codes(code, select=["OFF203"]) == [("OFF203", 16, 11)]


# ------------------------------------------------------------------------------------------------
# Misses


@pytest.mark.parametrize("line", [
    "total += loss.item()", "meter.update(loss.item(), x.size(0))", "losses.append(float(loss))",
    "print(step, loss.item())", "stats['loss'] = loss.item()",
])
def test_per_step_metric_syncs_on_values_from_unknown_calls(line: str) -> None:
    code = ("import torch\ndef train(model, criterion, loader, device, meter):\n    total, losses, stats = 0.0, [], {}\n"
            "    for step, (x, y) in enumerate(loader):\n        x, y = x.to(device), y.to(device)\n"
            f"        loss = criterion(model(x), y)\n        loss.backward()\n        {line}\n")
    assert [c for c, _, _ in codes(code, select=["OFF104", "OFF301"])] == ["OFF301"]


@pytest.mark.parametrize("loop", [
    "for v in d:\n        out.append(int(v))",
    "out = [t.item() for t in d]",
    "for a, b in zip(d, e):\n        out.append(float(a) + float(b))",
])
def test_element_wise_reads_of_a_device_array(loop: str) -> None:
    code = f"import torch\ndef f(d, e, out):\n    d, e = d.cuda(), e.cuda()\n    {loop}\n"
    assert {c for c, _, _ in codes(code, select=["OFF104", "OFF301", "OFF302"])} == {"OFF302"}


@pytest.mark.parametrize("dest", ["grad", "local_rank", "self.gpu_id", "dev"])
def test_device_destinations_the_linter_did_not_know(dest: str) -> None:
    code = (f"import torch\nclass T:\n    def step(self, p, local_rank):\n        grad = p.grad\n"
            f"        dev = torch.device(f'cuda:{{local_rank}}')\n        s = torch.zeros(4).to({dest})\n")
    assert [c for c, _, _ in codes(code, select=["OFF105"])] == ["OFF105"]


def test_like_creators_are_host_creators() -> None:
    code = "import cupy as cp\nimport numpy as np\ndef f(h):\n    return cp.asarray(np.zeros_like(h))\n"
    assert [c for c, _, _ in codes(code, select=["OFF105"])] == ["OFF105"]


def test_python_lists_uploaded_per_iteration() -> None:
    code = "import torch\ndef gen(m, w, n, dev):\n    for _ in range(n):\n        w = m(torch.tensor([[w]]).to(dev)).argmax().item()\n"
    assert "OFF108" in [c for c, _, _ in codes(code, select=["OFF106", "OFF108"])]


def test_a_loader_without_pinned_memory_feeding_the_gpu() -> None:
    code = ("import torch\nfrom torch.utils.data import DataLoader\ndef f(m, ds, dev):\n"
            "    for x, y in DataLoader(ds):\n        m(x.to(dev))\n"
            "    loader = DataLoader(ds, batch_size=8)\n    for x, y in loader:\n        m(x.to(dev))\n")
    # the loop that iterates the DataLoader call itself is the same case as the loop over its name
    assert codes(code, select=["OFF109"]) == [("OFF109", 4, 17), ("OFF109", 6, 14)]


def test_a_module_moved_to_the_host_and_back() -> None:
    code = ("import torch\ndef fit(net, loader, dev):\n    for i, x in enumerate(loader):\n        net(x.to(dev))\n"
            "        if i % 10 == 0:\n            net.cpu()\n            torch.save(net.state_dict(), 'ckpt')\n"
            "            net.to(dev)\n")
    assert [c for c, _, _ in codes(code, select=["OFF103"])] == ["OFF103"]


@pytest.mark.parametrize("lib, make", [("from numba import cuda", "cuda.device_array(8)"),
                                       ("import jax.numpy as jnp", "jnp.ones(8)")])
def test_implicit_downloads_through_numpy(lib: str, make: str) -> None:
    code = f"import numpy as np\n{lib}\nd = {make}\nfor i in range(3):\n    h = np.asarray(d)\n"
    assert [c for c, _, _ in codes(code, select=["OFF101"])] == ["OFF101"]


@pytest.mark.parametrize("code, expected", [
    ("from cuda.bindings import runtime as rt\ndef f(d, h, n, s):\n    for _ in range(n):\n"
     "        rt.cudaMemcpy(d, h, 8, rt.cudaMemcpyKind.cudaMemcpyHostToDevice)\n        rt.cudaStreamSynchronize(s)\n",
     ["OFF101", "OFF104"]),
    ("from cuda import cuda\ndef f(d, h, n):\n    for _ in range(n):\n        cuda.cuMemcpyDtoH(h, d, 8)\n", ["OFF101"]),
    ("from cuda.core.experimental import Device\ndef f(n):\n    s = Device().create_stream()\n    for _ in range(n):\n"
     "        s.sync()\n", ["OFF104"]),
    ("import cudf\ndef f(cats):\n    df = cudf.read_parquet('x')\n    for c in cats:\n        print(c, (df.a == 1).any())\n",
     ["OFF104"]),
])
def test_libraries_the_linter_could_not_see(code: str, expected: list[str]) -> None:
    assert [c for c, _, _ in codes(code, select=["OFF101", "OFF104", "OFF301"])] == expected
