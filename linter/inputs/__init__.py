"""What the linter reads: source files, notebooks, file contexts, path patterns and suppression comments.

Nothing here parses Python with LibCST: the main process reads, decodes and
prefilters every file with these modules before any worker parses one.
"""
