"""Classes the linter got wrong on unseen-20 (issue 31), one small self-written example each.

Chainer code asks where its arrays live by comparing modules: `if xp != np:`
after `xp = cuda.get_array_module(mask)`, or `if cuda.get_array_module(a) != np:`
before moving ground truth to the GPU. The first run (f4a968a) read the
module of a CuPy array as a CuPy value and the comparison as a test of the
device's data, and reported each branch as a wait (2 wrong findings in
chainercv). A comparison of modules is a Python bool made on the host.
"""

from __future__ import annotations

import pytest

from ..kit import codes

SCALE = """
import numpy as np
import chainer
from chainer.backends import cuda


def rescale(masks, boxes):
    xp = chainer.backends.cuda.get_array_module(masks)
    masks = cuda.to_cpu(masks)
    out = xp.zeros((len(masks), 8, 8), dtype=bool)
    for i, (m, b) in enumerate(zip(masks, boxes)):
        small = m[b[0]:b[2], b[1]:b[3]]
        if TEST:
            small = xp.array(small)
        out[i, :small.shape[0], :small.shape[1]] = small
    return out
"""


@pytest.mark.parametrize("test", ["xp != np", "xp is not np", "cuda.get_array_module(out) != np",
                                  "np != cuda.get_array_module(out)"])
def test_a_comparison_of_array_modules_is_a_host_bool(test: str) -> None:
    assert codes(SCALE.replace("TEST", test), select=["OFF104"]) == []


def test_a_comparison_of_the_arrays_still_waits() -> None:
    found = codes(SCALE.replace("TEST", "xp.asarray(small).any()"), select=["OFF104"])
    assert [(c, line) for c, line, *_ in found] == [("OFF104", 13)]
