"""Classes the linter got wrong on unseen-17 (issue 31), one small self-written example each.

Unseen-17's JAX repository builds its environments' observations with
Python loops in helpers that only ever run under `jax.jit(jax.vmap(...))`:
the loops unroll once, while JAX traces the step, and the `jnp.array([...])`
of numbers inside them are constants of the compiled program. The first
run (ef027e7) reported 15 copies per iteration there, none real. The
examples keep that shape without any of the repository's code; each
failed on ef027e7, and the reported cases guard what is still a loop
(the same helper called from an eager loop, a loop around the jitted
step).
"""

from __future__ import annotations

from ..kit import codes

HELPER = """
import jax
import jax.numpy as jnp

N_SENSORS = 30


def observe(pos, walls):
    readings = []
    for i in jnp.arange(N_SENSORS):
        angle = i * 0.2
        probe = jnp.array([pos[0] + jnp.cos(angle), pos[1] + jnp.sin(angle)])
        readings.append(jnp.min(jnp.abs(walls - probe)))
        readings.append(jnp.array([1.0, 0.0]))
    return jnp.stack(readings)
"""


def test_a_helper_called_only_from_a_function_jax_traces_has_no_per_iteration_copies() -> None:
    code = HELPER + """

class Task:
    def __init__(self, walls):
        def step_fn(state, action):
            pos = state + action
            return pos, observe(pos, walls)

        self._step_fn = jax.jit(jax.vmap(step_fn))
"""
    assert codes(code, select=["OFF101", "OFF108"]) == []


def test_a_loop_in_a_jitted_function_is_unrolled_at_trace_time() -> None:
    code = """
import jax
import jax.numpy as jnp


@jax.jit
def features(x, n):
    out = []
    for k in range(x.shape[0]):
        out.append(x[k] * jnp.array([1.0, 2.0, 3.0]))
    return jnp.stack(out)
"""
    assert codes(code, select=["OFF101", "OFF108"]) == []


def test_the_same_helper_called_from_an_eager_loop_still_runs_per_iteration() -> None:
    code = HELPER + """

def evaluate(states, walls):
    out = []
    for pos in states:
        out.append(observe(pos, walls))
    return out
"""
    assert [c for c, *_ in codes(code, select=["OFF101", "OFF108"])] != []


def test_a_loop_around_a_jitted_step_is_still_a_loop() -> None:
    code = """
import jax
import jax.numpy as jnp


@jax.jit
def step(params, x):
    return params - 0.1 * x


def train(params, batches):
    for x in batches:
        params = step(params, x)
        print(float(jnp.sum(params)))
    return params
"""
    assert [c for c, *_ in codes(code, select=["OFF301"])] == ["OFF301"]


def test_numpy_positions_into_a_numpy_result_are_no_upload() -> None:
    """`w, s = numpy.linalg.eigh(t)` is the host's, whatever the analysis thinks `t` was made from."""
    code = """
import cupy
import numpy


def ritz(alpha, k, n_restarts):
    for _ in range(n_restarts):
        alpha = cupy.asnumpy(alpha)
        w, s = numpy.linalg.eigh(numpy.diag(alpha))
        idx = numpy.argsort(w)
        alpha = cupy.asarray(w[idx[:k]])
    return alpha
"""
    assert codes(code, select=["OFF108"]) == []


def test_moving_a_module_to_the_inputs_device_per_call_is_no_copy() -> None:
    """`self.spectrogram.to(x.device)` in `forward`: a module moves its weights once; later calls return it."""
    code = """
import torch
from torch import nn


class SpectralLoss(nn.Module):
    def __init__(self, n_fft):
        super().__init__()
        self.spectrogram = Spectrogram(n_fft)
        self.window = torch.hann_window(n_fft)

    def forward(self, x, y):
        self.spectrogram.to(x.device)
        window = self.window.to(x.device)
        return (self.spectrogram(x * window) - self.spectrogram(y * window)).abs().mean()
"""
    assert [(c, line) for c, line, _ in codes(code, select=["OFF101"])] == [("OFF101", 14)]


def test_a_check_switched_on_for_debugging_is_no_cost_of_an_ordinary_run() -> None:
    code = """
import torch


def sample(model, tokens, steps, check=False):
    for _ in range(steps):
        logits = model(tokens)
        nxt = logits[:, -1].argmax(-1, keepdim=True)
        if check:
            assert (nxt >= 0).all()
        tokens = torch.cat([tokens, nxt], dim=1)
    return tokens


def sample_checked(model, tokens, steps):
    for _ in range(steps):
        nxt = model(tokens)[:, -1].argmax(-1, keepdim=True)
        assert (nxt >= 0).all()
        tokens = torch.cat([tokens, nxt], dim=1)
    return tokens
"""
    assert [(c, line) for c, line, _ in codes(code, select=["OFF104"])] == [("OFF104", 18)]


def test_the_grad_scalers_scale_read_every_step_is_a_metric_read() -> None:
    """`GradScaler.get_scale()` is `_scale.item()`: logged every step, it waits for the step each time."""
    code = """
import torch


def train(model, opt, loader, scaler, log):
    for x, y in loader:
        with torch.autocast("cuda"):
            loss = model(x, y)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        log["scale"] = scaler.get_scale()
"""
    assert [(c, line) for c, line, _ in codes(code, select=["OFF301"])] == [("OFF301", 12)]
