"""The flake8 plugin: every gpulint rule under the ``GPU`` code prefix, from the source flake8 read."""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Iterator, List, Mapping, Sequence, Tuple, Type

import libcst as cst

from gpulint import __version__
from gpulint.frontend.config import ConfigError, Overrides, Settings, settings_for
from gpulint.engine.linter import lint_source
from gpulint.engine.rule import Rule
from gpulint.rules import ALL_CODES, rules_for


class GpulintConfigError(Exception):
    """``[tool.gpulint]`` cannot be used; flake8 stops and prints this, as ``gpulint check`` exits 2."""


@functools.lru_cache(maxsize=None)
def _settings_for_directory(directory: str) -> Settings:
    try:
        return settings_for(Path(directory), Overrides())
    except ConfigError as error:
        raise GpulintConfigError(f"gpulint: error: {error}") from None


def _configuration(filename: str) -> Tuple[List[Type[Rule]], Mapping[str, object]]:
    """The rules ``[tool.gpulint]`` enables for this file (flake8's own selection applies on top),
    and the rule settings; a broken table raises ``GpulintConfigError``, never silently ignored."""
    if filename in ("stdin", "-"):
        return rules_for(ALL_CODES), {}
    path = Path(filename)
    settings = _settings_for_directory(str(path.resolve().parent))
    return rules_for(settings.codes_for(path)), settings.options


class GpulintChecker:
    """flake8 calls this with the file's lines; it yields ``(line, column, "GPU001 message", type)``."""

    name = "gpulint"
    version = __version__

    def __init__(self, tree: object, lines: Sequence[str], filename: str) -> None:
        self.lines = lines
        self.filename = filename
        self.rules, self.options = _configuration(filename)

    def run(self) -> Iterator[Tuple[int, int, str, type]]:
        source = "".join(self.lines)
        try:
            diagnostics = lint_source(source, self.filename, self.rules, options=self.options)
        except (cst.ParserSyntaxError, RecursionError):
            return
        for diagnostic in diagnostics:
            yield diagnostic.start.line, diagnostic.start.column - 1, f"{diagnostic.code} {diagnostic.message}", type(self)
