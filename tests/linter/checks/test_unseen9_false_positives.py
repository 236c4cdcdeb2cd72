"""Wrong findings of the first run on unseen-9 (issue 31), one small self-written example each.

Each example reproduces the shape of a finding judged wrong on code the
linter had never seen; each failed before its fix. The guards beside them
keep the rules they narrow reporting what they should.
"""

from __future__ import annotations

from ..kit import codes


def test_an_assert_comparing_two_identity_tests_reads_no_device_value() -> None:
    code = """\
        import torch

        class Net(torch.nn.Module):
            def forward(self, x, timesteps=None, y=None):
                assert (y is not None) == (self.num_classes is not None), "labels iff class-conditional"
                emb = self.time_embed(timesteps)
                if self.num_classes is not None:
                    assert y.shape == (x.shape[0],)
                    emb = emb + self.label_emb(y)
                return self.out(x + emb)
        """
    assert codes(code, select=["OFF104"]) == []


def test_an_assert_of_a_device_value_in_a_forward_is_still_reported() -> None:
    code = """\
        import torch

        class Net(torch.nn.Module):
            def forward(self, x, y=None):
                out = self.body(x)
                assert torch.isfinite(out).all(), "non-finite activations"
                return out
        """
    assert [c for c, _, _ in codes(code, select=["OFF104"])] == ["OFF104"]


def test_a_prng_key_handed_to_a_builder_does_not_make_its_objects_device_values() -> None:
    code = """\
        import jax

        def run(builder, environment, total, every, key):
            actor_key, key = jax.random.split(key)
            actor = builder.make_actor(actor_key, environment)
            loop = EnvironmentLoop(environment, actor)
            steps = 0
            while steps < total:
                steps += loop.run(num_steps=min(every, total - steps))
            return steps
        """
    assert codes(code, select=["OFF104"]) == []


def test_values_drawn_with_a_key_are_still_device_values() -> None:
    code = """\
        import jax

        def search(key, shape, steps):
            for _ in range(steps):
                key, sub = jax.random.split(key)
                noise = jax.random.normal(sub, shape)
                if noise.max() > 3.0:
                    break
            return key
        """
    assert [c for c, _, _ in codes(code, select=["OFF104"])] == ["OFF104"]


def test_a_host_built_upload_in_a_function_without_a_loop_is_still_reported() -> None:
    code = """\
        import torch

        def embed(timesteps, half):
            freqs = torch.exp(-torch.arange(half, dtype=torch.float32) / half).to(timesteps.device)
            return timesteps[:, None] * freqs[None]
        """
    assert [c for c, _, _ in codes(code, select=["OFF105"])] == ["OFF105"]
