"""Classes the linter missed on unseen-15 (issue 31), one small self-written example each.

Unseen-15 (segment-anything, cuQuantum, scenic, NVIDIA Warp) was labelled
blind; the first run caught none of its 97 costs. Most were one shape: an
evaluation loop appending `utils.fetch(metrics)` per batch, where `fetch`,
in another module, returns `jax.device_get(unreplicate(metrics))`. The
examples below keep that shape without any of the repositories' code; each
failed on the commit before the class was built (33915a5), and the silent
cases guard its false positives (a helper's download that the loop keeps as
data, not as a metric).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ..kit import lint, run_cli


def _project(tmp_path: Path, files: dict[str, str]) -> list[dict[str, object]]:
    for name, code in files.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(code))
    proc = run_cli("--format", "json", "--no-cache", "--select", "OFF301,OFF101", ".", cwd=tmp_path)
    return json.loads(proc.stdout)


HELPERS = """\
    import jax
    from flax import jax_utils


    def fetch_first(tree):
        return jax.device_get(jax_utils.unreplicate(tree))
    """


def _eval_loop(tmp_path: Path, kept: str) -> list[dict[str, object]]:
    """A package whose trainer appends `helpers.fetch_first(out)` per batch to the list named `kept`."""
    return _project(tmp_path, {
        "proj/__init__.py": "",
        "proj/helpers.py": HELPERS,
        "proj/trainer.py": f"""\
            import jax
            from proj import helpers


            def evaluate(state, batches, eval_step, n):
                {kept} = []
                for _ in range(n):
                    out = eval_step(state, next(batches))
                    {kept}.append(helpers.fetch_first(out))
                return {kept}
            """,
    })


def test_a_download_helper_of_another_module_is_said_where_the_eval_loop_keeps_its_metrics(tmp_path: Path) -> None:
    found = _eval_loop(tmp_path, "eval_metrics")
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("proj/trainer.py", 9, "OFF301")]
    assert "proj.helpers.fetch_first (jax.device_get inside)" in found[0]["message"]
    assert "`jax.device_get` them once" in found[0]["message"]


def test_confusion_matrices_kept_per_batch_are_metrics(tmp_path: Path) -> None:
    assert [(f["line"], f["code"]) for f in _eval_loop(tmp_path, "confusion_matrices")] == [(9, "OFF301")]


def test_a_download_helper_whose_result_the_loop_keeps_as_data_is_not_a_metric(tmp_path: Path) -> None:
    assert _eval_loop(tmp_path, "outputs") == []


def test_a_helper_of_the_same_file_that_hands_back_a_downloaded_array_kept_as_data_is_not_a_metric() -> None:
    code = """\
        import cupy


        def flipped(img, axis):
            result = cupy.flip(cupy.asarray(img), axis)
            return cupy.asnumpy(result)


        def flip_all(images, axis):
            for i in range(len(images)):
                images[i] = flipped(images[i], axis)
            return images
        """
    assert lint(code, select=["OFF301"]).findings == ()


WARP_EXAMPLE = """\
    import warp as wp


    class Example:
        def __init__(self, n):
            self.loss = wp.zeros(1, dtype=float, requires_grad=True)
            self.n = n

        def step(self):
            wp.launch(compute_loss, dim=self.n, inputs=[self.loss])


    def train(iterations):
        example = Example(64)
        for i in range(iterations):
            example.step()
            print(f"iteration {i}: loss {example.loss.numpy()[0]:.4f}")
    """


def test_a_warp_loss_read_back_every_iteration_to_print_is_a_metric_read() -> None:
    found = lint(textwrap.dedent(WARP_EXAMPLE), select=["OFF301", "OFF101"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF301", 17)]
    assert "warp.array.numpy" in found.findings[0].message


def test_numpy_method_of_an_unknown_object_is_not_warp_where_torch_is_imported() -> None:
    code = "import torch\n" + textwrap.dedent(WARP_EXAMPLE)
    assert lint(code, select=["OFF301", "OFF101"]).findings == ()


def test_a_download_of_a_field_other_work_only_reads_is_still_loop_invariant() -> None:
    code = """\
        import torch


        def rescale(merged, inputs, tfms):
            out = []
            for inp, tfm in zip(inputs, tfms):
                boxes = merged.pred_boxes.tensor.cpu().numpy()
                out.append(make_instances(inp.shape, tfm.apply(boxes), merged.scores))
            return out
        """
    found = lint(code, select=["OFF101"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF101", 7)]


PERIODIC = """\
    import jax
    import numpy as np


    def train(state, batches, train_step, total, log_every, writer):
        step_fn = jax.pmap(train_step, axis_name="batch")
        for step in range(total):
            state, metrics, retrieved = step_fn(state, next(batches))
            retrieved = np.asarray(retrieved[0][0])
            if step % log_every == 0:
                writer.write_images(step, {"retrieved": np.expand_dims(retrieved, 0)})
            del retrieved
    """


def test_a_download_every_step_that_only_a_periodic_branch_uses_is_a_read_to_move_there() -> None:
    found = lint(textwrap.dedent(PERIODIC), select=["OFF301"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF301", 9)]
    assert "only the branch at line 10, taken every N iterations, uses it: copy it there" in found.findings[0].message


def test_a_download_every_step_that_every_step_uses_is_not_that_read() -> None:
    code = textwrap.dedent(PERIODIC).replace("if step % log_every == 0:", "if step >= 0:")
    assert lint(code, select=["OFF301"]).findings == ()


def test_a_residual_read_on_the_first_iterations_of_every_n_is_periodic() -> None:
    code = """\
        import warp as wp


        def solve(atol_sq, step, maxiter, check_every, cycle):
            r_norm_sq = wp.zeros(1, dtype=float)

            def do_cycle():
                wp.launch(step, dim=1, inputs=[r_norm_sq])

            it = 0
            while it < maxiter:
                do_cycle()
                it += cycle
                if (it % check_every) < cycle:
                    host = r_norm_sq.numpy()
                    if (host <= atol_sq).all():
                        break
            return it
        """
    assert lint(code).findings == ()
    # read every iteration, the residual is no loop-invariant download: the function beside the loop writes it
    assert "OFF101" not in [f.code for f in lint(code.replace("(it % check_every) < cycle", "it > 0")).findings]


def test_a_chainer_loss_read_every_batch_is_a_metric_read() -> None:
    """Chainer (unseen-14): `float(loss.array)` summed per batch; the Variable's array is on the model's device."""
    code = """\
        import chainer


        def evaluate(model, batches, device):
            total = 0.0
            for batch in batches:
                x, t = chainer.dataset.concat_examples(batch, device)
                loss = model(x, t)
                total += float(loss.array) * len(t)
            return total
        """
    found = lint(code, select=["OFF301"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF301", 9)]
    assert "a CuPy scalar" in found.findings[0].message


def test_a_chainer_download_helper_is_a_copy() -> None:
    code = """\
        from chainer.backends import cuda


        def collect(model, batches):
            losses = []
            for x in batches:
                losses.append(cuda.to_cpu(model(x).array))
            return losses
        """
    found = lint(code, select=["OFF301"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF301", 7)]
    assert "chainer.backends.cuda.to_cpu" in found.findings[0].message


def test_a_downloaded_log_record_filled_in_and_written_every_update_is_a_metric_read() -> None:
    """dm-haiku's IMPALA learner (unseen-16): `logs = jax.device_get(logs); logs.update(...); logger.write(logs)`."""
    code = """\
        import jax


        def run(learner, params, opt_state, queue, logger, iterations):
            for _ in range(iterations):
                params, opt_state, logs = learner.update(params, opt_state, queue.get())
                logs = jax.device_get(logs)
                logs.update({"num_frames": 10})
                logs["step"] = 1
                logger.write(logs)
            return params
        """
    found = lint(code, select=["OFF301"])
    assert [(f.code, f.line) for f in found.findings] == [("OFF301", 7)]
