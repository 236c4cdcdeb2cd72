"""Configuration: discovery, selection semantics, options validation, path patterns."""

from __future__ import annotations

from pathlib import Path

import pytest

from linter.config.pyproject import Config, ConfigError, enabled_codes, find_pyproject, load_config, matches

from ..kit import CATALOG

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


@pytest.mark.parametrize(
    "toml, message",
    [
        ("select = 'OFF101'", "'select' must be an array of strings, got a string (write ['OFF101'])"),
        ("ignore = 'OFF104'", "'ignore' must be an array of strings, got a string (write ['OFF104'])"),
        ("extend-select = ['OFF106', 7]", "'extend-select' must be an array of non-empty strings, got an integer in it"),
        ("exclude = ['build', '']", "'exclude' must be an array of non-empty strings, got an empty string in it"),
        ("extend-apis = 'apis.yaml'", "'extend-apis' must be an array of strings, got a string (write ['apis.yaml'])"),
        ("cache-dir = 3", "'cache-dir' must be a folder name (a non-empty string), got an integer"),
        ("cache-dir = ''", "'cache-dir' must be a folder name (a non-empty string), got an empty string"),
        ("cache-dir = ['.c']", "'cache-dir' must be a folder name (a non-empty string), got an array"),
        ("per-file-ignores = 'tests/*'", "'per-file-ignores' must be a table of pattern = [codes]"),
        ("[tool.offload-lint.per-file-ignores]\n'tests/*' = 'OFF101'",
         "'per-file-ignores.tests/*' must be an array of strings, got a string (write ['OFF101'])"),
        ("[tool.offload-lint.options.OFF104]\nconversions = ['float', true]", "option OFF104.conversions must be a list of str"),
    ],
)
def test_values_of_the_wrong_type_are_refused_as_docs_linter_md_says(tmp_path: Path, toml: str, message: str) -> None:
    path = write(tmp_path, "[tool.offload-lint]\n" + toml + "\n")
    with pytest.raises(ConfigError) as caught:
        load_config(path, RULES)
    assert str(caught.value) == f"{path}: [tool.offload-lint] {message}" or str(caught.value) == f"{path}: {message}"
    assert "\n" not in str(caught.value)
    assert not (tmp_path / "3").exists()


def test_a_float_option_takes_an_integer_but_not_a_boolean(tmp_path: Path) -> None:
    floats = [(code, key) for code, rule in RULES.items() for key, value in rule.options.items() if type(value) is float]
    if not floats:
        pytest.skip("no rule has a float option")
    code, key = floats[0]
    config = load_config(write(tmp_path, f"[tool.offload-lint.options.{code}]\n{key} = 3\n"), RULES)
    assert config.options[code][key] == 3
    with pytest.raises(ConfigError, match=f"option {code}.{key} must be float, got bool"):
        load_config(write(tmp_path, f"[tool.offload-lint.options.{code}]\n{key} = true\n"), RULES)


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
