"""`python -m offload_core.suite`: the same as `offload-bench`."""

from .cli import main

raise SystemExit(main())
