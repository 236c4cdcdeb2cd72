"""NumPy arrays handed to a compiled JAX function in a loop are copied to the device on every call (OFF101).

JAX examples that fit a model on a dataset built with NumPy or scikit-learn
call the compiled update with the host arrays every step (jaxopt's examples and
benchmarks: 6 labelled costs on unseen-21); nothing keeps the copy, so the
whole dataset crosses the bus each iteration. A self-written example.
"""

from __future__ import annotations

import json
from pathlib import Path

from ..kit import codes, lint, run_cli

FIT = """
import jax
import jax.numpy as jnp
import numpy as np
from sklearn import datasets


def loss(p, X, y):
    return jnp.mean((X @ p - y) ** 2)


step = jax.jit(jax.grad(loss))


@jax.jit
def update(p, X, y):
    return p - 0.1 * jax.grad(loss)(p, X, y)


def fit(n):
    X, y = datasets.make_regression(n_samples=100, n_features=10)
    w = np.zeros(10)
    p = jnp.zeros(10)
    for i in range(n):
        p = p - 0.1 * step(p, X, y)
        p = update(p, X, w)
    return p
"""


def test_host_arrays_passed_to_a_compiled_function_every_iteration_are_copied_every_iteration() -> None:
    found = [(c, line) for c, line, *_ in codes(FIT, select=["OFF101"])]
    assert found == [("OFF101", 25), ("OFF101", 25), ("OFF101", 26), ("OFF101", 26)]
    messages = [f.message for f in lint(FIT, select=["OFF101"]).findings]
    assert messages[0].startswith("passing the NumPy array `X` to the compiled `step` copies host->device")
    assert "jax.device_put" in messages[0]


def test_device_arrays_new_batches_and_traced_code_are_not() -> None:
    code = FIT.replace("    for i in range(n):", "    X, y, w = jax.device_put(X), jnp.asarray(y), jnp.asarray(w)\n"
                                                    "    for i in range(n):")
    assert codes(code, select=["OFF101"]) == []
    batches = FIT.replace("        p = p - 0.1 * step(p, X, y)\n", "        b = np.random.randn(100, 10)\n"
                                                                  "        p = p - 0.1 * step(p, b, y[:100])\n")
    assert [(c, line) for c, line, *_ in codes(batches, select=["OFF101"])] == [("OFF101", 27), ("OFF101", 27)]  # `update(p, X, w)` only
    traced = FIT.replace("def fit(n):", "@jax.jit\ndef fit(n):")
    assert codes(traced, select=["OFF101"]) == []


def test_an_absl_test_module_is_a_test(tmp_path: Path) -> None:
    """`vqvae_test.py` in a package, an absl test (`class VqvaeTest(parameterized.TestCase)`): its ten-step loop of
    the compiled update with the test's NumPy inputs is a test's (the one finding of the check on 22 sets)."""
    (tmp_path / "pkg").mkdir()
    body = FIT.replace("def fit(n):", "class FitTest(parameterized.TestCase):\n\n  def test_fit(self, n=10):")
    (tmp_path / "pkg" / "fit_test.py").write_text("from absl.testing import parameterized\n" + body)
    (tmp_path / "pkg" / "fit_lib.py").write_text(FIT)
    proc = run_cli("--format", "json", "--no-cache", "--select", "OFF101", ".", cwd=tmp_path)
    found = json.loads(proc.stdout)
    assert {(f["path"], f["context"]) for f in found} == {("pkg/fit_lib.py", "library")}
