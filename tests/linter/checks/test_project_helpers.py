"""A project's own copy helpers (`to_cupy(x)`, `backend.to_device(x, device)`, `first_replica(metrics)`) are copies
where they are called.

Small examples written for these tests, in the shapes seen on unseen code
(issue 31): a CuPy operator library converting its inputs through a helper
of its `utils` module, an imaging library whose linear operators hand a
set-up trajectory to `backend.to_device` on every application, and a JAX
RL library whose learners download their metrics through a helper on every
step of a loop that lives in a file without JAX. Each failed before helpers
were summarised across files (the helper's own copy is not in the loop's
file, so nothing was reported).
"""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

from ..kit import run_cli

BACKEND = """\
    import cupy as cp
    import numpy as np

    cpu_device = -1


    def to_gpu(x):
        if cp.get_array_module(x) is np:
            x = cp.asarray(x)
        return x


    def to_device(x, device=cpu_device):
        if device == cpu_device:
            return x.get() if cp.get_array_module(x) is cp else x
        with cp.cuda.Device(device):
            return cp.asarray(x)


    def get_device(x):
        return cp.cuda.Device(x.device.id) if cp.get_array_module(x) is cp else cpu_device
    """


def _project(tmp_path: Path, **files: str) -> Path:
    (tmp_path / "lib").mkdir()
    (tmp_path / "lib" / "__init__.py").write_text("from lib.backend import *  # noqa\n")
    (tmp_path / "lib" / "backend.py").write_text(textwrap.dedent(BACKEND))
    for name, text in files.items():
        (tmp_path / "lib" / f"{name}.py").write_text(textwrap.dedent(text))
    return tmp_path


def _findings(root: Path, *args: str) -> list[dict[str, object]]:
    proc = run_cli("--format", "json", *args, "--select", "OFF101", ".", cwd=root)
    assert proc.returncode in (0, 1), proc.stderr
    return json.loads(proc.stdout)  # type: ignore[no-any-return]


SOLVER = """\
    import numpy as np
    import cupy as cp

    from lib.backend import to_gpu


    def smooth(y, steps):
        weights = np.hanning(64)
        for _ in range(steps):
            w = to_gpu(weights)
            y = cp.convolve(y, w, mode="same")
        return y


    def per_batch(batches):
        out = []
        for batch in batches:
            out.append(to_gpu(batch).sum())
        return out
    """


def test_a_helper_upload_of_loop_invariant_data_is_reported_at_its_call(tmp_path: Path) -> None:
    root = _project(tmp_path, solver=SOLVER)
    found = _findings(root, "--no-cache")
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("lib/solver.py", 10, "OFF101")]
    assert found[0]["message"].startswith(  # type: ignore[union-attr]
        "lib.backend.to_gpu (cupy.asarray inside) copies host->device on every iteration of the loop at line 9")


OPERATOR = """\
    import numpy as np
    import cupy as cp

    import lib as lb
    from lib import backend


    class Resample:
        def __init__(self, coord):
            self.coord = np.asarray(coord)

        def apply(self, x):
            return self._apply(x)

        def _apply(self, x):
            coord = backend.to_device(self.coord, backend.get_device(x))
            return x[..., :1] * coord.sum()

        def gather(self, x):
            host = lb.to_device(x, lb.cpu_device)
            return host


    def iterate(coord, x, steps):
        op = Resample(coord)
        for _ in range(steps):
            x = op.apply(x)
            kept = op.gather(x)
        return x, kept
    """


def test_a_per_step_method_uploading_set_up_data_through_a_re_exported_helper(tmp_path: Path) -> None:
    root = _project(tmp_path, operator=OPERATOR)
    found = _findings(root, "--no-cache")
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("lib/operator.py", 16, "OFF101")]
    message = str(found[0]["message"])
    assert message.startswith("lib.backend.to_device (cupy.asarray inside) copies host->device on every call of "
                              "`Resample._apply`") and "between calls" in message


def test_the_cache_forgets_a_helper_that_no_longer_uploads(tmp_path: Path) -> None:
    root = _project(tmp_path, solver=SOLVER)
    cache = ["--cache-dir", str(tmp_path / "cache")]
    assert [f["line"] for f in _findings(root, *cache)] == [10]
    assert [f["line"] for f in _findings(root, *cache)] == [10], "a warm run keeps what the helper makes of the call"
    backend = root / "lib" / "backend.py"
    backend.write_text(backend.read_text().replace("x = cp.asarray(x)", "x = cp.asarray(x).get()"))
    assert _findings(root, *cache) == [], "the calling file is linted again once its helper changes"


