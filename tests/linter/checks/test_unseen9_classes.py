"""Costs the linter missed on unseen-9 (issue 31), one small self-written example each; each failed before."""

from __future__ import annotations

from ..kit import codes, lint

SAMPLER = """\
    import numpy as np
    import torch


    class Sampler(torch.nn.Module):
        def __init__(self, model, alphas):
            super().__init__()
            self.model = model
            self.register_buffer("alphas", torch.as_tensor(alphas))
            self.host_sigmas = np.linspace(0.0, 1.0, len(alphas))

        @torch.no_grad()
        def sample(self, x, steps):
            for i in range(steps):
                x = self.step(x, i)
            return x

        def step(self, x, index, t=None):
            b = x.shape[0]
            a_t = torch.full((b, 1, 1, 1), self.alphas[index], device=x.device)
            s_t = torch.full((b, 1, 1, 1), self.host_sigmas[index], device=x.device)
            if t is None:
                t = torch.randint(0, 1000, (b,), device=x.device)
            else:
                t = torch.full((b,), fill_value=t, device=x.device)
            return self.model(x, t) * a_t + s_t
    """


def test_a_module_buffer_as_a_fill_value_is_read_every_step() -> None:
    found = lint(SAMPLER, select=["OFF104"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF104", 20)]
    assert found.findings[0].message.startswith(
        "torch.full with the device value `self.alphas[index]` as its fill synchronises with the device on every "
        "call of `Sampler.step` (the loop at line 14 calls it)")


def test_a_host_fill_value_is_no_read() -> None:
    code = """\
        import torch

        def noise_levels(x, steps, level):
            out = []
            for _ in range(steps):
                out.append(torch.full((x.shape[0],), level, device=x.device))
            return out
        """
    assert codes(code, select=["OFF104"]) == []


def test_a_device_fill_under_a_debugging_switch_is_not_a_step_s_cost() -> None:
    code = """\
        import torch

        class Augment(torch.nn.Module):
            def forward(self, images, debug_percentile=None):
                b = images.shape[0]
                if debug_percentile is not None:
                    debug_percentile = torch.as_tensor(debug_percentile, device=images.device)
                s = torch.rand([b], device=images.device)
                if debug_percentile is not None:
                    s = torch.full_like(s, torch.erfinv(debug_percentile * 2 - 1))
                return images * s[:, None, None, None]
        """
    assert codes(code, select=["OFF104"]) == []
