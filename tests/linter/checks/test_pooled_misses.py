"""Classes taken from the pooled misses of unseen-2 to unseen-19 (issue 31), one self-written example each.

Chainer's custom training loops step the optimizer with `optimizer.update(model,
x, t)` (forward, backward and step in one call) and sum `float(loss.array)`
every step; once an epoch, under `if train_iter.is_new_epoch:`, they run an
evaluation loop nested in the step loop. The linter took the step loop for an
epoch loop around inner loops that do the work ("amortised": one read per
epoch), because `update` was not known as an optimizer's step and because a
loop with an inner loop was assumed to be an outer one (8 labelled costs in
chainer's examples, none caught at 9e11652).
"""

from __future__ import annotations

import pytest

from ..kit import codes

CUSTOM_LOOP = """
import chainer
from chainer.dataset import convert


def train(model, optimizer, train_iter, test_iter, device, epochs):
    total = 0.0
    while train_iter.epoch < epochs:
        x, t = convert.concat_examples(train_iter.next(), device)
        STEP
        total += float(loss.array) * len(t)
        if train_iter.is_new_epoch:
            for batch in test_iter:
                x, t = convert.concat_examples(batch, device)
                model(x, t)
            test_iter.reset()
"""


@pytest.mark.parametrize("step", ["optimizer.update(model, x, t); loss = model.loss",
                                  "loss = model(x, t); loss.backward(); optimizer.step()"])
def test_a_step_loop_with_an_evaluation_every_epoch_reads_per_step(step: str) -> None:
    found = codes(CUSTOM_LOOP.replace("STEP", step), select=["OFF301"])
    assert [(c, line) for c, line, *_ in found] == [("OFF301", 11)]


def test_an_epoch_loop_around_the_step_loop_still_reads_once_an_epoch() -> None:
    code = """
import chainer
from chainer.dataset import convert


def train(model, optimizer, loader, device, epochs):
    for epoch in range(epochs):
        for batch in loader:
            x, t = convert.concat_examples(batch, device)
            optimizer.update(model, x, t)
        print(float(model.loss.array))
"""
    assert codes(code, select=["OFF301"]) == []