def test_a_helper_that_puts_data_on_the_cpu_device_is_no_upload(tmp_path: Path) -> None:
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "__init__.py").write_text("")
    (tmp_path / "proj" / "utils.py").write_text(textwrap.dedent("""\
        import jax


        def put_cpu(x):
            return jax.device_put(x, jax.local_devices(backend="cpu")[0])
        """))
    (tmp_path / "proj" / "train.py").write_text(textwrap.dedent("""\
        import jax
        from proj import utils as u


        def report(schedules, step, log):
            for fn in schedules:
                log(fn(u.put_cpu(step - 1)))
        """))
    assert _findings(tmp_path, "--no-cache") == []


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text))


LEARNERS = {
    "agents/__init__.py": "from agents.core import Learner\n",
    "agents/core.py": """\
        import itertools


        class Learner:
            def step(self):
                raise NotImplementedError

            def run(self, num_steps=None):
                iterator = range(num_steps) if num_steps is not None else itertools.count()
                for _ in iterator:
                    self.step()
        """,
    "agents/jaxutils.py": """\
        import jax


        def first_replica(nest, as_numpy=True):
            first = jax.tree_util.tree_map(lambda x: x[0], nest)
            return jax.device_get(first) if as_numpy else first
        """,
    "agents/sgd/learning.py": """\
        import jax
        import agents
        from agents import jaxutils


        class SGDLearner(agents.Learner):
            def __init__(self, update, state, iterator, logger):
                self._update, self._state, self._iterator, self._logger = update, state, iterator, logger

            def step(self):
                self._state, metrics = self._update(self._state, next(self._iterator))
                metrics = jaxutils.first_replica(metrics)
                self._logger.write(metrics)

            def params(self):
                return jaxutils.first_replica(self._state.params, as_numpy=False)
        """,
}


def test_a_download_helper_in_a_step_that_a_loop_without_gpu_code_runs(tmp_path: Path) -> None:
    """The loop is in a file with no JAX import (never linted), the base class reached through a package re-export."""
    _write(tmp_path, LEARNERS)
    proc = run_cli("--format", "json", "--no-cache", "--select", "OFF301", ".", cwd=tmp_path)
    found = json.loads(proc.stdout)
    assert [(f["path"], f["line"], f["code"]) for f in found] == [("agents/sgd/learning.py", 12, "OFF301")]
    assert ("agents.jaxutils.first_replica (jax.device_get inside) waits for the device on every call of "
            "`SGDLearner.step` (a loop in `Learner.run` (agents/core.py) calls it") in found[0]["message"]


def test_a_call_that_turns_the_helper_s_copy_off_copies_nothing(tmp_path: Path) -> None:
    _write(tmp_path, {"agents/__init__.py": "", "agents/jaxutils.py": LEARNERS["agents/jaxutils.py"],
                      "agents/train.py": """\
        import jax
        from agents.jaxutils import first_replica


        def train(update, state, batches, log):
            for batch in batches:
                state, metrics = update(state, batch)
                log(first_replica(metrics))
                log(first_replica(metrics, as_numpy=False))
            return state
        """})
    proc = run_cli("--format", "json", "--no-cache", "--select", "OFF301", ".", cwd=tmp_path)
    assert [(f["path"], f["line"]) for f in json.loads(proc.stdout)] == [("agents/train.py", 8)]


def test_a_warm_run_keeps_and_updates_what_a_file_without_gpu_code_tells_the_graph(tmp_path: Path) -> None:
    _write(tmp_path, LEARNERS)
    cache = ["--cache-dir", str(tmp_path / "cache")]

    def lines() -> list[int]:
        proc = run_cli("--format", "json", *cache, "--select", "OFF301", ".", cwd=tmp_path)
        return [f["line"] for f in json.loads(proc.stdout)]

    assert lines() == [12]
    assert lines() == [12], "the cached summary of agents/core.py still makes the step hot"
    core = tmp_path / "agents" / "core.py"
    core.write_text(core.read_text().replace("for _ in iterator:\n            self.step()", "return iterator"))
    assert lines() == [], "a changed file without GPU code is read again"
