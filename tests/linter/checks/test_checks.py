"""The checks beyond the catalog examples: import resolution, invariance, taint, flow, kernels."""

from __future__ import annotations

import pytest

from linter.analysis.project import KernelIndex, KernelParam, KernelSig

from ..kit import codes, lint

T = ["OFF101", "OFF106"]

CASES = [
    # --- names resolve through imports and aliases
    ("import cupy as xp\ndef f(x, n):\n    for i in range(n):\n        d = xp.asarray(x)\n", T, [("OFF101", 4, 13)]),
    ("from cupy import asnumpy as to_host\ndef f(d, n):\n    for i in range(n):\n        h = to_host(d)\n", T,
     [("OFF101", 4, 13)]),
    ("import numba.cuda as nc\ndef f(a, n):\n    for i in range(n):\n        nc.to_device(a)\n", T, [("OFF101", 4, 9)]),
    ("import jax\ndef f(a, n):\n    for i in range(n):\n        jax.device_put(a)\n", T, [("OFF101", 4, 9)]),
    # a same-named function from another library is not cupy's
    ("import mylib as cp\ndef f(x, n):\n    for i in range(n):\n        d = cp.asarray(x)\n", T, []),
    # --- .get() only on device values: dict.get / queue.get are never copies
    ("import cupy as cp\ndef f(cfg, q, n):\n    for i in range(n):\n        a = cfg.get('k')\n        b = q.get()\n", T, []),
    ("import cupy as cp\nd = cp.ones(3)\nfor i in range(4):\n    h = d.get()\n", T, [("OFF101", 4, 9)]),
    ("import cupy as cp\nfor i in range(4):\n    d = cp.ones(3) * i\n    h = d.get()\n", T, [("OFF106", 4, 9)]),
    # asarray of a device array is no copy
    ("import cupy as cp\nd = cp.ones(3)\nfor i in range(4):\n    e = cp.asarray(d)\n", T, []),
    # --- invariance: rebinding, stores, in-place methods, calls that may change the data, destinations
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        x[0] = i\n        d = cp.asarray(x)\n", T,
     [("OFF106", 5, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        fill(x)\n        d = cp.asarray(x)\n", T,
     [("OFF106", 5, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        x.sort()\n        d = cp.asarray(x)\n", T,
     [("OFF106", 5, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        print(len(x))\n        d = cp.asarray(x)\n", T,
     [("OFF101", 5, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        d = cp.asarray(x[i])\n", T, [("OFF106", 4, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        with cp.cuda.Device(i % 2):\n            d = cp.asarray(x)\n",
     T, [("OFF106", 5, 17)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        with cp.cuda.Device(0):\n            d = cp.asarray(x)\n",
     T, [("OFF101", 5, 17)]),
    ("import torch\ndef f(w, n, devs):\n    for i in range(n):\n        w.to(devs[i])\n", T, [("OFF106", 4, 9)]),
    ("import torch\ndef f(w, n):\n    for i in range(n):\n        w.to(torch.float16)\n        w.to('cpu')\n", T,
     [("OFF101", 5, 9)]),
    ("import cupy as cp\ndef f(x, n):\n    while n:\n        d = cp.asarray(load(x))\n        n -= 1\n", T, [("OFF106", 4, 13)]),
    # --- comprehensions are loops; a function defined in a loop is not in it
    # a comprehension collecting copies builds n distinct arrays: hoisting would alias them (OFF106, not OFF101)
    ("import cupy as cp\ndef f(x, n):\n    return [cp.asarray(x) for _ in range(n)]\n", T, [("OFF106", 3, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    return [cp.asarray(x).sum() for _ in range(n)]\n", T, [("OFF101", 3, 13)]),
    ("import cupy as cp\ndef f(xs):\n    return [cp.asarray(c) for c in xs]\n", T, [("OFF106", 3, 13)]),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        def g():\n            return cp.asarray(x)\n", T, []),
    ("import cupy as cp\ndef f(x, n):\n    for i in range(n):\n        g = lambda: cp.asarray(x)\n", T, []),
    # --- torch
    ("import torch\ndef f(w, n):\n    for i in range(n):\n        w.cuda()\n        w.cpu()\n", T,
     [("OFF101", 4, 9), ("OFF101", 5, 9)]),
    ("import torch\ndef f(x, n):\n    for i in range(n):\n        t = torch.tensor(x, device='cuda')\n        u = torch.tensor(x)\n",
     T, [("OFF101", 4, 13)]),
    ("import torch\nd = torch.ones(3).cuda()\nfor i in range(3):\n    a = d.numpy()\n", T, [("OFF101", 4, 9)]),
    ("def f(w, n):\n    for i in range(n):\n        w.cuda()\n", T, []),  # no torch import: somebody else's .cuda()
    # --- offload_core updates
    ("from offload_core import region\nimport numpy as np\nu = np.ones(3)\nwith region(u) as r:\n    for i in range(3):\n"
     "        r.update_host(u)\n", T, [("OFF101", 6, 9)]),
    # --- OFF104
    ("import cupy as cp\nfor i in range(100):\n    cp.cuda.Stream.null.synchronize()\n    cp.cuda.Device(0).synchronize()\n",
     ["OFF104"], [("OFF104", 3, 5), ("OFF104", 4, 5)]),
    # d[i] with a changing i reads the array element by element: OFF302, not OFF104
    ("import cupy as cp\nd = cp.ones(3)\nfor i in range(100):\n    v = d[i].item()\n    w = int(d[i])\n", ["OFF104", "OFF302"],
     [("OFF302", 4, 9), ("OFF302", 5, 9)]),
    ("import cupy as cp\nd = cp.ones(3)\nfor i in range(100):\n    v = d[0].item()\n    w = int(d[1])\n", ["OFF104", "OFF302"],
     [("OFF104", 4, 9), ("OFF104", 5, 9)]),
    ("import cupy as cp\nd = cp.ones(3)\nv = float(d.sum())\n", ["OFF104"], []),
    # --- OFF105
    ("import cupy as cp\nimport numpy as np\ndef f():\n    d = cp.array(np.full((2, 2), 7.0))\n", ["OFF105"], [("OFF105", 4, 9)]),
    ("import torch\ndef f():\n    w = torch.ones(3).to('cuda')\n    v = torch.randn(3).to(torch.float16)\n", ["OFF105"],
     [("OFF105", 3, 9)]),
    ("import jax\nimport numpy as np\ndef f():\n    d = jax.device_put(np.zeros(3))\n", ["OFF105"], [("OFF105", 4, 9)]),
    # a script's start-up outside any loop runs once: not worth a finding
    ("import torch\nif __name__ == '__main__':\n    obs = torch.zeros(128, 8).to('cuda')\n", ["OFF105"], []),
    # --- OFF103 round trips
    ("import cupy as cp\nd = cp.ones(3)\nh = d.get()\ne = cp.asarray(h)\n", ["OFF103"], [("OFF103", 4, 5)]),
    ("import cupy as cp\nd = cp.ones(3)\nh = d.get()\nh += 1\ne = cp.asarray(h)\n", ["OFF103"], []),
    ("import cupy as cp\ndef f(d):\n    h = d.get()\n    e = cp.asarray(h)\n", ["OFF103"], []),  # d: not known to be cupy
    ("import torch\ndef f(t):\n    h = t.cpu()\n    u = h.cuda()\n", ["OFF103"], [("OFF103", 4, 9)]),
]


@pytest.mark.parametrize("code, select, expected", CASES, ids=[f"case{i}" for i in range(len(CASES))])
def test_check(code: str, select: list[str], expected: list[tuple[str, int, int]]) -> None:
    assert codes(code, select=select) == expected


KERNELS = """\
import numpy as np
from offload_core import In, InOut, Out, Owned, RawKernel, kernel, offload, region

@kernel
def axpy(y: InOut, x: In, a: float) -> None:
    y += a * x

raw = RawKernel("...", "raw", params={"out": Out[np.float64], "a": In[np.float64], "n": np.int32})
"""


def test_mutable_alias_through_views_aliases_and_rawkernel_params() -> None:
    code = KERNELS + (
        "v = np.ones(16)\n"
        "w = v\n"
        "offload(axpy, v[1:], w, 2.0)\n"  # line 11: plain assignment alias and a slice
        "offload(axpy, v, v.reshape(4, 4), 2.0)\n"  # line 12: reshape is a view
        "offload(raw, v, v.T, 16)\n"  # line 13: RawKernel signature from its params literal
        "offload(axpy, v, np.copy(v), 2.0)\n"  # a copy is not an alias
    )
    assert codes(code, select=["OFF201"]) == [("OFF201", 11, 1), ("OFF201", 12, 1), ("OFF201", 13, 1)]
    message = lint(code, select=["OFF201"]).findings[2].message
    assert message.startswith("v is passed to raw as Out parameter 'out' and also as 'a'")


def test_offload_in_loop_lists_only_invariant_arrays_and_respects_enclosing_regions() -> None:
    code = KERNELS + (
        "x = np.ones(8)\n"
        "y = np.zeros(8)\n"
        "for chunk in np.split(x, 4):\n"
        "    offload(axpy, y, chunk, 1.0)\n"  # line 13: chunk changes per iteration; y does not
        "with region(y):\n"
        "    for i in range(3):\n"
        "        offload(axpy, y, x, 1.0)\n"  # line 16: y is mapped, x is not
        "for i in range(3):\n"
        "    with region(x, y):\n"
        "        offload(axpy, y, x, 1.0)\n"  # line 19: a region inside the loop maps every iteration
        "with region(*[x, y]):\n"
        "    for i in range(3):\n"
        "        offload(axpy, y, x, 1.0)\n"  # a starred region list is trusted
    )
    result = lint(code, select=["OFF102"])
    assert [(f.line, f.column) for f in result.findings] == [(12, 5), (15, 9), (18, 9)]
    assert "copies y in and out" in result.findings[0].message
    assert "copies x in and out" in result.findings[1].message
    assert "copies y, x in and out" in result.findings[2].message


def test_use_after_move_across_loop_iterations_and_rebinding() -> None:
    code = KERNELS.replace("def axpy(y: InOut, x: In", "def axpy(y: Owned, x: In") + (
        "a = np.ones(4)\n"
        "for i in range(2):\n"
        "    offload(axpy, a, np.ones(4), 1.0)\n"  # line 11: the second iteration uses the moved a
        "b = np.ones(4)\n"
        "offload(axpy, b, a, 1.0)\n"
        "b = np.zeros(4)\n"  # rebinding: a new array
        "print(b)\n"
    )
    result = lint(code, select=["OFF202"])
    assert [(f.line, f.column) for f in result.findings] == [(11, 19), (13, 18)]
    assert "a is used after line 11 moved it into Owned parameter 'y' of axpy" == result.findings[0].message


def test_host_access_in_region_follows_the_flow() -> None:
    code = KERNELS + (
        "u = np.ones(4)\n"
        "with region(u) as r:\n"
        "    for i in range(3):\n"
        "        print(u.sum())\n"  # line 12: after the first iteration's launch, u is stale
        "        offload(axpy, u, np.ones(4), 1.0)\n"
        "    r.update_host(u)\n"
        "    print(u[0])\n"  # fine after update_host
        "    v = u[1:]\n"
        "    offload(axpy, u, np.ones(4), 1.0)\n"
        "    print(v)\n"  # line 18: v is a view of u
    )
    result = lint(code, select=["OFF203"])
    assert [(f.line, f.column) for f in result.findings] == [(12, 15), (18, 11)]
    assert "call r.update_host(u) first" in result.findings[0].message


def test_kernels_imported_from_another_linted_file() -> None:
    sig = KernelSig("axpy", "pkg.kernels.axpy", (KernelParam("y", "InOut"), KernelParam("x", "In"), KernelParam("a", None)))
    code = "import numpy as np\nfrom offload_core import offload\nfrom .kernels import axpy\nv = np.ones(3)\noffload(axpy, v, v, 1.0)\n"
    index = KernelIndex({sig.qualname: sig})
    result = lint(code, select=["OFF201"], kernels=index, module_name="pkg.run")
    assert [(f.code, f.line) for f in result.findings] == [("OFF201", 5)]
    assert result.needs == (("pkg.kernels.axpy", sig.digest()),)
    assert lint(code, select=["OFF201"], module_name="pkg.run").findings == ()


def test_kernel_body_checks_stop_at_rebinding_and_see_in_place_methods() -> None:
    code = (
        "import numpy as np\nfrom offload_core import In, InOut, Out, kernel\n"
        "@kernel\n"
        "def k(a: In, b: In, c: InOut, d: InOut, out: Out) -> None:\n"
        "    a.fill(0)\n"  # line 5: In written by an in-place method
        "    np.multiply(b, 2, out=b)\n"  # line 6: In written through out=
        "    c[:] = 1\n"  # c is never read: OFF204 at its parameter (line 4)
        "    d[:] = d[::-1]\n"  # d is read
        "    out[...] = a\n"
    )
    found = codes(code, select=["OFF204", "OFF205"])
    assert found == [("OFF204", 4, 21), ("OFF205", 5, 5), ("OFF205", 6, 5)]


def test_suppression_comments() -> None:
    code = (
        "import cupy as cp\nimport numpy as np\n"
        "def f():\n"
        "    a = cp.asarray(np.zeros(3))  # noqa: OFF105\n"
        "    b = cp.asarray(np.zeros(3))  # offload: ignore[OFF105]\n"
        "    c = cp.asarray(np.zeros(3))  # noqa\n"
        "    d = cp.asarray(np.zeros(3))  # noqa: OFF101\n"
    )
    result = lint(code, select=["OFF105"])
    assert [(f.line, f.suppressed) for f in result.findings] == [(4, True), (5, True), (6, True), (7, False)]


def test_files_without_a_known_api_are_not_parsed() -> None:
    result = lint("def broken(:\n")
    assert result.skipped and result.findings == ()
    assert [f.code for f in lint("def broken(:\n", prefilter=False).findings] == ["OFF901"]
