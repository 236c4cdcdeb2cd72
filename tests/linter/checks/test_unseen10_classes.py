"""Costs the linter missed and findings it got wrong on unseen-10 (issue 31): one small self-written example each;
each failed before the change that it pins."""

from __future__ import annotations

import sys
import textwrap

import libcst as cst
import pytest

from linter.analysis.project import KernelIndex
from linter.analysis.semantics import Semantics
from linter.analysis.walk import build_index

from ..kit import APIS, codes, lint

CLAMP = """\
    import cupy as cp

    from .gpu import getArrayModule


    class Engine:
        def correct(self, patch, shifts):
            xp = getArrayModule(patch)
            grad = xp.sum(patch * shifts)
            if abs(grad) > 3:
                grad = 3 * grad / abs(grad)
            return grad

        def run(self, patches, shifts):
            for p in patches:
                self.correct(p, shifts)
    """


def test_a_branch_that_only_picks_a_device_value_is_a_sync_the_device_could_avoid() -> None:
    found = lint(CLAMP, select=["OFF104"])
    assert [(f.code, f.line, f.column) for f in found.findings] == [("OFF104", 10, 12)]
    assert found.findings[0].message.startswith(
        "the branch `abs(grad) > 3` synchronises with the device on every call of `Engine.correct` (the loop at "
        "line 15 calls it); the branch only picks a value")
    assert "`where(cond, a, b)`, `clip`" in found.findings[0].message


def test_a_project_s_own_spelling_of_get_array_module_computes_on_the_device() -> None:
    named = CLAMP.replace("xp", "mod")  # not the conventional `xp`: only the helper's name says CuPy
    assert codes(named, select=["OFF104"]) == [("OFF104", 10, 12)]
    assert codes(named.replace("getArrayModule", "module_for"), select=["OFF104"]) == []


def test_a_branch_with_a_host_effect_is_control_flow_not_a_select() -> None:
    code = """\
        import cupy as cp

        def run(grads, r, log):
            for g in grads:
                step = cp.sum(g)
                if step > r:
                    step = r
                    log.append("clipped")
        """
    assert codes(code, select=["OFF104"]) == []


def test_an_equality_with_the_loop_counter_runs_once() -> None:
    code = """\
        import jax

        class Engine:
            def decode(self):
                for i in range(self.steps):
                    self.state, tokens = self.generate(self.params, self.state)
                    if i == self.steps - 1:
                        jax.block_until_ready(tokens)
                    self.queue.put(tokens)
        """
    assert codes(code, select=["OFF104"]) == []
    assert codes(code.replace("if i == self.steps - 1:", "if i >= 0:"), select=["OFF104"]) == [("OFF104", 8, 17)]


def test_a_flag_the_loop_only_clears_guards_the_first_iteration() -> None:
    code = """\
        import torch

        def generate(model, tokens, device, steps):
            prefill = True
            for _ in range(steps):
                tokens = model(tokens)
                if prefill:
                    prefill = False
                    pos = torch.tensor([tokens.shape[1]], device=device)
                else:
                    pos.add_(1)
            return tokens, pos
        """
    assert codes(code, select=["OFF101", "OFF108"]) == []
    assert codes(code.replace("prefill = False", "prefill = tokens.shape[1] > 3"),
                 select=["OFF101", "OFF108"]) != []


def test_reads_in_a_loop_over_a_dict_s_entries_are_once_per_call() -> None:
    code = """\
        import torch

        def fit(fabric, device, names):
            counts = {"raw": torch.tensor(0, device=device), "padded": torch.tensor(0, device=device)}
            totals = {}
            for key in counts:
                totals[key] = fabric.all_reduce(counts[key], reduce_op="sum").item()
            return totals
        """
    assert codes(code, select=["OFF301", "OFF104"]) == []
    # over names handed in, nothing says how many: a read per iteration
    assert codes(code.replace("for key in counts:", "for key in names:"), select=["OFF301", "OFF104"]) == [
        ("OFF301", 7, 23)]


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="only an interpreter older than the syntax rejects it")
def test_newer_python_syntax_is_linted_not_refused() -> None:
    code = """\
        import cupy as cp

        type Shape = tuple[int, int]


        def total(xs):
            s = 0.0
            for x in xs:
                s += float(cp.asarray(x).sum())
            return s
        """
    assert codes(code) == [("OFF301", 9, 14)]


def test_text_that_no_parser_takes_is_still_a_syntax_error() -> None:
    assert codes("import cupy\nx = (\n") == [("OFF901", 2, 5)]


def test_what_a_model_factory_is_given_is_configuration_not_device_data() -> None:
    code = textwrap.dedent("""\
        import torch
        from timm.models import create_model

        def validate(args, loader):
            model = create_model(args.model, pretrained=args.pretrained).cuda()
            for images, target in loader:
                output = model(images.cuda())
                print(args.log_freq, output.shape)
        """)
    module = cst.parse_module(code)
    index = build_index(module)
    sem = Semantics(index, APIS, KernelIndex(), "validate.py", None)
    scope = next(s for s in index.scopes if s.name == "validate")
    config = cst.parse_expression("args.log_freq")
    assert sem.values.device_lib(config, scope) is None
    # what the model computes is on the device
    assert sem.values.device_lib(cst.parse_expression("output"), scope) == "torch"


def test_a_select_on_a_reduction_of_a_device_mask_in_a_forward() -> None:
    code = """\
        import torch
        from torch import nn

        class PatchEmbed(nn.Module):
            def forward(self, x, coords, valid=None):
                if valid is None:
                    sentinel = (coords == -1).all(dim=-1)
                    if sentinel.any():
                        valid = ~sentinel
                    else:
                        valid = torch.ones(coords.shape[:2], dtype=torch.bool, device=coords.device)
                return self.proj(x) * valid[..., None]
        """
    assert codes(code, select=["OFF104"]) == [("OFF104", 8, 16)]
