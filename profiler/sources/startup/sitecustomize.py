"""offload-prof's start-up hook for the target's child processes (first on their `PYTHONPATH` while recording).

Python imports `sitecustomize` at start-up from the first folder of its
path that has one; `offload-prof run` puts this folder first for the
target, so every Python process the target starts, and their children,
runs this before its own code. It hands over to
`profiler.sources.children.start_child`, which only arms a post-import
hook (nothing is recorded until the process imports offload_core or a
CUDA library), and then runs the `sitecustomize` this one hides, if
there is one further down the path, as Python would have.

A failure here must never stop the child: it is one line on stderr and
the child runs unrecorded.
"""

import os
import sys


def _arm() -> None:
    text = os.environ.get("OFFLOAD_PROF_CHILDREN")
    if not text:
        return
    try:
        import json

        root = json.loads(text).get("root")
        if root and root not in sys.path:
            sys.path.append(root)  # after the program's own folders, so that it finds its own modules first
        from profiler.sources.children import start_child

        start_child(text)
    except Exception as exc:
        sys.stderr.write(f"offload-prof: pid {os.getpid()} is not recorded: {type(exc).__name__}: {exc}\n")


def _chain() -> None:
    """Run the `sitecustomize` further down the path that this module hides (Debian's, a virtualenv's)."""
    import importlib.machinery
    import importlib.util

    here = os.path.dirname(os.path.abspath(__file__))
    rest = [p for p in sys.path if os.path.abspath(p or os.curdir) != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["sitecustomize"] = module
    spec.loader.exec_module(module)


_arm()
try:
    _chain()
except Exception as exc:
    sys.stderr.write(f"offload-prof: the site's own sitecustomize failed: {type(exc).__name__}: {exc}\n")
