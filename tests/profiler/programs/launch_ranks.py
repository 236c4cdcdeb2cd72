"""A stand-in for torchrun where PyTorch is not installed: start WORLD ranks of a program, each with its rank variables.

Usage: launch_ranks.py WORLD PROGRAM [ARGS...]. Each rank is a fresh
interpreter (`subprocess`, as torchrun starts its workers) with RANK,
LOCAL_RANK and WORLD_SIZE set and the rest of the environment inherited;
the exit status is the worst of the ranks'.
"""

import os
import subprocess
import sys

world = int(sys.argv[1])
procs = [subprocess.Popen([sys.executable, *sys.argv[2:]],
                          env=dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(world)))
         for r in range(world)]
sys.exit(max(p.wait() for p in procs))
