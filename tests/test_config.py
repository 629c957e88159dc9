"""Configuration: finding ``[tool.gpulint]``, validating it, and combining it with the command line."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpulint.frontend.config import ConfigError, FileConfig, Overrides, find_pyproject, load_file_config, resolve_settings, settings_for
from gpulint.rules import ALL_CODES
from gpulint.frontend.selection import SelectionError, SelectionLayer, matching_codes, resolve

CODES = ("GPU001", "GPU002", "GPU010")


def test_selectors_match_prefixes_and_all():
    assert matching_codes("GPU", CODES) == set(CODES)
    assert matching_codes("gpu00", CODES) == {"GPU001", "GPU002"}
    assert matching_codes("ALL", CODES) == set(CODES)
    with pytest.raises(SelectionError, match="unknown rule selector"):
        matching_codes("GPU9", CODES)


def test_layers_apply_in_order_like_ruff():
    config = SelectionLayer(select=["GPU00"], ignore=["GPU002"])
    assert resolve([config], CODES) == {"GPU001"}
    assert resolve([config, SelectionLayer(extend_select=["GPU010"])], CODES) == {"GPU001", "GPU010"}
    assert resolve([config, SelectionLayer(select=["GPU002"])], CODES) == {"GPU002"}
    assert resolve([SelectionLayer(), SelectionLayer(ignore=["GPU"])], CODES) == set()


def test_the_more_specific_selector_wins_within_a_layer():
    assert resolve([SelectionLayer(ignore=["GPU"], extend_select=["GPU001"])], CODES) == {"GPU001"}
    assert resolve([SelectionLayer(select=["GPU001"], ignore=["GPU"])], CODES) == {"GPU001"}
    assert resolve([SelectionLayer(select=["GPU00"], ignore=["GPU002"])], CODES) == {"GPU001"}
    assert resolve([SelectionLayer(select=["GPU001"], ignore=["GPU001"])], CODES) == set()


def _write(directory: Path, text: str) -> Path:
    path = directory / "pyproject.toml"
    path.write_text(text)
    return path


def test_nearest_pyproject_with_a_gpulint_table_wins(tmp_path):
    outer = _write(tmp_path, "[tool.gpulint]\nignore = ['GPU001']\n")
    inner = tmp_path / "pkg"
    inner.mkdir()
    _write(inner, "[project]\nname = 'pkg'\n")
    assert find_pyproject(inner) == outer
    _write(inner, "[tool.gpulint]\n")
    assert find_pyproject(inner) == inner / "pyproject.toml"


@pytest.mark.parametrize(
    ("table", "message"),
    [
        ("selct = ['GPU001']", "unknown key"),
        ("select = ['GPU999']", "unknown rule selector"),
        ("ignore = 'GPU001'", "must be a list of strings"),
        ("unsafe-fixes = 'yes'", "must be true or false"),
        ("[tool.gpulint.per-file-ignores]\n'tests/*' = ['XYZ1']", "unknown rule selector"),
    ],
)
def test_invalid_configuration_is_an_error(tmp_path, table, message):
    path = _write(tmp_path, f"[tool.gpulint]\n{table}\n")
    with pytest.raises(ConfigError, match=message):
        load_file_config(path)


def test_invalid_toml_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="invalid TOML"):
        load_file_config(_write(tmp_path, "[tool.gpulint\n"))


def test_command_line_wins_over_the_file(tmp_path):
    _write(tmp_path, "[tool.gpulint]\nignore = ['GPU']\nunsafe-fixes = true\nextend-exclude = ['generated']\n")
    from_file = settings_for(tmp_path, Overrides())
    assert from_file.enabled == frozenset() and from_file.unsafe_fixes
    overridden = settings_for(tmp_path, Overrides(selection=SelectionLayer(select=["GPU001"]), unsafe_fixes=False))
    assert overridden.enabled == {"GPU001"} and not overridden.unsafe_fixes
    assert overridden.is_excluded(tmp_path / "generated") and overridden.is_excluded(tmp_path / ".venv")


def test_per_file_ignores_match_relative_paths_and_names(tmp_path):
    settings = resolve_settings(
        FileConfig(root=tmp_path, per_file_ignores={"tests/*": ("GPU",), "conftest.py": ("GPU001",)}), Overrides()
    )
    assert settings.codes_for(tmp_path / "tests" / "test_x.py") == ()
    assert settings.codes_for(tmp_path / "deep" / "conftest.py") == ALL_CODES[1:]
    assert settings.codes_for(tmp_path / "src" / "x.py") == ALL_CODES


def test_exclude_replaces_the_defaults(tmp_path):
    settings = resolve_settings(FileConfig(root=tmp_path, exclude=("scratch",)), Overrides())
    assert settings.is_excluded(tmp_path / "scratch") and not settings.is_excluded(tmp_path / "build")
