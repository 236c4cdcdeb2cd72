"""Classes the linter got wrong on unseen-19 (issue 31), one small self-written example each.

Unseen-19's fine-tuning recipes restore their step counters from a checkpoint
(`ckpt = self._client.load_base_checkpoint(); self.max_steps = ckpt["max_steps"]`)
and stop an epoch when `(idx + 1) // accum == self.max_steps`. The first run
(d024306) took the counters for tensors, because the loader was handed the
model, and reported every recipe's stopping test as a wait (9 wrong findings).
A checkpoint loader's dict holds numbers and state dicts, as `torch.load`'s
does. The example keeps that shape without any of the repository's code; it
failed on d024306, and the reported case guards a real device stopping test.
"""

from __future__ import annotations

from ..kit import codes

RECIPE = """
import torch


class Recipe:
    def setup(self, model):
        self._model = model.cuda()
        ckpt = self._client.load_distributed_checkpoint(self._model)
        self.max_steps = ckpt["max_steps"]

    def train(self, loader, accum):
        for idx, batch in enumerate(loader):
            loss = self._model(batch.cuda())
            loss.backward()
            if STOP:
                break
"""


def test_counters_restored_from_a_checkpoint_loader_are_host_numbers() -> None:
    code = RECIPE.replace("STOP", "(idx + 1) // accum == self.max_steps")
    assert codes(code, select=["OFF104"]) == []


def test_a_stopping_test_of_the_loss_still_waits() -> None:
    code = RECIPE.replace("STOP", "loss < self.max_steps")
    assert [c for c, *_ in codes(code, select=["OFF104"])] == ["OFF104"]
