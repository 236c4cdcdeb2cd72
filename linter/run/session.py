"""One invocation's state: catalog, configuration, enabled rules, cache, and the findings to show.

The CLI's subparts (linting, fixing, output) all need the same derived
objects; a Session builds them once from the parsed arguments and is the
one place that decides which findings a user sees: per-file ignores are
dropped, suppressed findings are kept only with `--show-suppressed`.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Sequence

from offload_core.catalog import Catalog, load_catalog

from .. import __version__
from ..analysis.apis import ApiIndex
from ..config.pyproject import Config, enabled_codes, load_config
from ..config.rules import settings_for
from ..findings import FileResult, Finding
from .cache import Cache, fingerprint
from .runner import Runner, RunResult, discover


class Session:
    @classmethod
    def configured(
        cls,
        config_path: Path | None,
        args: argparse.Namespace,
        select: Sequence[str] | None = None,
        extend_select: Sequence[str] = (),
        ignore: Sequence[str] = (),
        root: Path | None = None,
    ) -> Session:
        """The session for a configuration file (None: the defaults), as `offload-lint` and its server build it.

        `root` replaces the defaults' folder (the current one) when there is
        no configuration file: the language server roots such a file in its
        workspace folder, not wherever the editor happened to start it.
        Raises ConfigError or CatalogError (one line each).
        """
        catalog = load_catalog()
        config = load_config(config_path, catalog.rules)
        if config.source is None and root is not None:
            config = replace(config, root=root)
        if config.extend_apis:
            catalog = load_catalog(extra_api_files=config.extend_apis)
        enabled = enabled_codes(catalog.rules, config, select, extend_select, ignore)
        return cls(catalog, config, enabled, args)

    def __init__(self, catalog: Catalog, config: Config, enabled: frozenset[str], args: argparse.Namespace) -> None:
        self.catalog = catalog
        self.rules = catalog.rules
        self.config = config
        self.args = args
        self.settings = settings_for(catalog.rules, enabled, config.options)
        self.apis = ApiIndex.from_files(catalog.apis)
        if args.no_cache:
            directory = None
        elif args.cache_dir:
            directory = Path(args.cache_dir)
        else:
            directory = config.cache_dir or config.root / ".offload-lint-cache"
        files = [r.path for r in catalog.rules.values()] + [a.path for a in catalog.apis]
        salt = fingerprint(
            __version__, files, {"enabled": sorted(enabled), "options": {k: dict(v) for k, v in self.settings.options.items()}}
        )
        self.cache = Cache(directory, salt)
        self.applied = None  # set by --fix: an Applied
        self._tests: dict[str, bool | None] = {}  # path -> does its code test something (from the run)

    @property
    def unsafe(self) -> bool:
        return bool(self.args.unsafe_fixes)

    def run(self, paths: Sequence[Path]) -> RunResult:
        files = discover(paths, self.config)
        def drives(result: FileResult) -> bool:
            return self.config.context_of(Path(result.path), result.tests) != "test"

        with Runner(self.settings, self.apis, self.cache, self.args.jobs, progress=True, drives=drives) as runner:
            run = runner.run(files)
        self._tests = {r.path: r.tests for r in run.results}
        return run

    def errors(self, run: RunResult) -> list[FileResult]:
        return [r for r in run.results if r.error is not None]

    def context_of(self, path: str) -> str:
        """The file's context, with what its code says of being a test (once the run has read it)."""
        return self.config.context_of(Path(path), self._tests.get(path))

    def visible(self, result: FileResult) -> list[Finding]:
        """The findings a user sees: minus per-file ignores and the rules the file's context silences."""
        ignored = self.config.ignored_for(Path(result.path)) if self.config.per_file_ignores else frozenset()
        ignored = ignored | self.config.contexts.silenced(self.context_of(result.path))
        return [
            f for f in result.findings
            if f.code not in ignored and (self.args.show_suppressed or not f.suppressed)
        ]

    def items(self, run: RunResult) -> list[tuple[str, Finding]]:
        out = [(r.path, f) for r in run.results for f in self.visible(r)]
        out.sort(key=lambda item: (item[0], item[1].sort_key))
        return out
