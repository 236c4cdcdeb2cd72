"""A project's own metric reduction (`reduce_mean(loss)` in a `utils.py`) called per step is OFF303.

Self-written cases of the class unseen-12's first run missed (a helper that
clones a tensor, all-reduces the clone and returns it, called in an
evaluation loop of another file that then reads the result with `.item()`).
"""

from __future__ import annotations

import json
from pathlib import Path

from ..kit import run_cli

HELPER = """import torch.distributed as dist


def reduce_mean(tensor):
    rt = tensor.detach().clone()
    dist.all_reduce(rt, op=dist.ReduceOp.SUM)
    return rt / dist.get_world_size()
"""

LOOP = """import torch

from dist_utils import reduce_mean


@torch.no_grad()
def evaluate(model, loader, criterion):
    total = 0.0
    for images, target in loader:
        images = images.cuda(non_blocking=True)
        target = target.cuda(non_blocking=True)
        loss = criterion(model(images), target)
        loss = reduce_mean(loss)
        total += loss.item()
    return total / len(loader)
"""


def lint(tmp_path: Path, helper: str, loop: str) -> list[dict[str, object]]:
    (tmp_path / "dist_utils.py").write_text(helper)
    (tmp_path / "evaluate.py").write_text(loop)
    done = run_cli("--format", "json", "--no-cache", "--exit-zero", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_a_helper_that_all_reduces_a_clone_is_a_collective_for_a_metric_where_the_loop_reads_it(tmp_path: Path) -> None:
    found = lint(tmp_path, HELPER, LOOP)
    assert [(d["code"], d["path"], d["line"]) for d in found] == [("OFF303", "evaluate.py", 13),
                                                                  ("OFF301", "evaluate.py", 14)]
    assert "dist_utils.reduce_mean (dist.all_reduce inside) makes every rank meet every rank" in str(found[0]["message"])
    assert "loss.item() then waits" in str(found[0]["message"])


def test_a_helper_that_reduces_something_else_is_not_one(tmp_path: Path) -> None:
    helper = HELPER.replace("rt = tensor.detach().clone()", "rt = torch.ones(1)").replace(
        "import torch.distributed as dist", "import torch\nimport torch.distributed as dist")
    found = lint(tmp_path, helper, LOOP)
    assert [d["code"] for d in found] == ["OFF301"]


def test_the_reduced_value_left_on_the_device_is_no_finding(tmp_path: Path) -> None:
    loop = LOOP.replace("total += loss.item()", "total += loss.detach()").replace(
        "return total / len(loader)", "return (total / len(loader)).item()")
    assert lint(tmp_path, HELPER, loop) == []
