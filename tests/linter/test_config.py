"""Configuration: discovery, selection semantics, options validation, path patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from linter.config import Config, ConfigError, enabled_codes, find_pyproject, load_config, matches

from .kit import CATALOG

RULES = CATALOG.rules


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "pyproject.toml"
    path.write_text(text)
    return path


def test_defaults_leave_off106_out() -> None:
    codes = enabled_codes(RULES, Config(root=Path(".")))
    assert "OFF101" in codes and "OFF106" not in codes and "OFF901" in codes


@pytest.mark.parametrize(
    "select, extend, ignore, present, absent",
    [
        (["OFF1"], [], [], {"OFF101", "OFF105"}, {"OFF106", "OFF201"}),  # a prefix takes default-on rules
        (["OFF106"], [], [], {"OFF106"}, {"OFF101"}),  # a full code selects an off-by-default rule
        (None, ["OFF106"], [], {"OFF101", "OFF106"}, set()),
        (["ALL"], [], ["OFF2"], {"OFF106", "OFF101"}, {"OFF201", "OFF205"}),
        (None, [], ["off101"], {"OFF102"}, {"OFF101"}),  # codes are case-insensitive
    ],
)
def test_selection(select, extend, ignore, present, absent) -> None:  # type: ignore[no-untyped-def]
    codes = enabled_codes(RULES, Config(root=Path(".")), select, extend, ignore)
    assert present <= codes and not (absent & codes)


def test_options_reach_the_settings_and_are_checked(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[tool.offload-lint.options.OFF104]\nconversions = ['int']\n"), RULES)
    assert dict(config.options["OFF104"]) == {"conversions": ["int"]}
    with pytest.raises(ConfigError, match="must be a list of str"):
        load_config(write(tmp_path, "[tool.offload-lint.options.OFF104]\nconversions = [1]\n"), RULES)
    with pytest.raises(ConfigError, match="options for unknown rule OFF999"):
        load_config(write(tmp_path, "[tool.offload-lint.options.OFF999]\nx = 1\n"), RULES)


def test_discovery_walks_up_to_the_nearest_section(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text("[tool.offload-lint]\nignore = ['OFF104']\n")
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    (tmp_path / "a" / "pyproject.toml").write_text("[project]\nname = 'x'\n")  # no section: keep looking
    assert find_pyproject([inner]) == tmp_path / "pyproject.toml"
    config = load_config(find_pyproject([inner]), RULES)
    assert config.root == tmp_path.resolve() and config.ignore == ("OFF104",)


def test_patterns() -> None:
    assert matches("build/x.py", ["build"]) and matches("src/build/x.py", ["build"])
    assert matches("tests/data/x.py", ["tests/data"]) and not matches("src/tests/data/x.py", ["tests/data"])
    assert matches("tests/test_a.py", ["tests/*.py"]) and matches("gen_pb2.py", ["*_pb2.py"])
    assert not matches("src/mod.py", ["tests", "*_pb2.py"])
    config = Config(root=Path("/r"), per_file_ignores=(("tests/*", ("OFF101",)), ("*.pyi", ("OFF102",))))
    assert config.ignored_for(Path("/r/tests/t.py")) == {"OFF101"}
    assert config.ignored_for(Path("/r/src/a.pyi")) == {"OFF102"}
