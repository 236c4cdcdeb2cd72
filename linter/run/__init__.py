"""Running the linter: one file (`engine`), many files (`runner`, `workers`, `cache`), one invocation (`session`)."""
