"""The run's configuration: `[tool.offload-lint]` merged with the command line, and the rule settings it yields."""
