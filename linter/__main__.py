"""`python -m linter` runs `offload-lint`."""

from .cli import main

raise SystemExit(main())
