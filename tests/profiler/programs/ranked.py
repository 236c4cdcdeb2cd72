"""One rank of a pretend distributed job: naive launches whose count depends on the rank.

Rank r (from RANK, as torchrun sets it) launches `3 + r * extra` times
from the launch line, so a trace says exactly which rank recorded what;
`extra` is RANKED_EXTRA from the environment (default 0: every rank
alike), so that jobs of different shapes run one command line.
"""

import os

import numpy as np

from offload_core import In, InOut, kernel, offload


@kernel
def daxpy(y: InOut, x: In, a: float) -> None:
    y += a * x


rank = int(os.environ["RANK"])
extra = int(os.environ.get("RANKED_EXTRA", "0"))
x = np.ones(1024)
y = np.zeros(1024)
for step in range(3 + rank * extra):
    offload(daxpy, y, x, 2.0)  # the launch line
