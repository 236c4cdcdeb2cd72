"""The profiler's version, in a module of its own so that every room can import it from below.

The package's `__init__` re-exports it but sits above the rooms: it is
also the IPython extension (`%load_ext profiler`), which loads the
notebook magics from the entry room.
"""

__version__ = "0.1.0"
