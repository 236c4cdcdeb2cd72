"""`python -m profiler`: the same as `offload-prof`."""

from .cli import main

raise SystemExit(main())
