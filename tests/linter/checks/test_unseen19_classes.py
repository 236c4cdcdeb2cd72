"""Classes the linter got wrong on unseen-19 (issue 31), one small self-written example each.

Unseen-19's fine-tuning recipes restore their step counters from a checkpoint
(`ckpt = self._client.load_base_checkpoint(); self.max_steps = ckpt["max_steps"]`)
and stop an epoch when `(idx + 1) // accum == self.max_steps`. The first run
(d024306) took the counters for tensors, because the loader was handed the
model, and reported every recipe's stopping test as a wait (9 wrong findings).
A checkpoint loader's dict holds numbers and state dicts, as `torch.load`'s
does. The example keeps that shape without any of the repository's code; it
failed on d024306, and the reported case guards a real device stopping test.

The same recipes read the running loss with `.item()` once per optimizer step for
their progress bar (14 labelled costs), and the linter reported none of them
(f4a968a), for three reasons each example below isolates: the model was
`self._model`, which the model names did not match (a private attribute);
the read sat under `if (idx + 1) % self._grad_accum_steps == 0:`, taken for a
periodic log's test although it is the optimizer's step, taken every step
(the divisor is 1 by default); and the value went into a dict handed to
`self._logger.log_dict(log_dict, ...)`, where the method's own name was taken
for a use of the variable `log_dict`, a use that is no metric.
"""

from __future__ import annotations

import pytest

from ..kit import codes, lint

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


STEPS = """
import torch


class Trainer:
    def _loss(self, batch):
        logits = self._model(**batch)
        return self._loss_fn(logits, batch["labels"])

    def train(self, loader, bar):
        running = 0.0
        for idx, batch in enumerate(loader):
            loss = self._loss(batch)
            loss.backward()
            running += loss.detach()
            if STEP:
                self._optim.step()
                self.step_count += 1
                shown = running.item()
                bar.set_description(f"loss {shown:.3f}")
                if self.step_count % self._log_every == 0:
                    record = {"loss": shown, "lr": self._lr}
                    self._logger.log_dict(record, step=self.step_count)
                running = 0.0
"""


@pytest.mark.parametrize("step", ["(idx + 1) % self._grad_accum_steps == 0", "idx % gradient_accumulation == 0",
                                  "True"])
def test_a_read_per_optimizer_step_of_a_private_model_is_a_metric_read(step: str) -> None:
    found = codes(STEPS.replace("STEP", step), select=["OFF301"])
    assert [(c, line) for c, line, *_ in found] == [("OFF301", 19)]


def test_a_read_every_n_optimizer_steps_is_still_periodic() -> None:
    assert codes(STEPS.replace("STEP", "(idx + 1) % self._log_every == 0"), select=["OFF301"]) == []


def test_a_method_or_keyword_named_as_the_variable_is_no_use_of_it() -> None:
    """`self._logger.log_dict(record, ...)` with the dict named `log_dict`, and a keyword `shown=`."""
    code = (STEPS.replace("STEP", "True").replace("record", "log_dict")
            .replace("bar.set_description(f\"loss {shown:.3f}\")", "bar.set_postfix(shown=shown)"))
    assert [(c, line) for c, line, *_ in codes(code, select=["OFF301"])] == [("OFF301", 19)]


CACHE = """
import torch


def train(model, loader, opt):
    for step, (x, y) in enumerate(loader):
        loss = model(x.cuda()).sum()
        loss.backward()
        opt.step()
        EMPTY
"""


def test_emptying_the_allocators_cache_every_step_waits_for_the_device() -> None:
    """The RL recipes call `torch.cuda.empty_cache()` several times a step (10 labelled costs): cudaFree waits."""
    found = codes(CACHE.replace("EMPTY", "torch.cuda.empty_cache()"), select=["OFF104"])
    assert [(c, line) for c, line, *_ in found] == [("OFF104", 10)]
    (finding,) = lint(CACHE.replace("EMPTY", "torch.cuda.empty_cache()"), select=["OFF104"]).findings
    assert "the caching allocator reuses the freed blocks" in finding.message
    periodic = CACHE.replace("EMPTY", "if step % 500 == 0:\n            torch.cuda.empty_cache()")
    assert codes(periodic, select=["OFF104"]) == []


def test_what_an_error_path_runs_is_no_per_iteration_cost() -> None:
    """An out-of-memory handler, and a retry loop whose `try` returns: they run when something failed."""
    code = """
import torch


def run(args, validate, loader, model):
    batch = 256
    while batch:
        try:
            torch.cuda.empty_cache()
            return validate(args, batch)
        except RuntimeError:
            batch //= 2
    for x in loader:
        try:
            y = model(x.cuda())
        except torch.cuda.OutOfMemoryError:
            torch.cuda.empty_cache()
            continue
        torch.cuda.empty_cache()
"""
    assert [(c, line) for c, line, *_ in codes(code, select=["OFF104"])] == [("OFF104", 19)]


def test_emptying_the_cache_between_shards_or_layers_of_a_one_off_phase_is_its_point() -> None:
    """OLMo's checkpoint restore and GPTQ's layer-by-layer quantisation free memory on purpose (4 wrong findings
    at 090c38a): in a function that restores, saves, quantises or profiles, or in a helper only such a loop calls."""
    code = """
import torch


def free_memory():
    torch.cuda.empty_cache()


def restore_checkpoint(model, shards):
    for shard in shards:
        model.load_shard(torch.load(shard, map_location="cuda"))
        free_memory()


def quantize(layers, batches):
    for layer in layers:
        layer.cuda()
        for x in batches:
            layer(x.cuda())
        layer.cpu()
        torch.cuda.empty_cache()
"""
    assert codes(code, select=["OFF104"]) == []
