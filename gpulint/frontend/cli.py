"""The ``gpulint`` command line: ``gpulint check``, its ``gpulint [--fix] PATHS`` shorthand, and ``gpulint rule``."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Dict, List, Optional, Sequence, TextIO

from gpulint import __version__, rules
from gpulint.frontend.config import ConfigError, Overrides, Settings, settings_for
from gpulint.frontend.discovery import discover
from gpulint.frontend.pages import read_page
from gpulint.report import RunReport, reporters
from gpulint.report.statistics import render as render_statistics
from gpulint.report.statistics import render_json as render_statistics_json
from gpulint.report.style import wants_color
from gpulint.report.text import render_fixed
from gpulint.report.summary import plural, summary_line
from gpulint.frontend.selection import SelectionLayer
from gpulint.engine.cache import ResultCache
from gpulint.engine.parallel import Task, default_jobs, process_files
from gpulint.engine.runner import DEFAULT_TIME_BUDGET, FileError, FileResult, Job, Mode, process_source
from gpulint.engine.source import SourceError, decode, quiet_compile, read_source, write_source
from gpulint.frontend.add_noqa import NoqaResult, add_noqa, add_noqa_to_notebook
from gpulint.frontend.notebook import parse_notebook

EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _positive(value: str) -> int:
    number = int(value)
    if number < 1:
        raise argparse.ArgumentTypeError("must be at least 1")
    return number


def _codes(value: str) -> List[str]:
    """Comma-separated rule codes or prefixes; none at all (``--select ''``, as an unset variable
    in a CI script gives) is a usage error, never a silent run of no rules."""
    codes = [code.strip() for code in value.split(",") if code.strip()]
    if not codes:
        raise argparse.ArgumentTypeError("expected one or more rule codes or prefixes")
    return codes


def _patterns(value: str) -> List[str]:
    return [pattern.strip() for pattern in value.split(",") if pattern.strip()]


def _check_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="gpulint",
        description="Find and fix PyTorch code that wastes GPU memory. "
        "`gpulint PATHS` is short for `gpulint check PATHS`; `gpulint rule CODE` explains a rule.",
    )
    parser.add_argument("paths", nargs="*", default=["."], metavar="PATH", help="files or directories to check ('-' reads stdin)")
    parser.add_argument("--version", action="version", version=f"gpulint {__version__}")
    fixing = parser.add_argument_group("fixing")
    fixing.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    fixing.add_argument("--unsafe-fixes", action="store_true", default=None, help="also apply (or show as fixable) unsafe fixes")
    fixing.add_argument("--no-unsafe-fixes", dest="unsafe_fixes", action="store_false", help="override unsafe-fixes = true in the configuration")
    fixing.add_argument("--diff", action="store_true", help="print the fixes as a unified diff instead of writing them; exit 1 if there are any")
    fixing.add_argument("--add-noqa", action="store_true", help="add a `# noqa: GPUxxx` comment to every line with a finding, instead of reporting")
    selection = parser.add_argument_group("rule selection")
    selection.add_argument("--select", type=_codes, metavar="CODES", help="comma-separated codes or prefixes to enable (replaces the configuration's select), or ALL")
    selection.add_argument("--extend-select", type=_codes, default=[], metavar="CODES", help="codes or prefixes to enable in addition")
    selection.add_argument("--ignore", type=_codes, default=[], metavar="CODES", help="codes or prefixes to disable")
    files = parser.add_argument_group("file selection")
    files.add_argument("--exclude", type=_patterns, metavar="PATTERNS", help="glob patterns to skip during discovery (replaces the defaults)")
    files.add_argument("--extend-exclude", type=_patterns, default=[], metavar="PATTERNS", help="glob patterns to skip in addition")
    files.add_argument("--force-exclude", action="store_true", help="apply the exclude settings to files named on the command line too (for pre-commit)")
    files.add_argument("--stdin-filename", metavar="PATH", help="the name to report (and configure) for source read from stdin")
    files.add_argument("--config", type=Path, metavar="FILE", help="read [tool.gpulint] from this file instead of the nearest pyproject.toml")
    run = parser.add_argument_group("run")
    output = parser.add_argument_group("output")
    output.add_argument("--format", "--output-format", dest="format", choices=sorted(reporters()), default="text", help="output format (default: text)")
    output.add_argument("--output-file", type=Path, metavar="FILE", help="write the report to FILE instead of standard output")
    output.add_argument("--statistics", action="store_true", help="print how often each rule fired instead of the diagnostics")
    output.add_argument("--show-fixes", action="store_true", help="show each finding's fix as a preview (text format), and list what --fix fixed")
    output.add_argument("--exit-zero", action="store_true", help="exit 0 even when problems remain")
    output.add_argument("-q", "--quiet", action="store_true", help="print diagnostics only, no summary")
    run.add_argument("--file-time-budget", type=float, default=DEFAULT_TIME_BUDGET, metavar="SECONDS", help=f"give up on a file after this long, as a per-file error (default: {DEFAULT_TIME_BUDGET:g})")
    run.add_argument("-j", "--jobs", type=_positive, default=default_jobs(), metavar="N", help="check files in N processes (default: all cores)")
    run.add_argument("--no-cache", action="store_true", help="do not read or write the result cache (cache-dir, default .gpulint_cache/)")
    run.add_argument(
        "--no-prefilter", action="store_true",
        help="run every rule on the whole of every file, without the prefilters that skip what a rule cannot reach "
        "(slower; the findings are the same, which this lets you check); implies --no-cache",
    )
    return parser


def _rule_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="gpulint rule", description="Print a rule's reference page.")
    parser.add_argument("rule", nargs="?", metavar="CODE", help="a rule code (GPU001) or name")
    parser.add_argument("--all", action="store_true", help="list every rule: code, name and fix availability")
    return parser


def _rule_command(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    args = _rule_parser().parse_args(argv)
    if args.all:
        for rule in rules.rules_for(rules.ALL_CODES):
            out.write(f"{rule.code}\t{rule.name}\tfix: {rule.fix_availability.value}\n")
        return EXIT_CLEAN
    if not args.rule:
        err.write("gpulint rule: error: name a rule (e.g. GPU001) or pass --all\n")
        return EXIT_ERROR
    all_rules = rules.rules_for(rules.ALL_CODES)
    by_code = dict(zip(rules.ALL_CODES, all_rules))
    by_name = {rule.name: rule for rule in all_rules}
    named = by_code.get(args.rule.upper()) or by_name.get(args.rule)
    page = read_page(named.code) if named else None
    if page is None:
        err.write(f"gpulint rule: error: unknown rule {args.rule!r}; `gpulint rule --all` lists them\n")
        return EXIT_ERROR
    out.write(page)
    return EXIT_CLEAN


def _overrides(args: argparse.Namespace) -> Overrides:
    return Overrides(
        selection=SelectionLayer(args.select, args.extend_select, args.ignore),
        exclude=tuple(args.exclude) if args.exclude is not None else None,
        extend_exclude=tuple(args.extend_exclude),
        unsafe_fixes=args.unsafe_fixes,
        config_file=args.config,
    )


def _mode(args: argparse.Namespace) -> Mode:
    if args.diff:
        return Mode.DIFF
    return Mode.FIX if args.fix else Mode.CHECK


def _check_stdin(args: argparse.Namespace, overrides: Overrides, mode: Mode) -> tuple:
    """Check source from stdin; with ``--fix``, write the fixed source (or, failing that, the
    input unchanged) to stdout in the input's own encoding."""
    name = args.stdin_filename or "-"
    settings = settings_for(Path(args.stdin_filename or "stdin.py").resolve().parent, overrides)
    raw = sys.stdin.buffer.read()
    try:
        text, encoding = decode(raw)
    except SourceError as error:
        result = FileResult(name, error=FileError(name, str(error)))
        output = raw
    else:
        result = process_source(name, text, _job(settings, Path(name), mode, args))
        fixed = result.new_file_text
        output = (fixed if result.error is None and fixed is not None else text).encode(encoding)
    if mode is Mode.FIX:
        sys.stdout.flush()
        sys.stdout.buffer.write(output)
        sys.stdout.buffer.flush()
    return [result], settings.unsafe_fixes


def _job(settings: Settings, path: Path, mode: Mode, args: argparse.Namespace) -> Job:
    return Job(settings.codes_for(path), mode, settings.unsafe_fixes, settings.options, args.file_time_budget, not args.no_prefilter)


def _check_paths(args: argparse.Namespace, overrides: Overrides, mode: Mode) -> tuple:
    results: List[Optional[FileResult]] = []
    tasks: List[Task] = []
    seen = set()
    unsafe = False
    settings_by_root: Dict[str, Settings] = {}
    for raw in args.paths:
        root = Path(raw)
        if not root.exists() and not root.is_symlink():
            results.append(FileResult(raw, error=FileError(raw, "no such file or directory")))
            continue
        settings = settings_by_root.setdefault(raw, settings_for(root, overrides))
        if args.force_exclude and settings.is_excluded_with_parents(root):
            continue
        unsafe = unsafe or settings.unsafe_fixes
        cache = None if args.no_cache or args.no_prefilter else ResultCache.open(settings.cache_dir)
        for path in discover(root, settings):
            key = path.resolve()
            if key in seen:
                continue
            seen.add(key)
            results.append(None)
            tasks.append((path, _job(settings, path, mode, args), cache))
    processed = iter(process_files(tasks, args.jobs))
    return [result if result is not None else next(processed) for result in results], unsafe


TEXT_ONLY_FORMATS = ("text", "concise", "json")
"""The formats that ``--diff`` and ``--statistics`` can be shown in."""


def _diff_json(results: Sequence[FileResult], out: TextIO) -> None:
    """``--diff --format json``: per file, how many fixes, the diff, and why it was skipped."""
    entries = [
        {"path": result.path, "fixed": result.fixed, "diff": result.diff, "error": result.error and str(result.error)}
        for result in results
        if result.diff or result.error is not None
    ]
    json.dump(entries, out, indent=2)
    out.write("\n")


def _noqa_text(result: FileResult) -> Optional[NoqaResult]:
    """What the file should become with its directives; None if that would not parse."""
    assert result.text is not None
    if result.notebook is not None:
        before = result.notebook.code
        outcome = add_noqa_to_notebook(result.notebook, result.diagnostics)
        try:
            after = parse_notebook(outcome.text).code
        except SourceError:
            return None
    else:
        before = result.text
        outcome = add_noqa(result.text, result.diagnostics)
        after = outcome.text
    return outcome if _compiles(after, result.path) or not _compiles(before, result.path) else None


def _compiles(text: str, path: str) -> bool:
    try:
        quiet_compile(text, path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _add_noqa_directives(results: Sequence[FileResult], err: TextIO) -> int:
    """``--add-noqa``: write the directives into every file with findings, atomically."""
    added = skipped = 0
    failed = [result.error for result in results if result.error is not None]
    for result in results:
        if result.error is not None or not result.diagnostics or result.text is None:
            continue
        try:
            source = read_source(Path(result.path))
            expected = result.notebook.text if result.notebook is not None else result.text
            if source.text != expected:
                raise SourceError("changed on disk while being checked; not overwritten")
            planned = _noqa_text(result)
            if planned is None:
                raise SourceError("adding the directives would not parse; not overwritten")
            write_source(source, planned.text)
        except SourceError as error:
            failed.append(FileError(result.path, str(error)))
            continue
        added += planned.added
        skipped += planned.skipped
    for failure in failed:
        err.write(f"error: {failure}\n")
    err.write(f"Added {plural(added, 'noqa directive')}.\n")
    if skipped:
        err.write(f"{plural(skipped, 'line')} cannot take a comment (inside a string or after a backslash); left as they were.\n")
    return EXIT_ERROR if failed else EXIT_CLEAN


def _check_command(argv: Sequence[str], out: TextIO, err: TextIO) -> int:
    parser = _check_parser()
    args = parser.parse_args(argv)
    for option, given in (("--diff", args.diff), ("--statistics", args.statistics)):
        if given and args.format not in TEXT_ONLY_FORMATS:
            parser.error(f"{option} cannot be shown as {args.format}; use text, concise or json")
    if args.add_noqa and (args.fix or args.diff or args.paths == ["-"]):
        parser.error("--add-noqa edits files in place: it cannot be combined with --fix, --diff or stdin")
    if args.output_file is not None:
        with open(args.output_file, "w", encoding="utf-8") as stream:
            return _run_check(args, stream, err)
    return _run_check(args, out, err)


def _run_check(args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    mode = _mode(args)
    try:
        overrides = _overrides(args)
        if args.paths == ["-"]:
            results, unsafe = _check_stdin(args, overrides, mode)
        else:
            results, unsafe = _check_paths(args, overrides, mode)
    except ConfigError as error:
        err.write(f"gpulint: error: {error}\n")
        return EXIT_ERROR
    if args.add_noqa:
        return _add_noqa_directives(results, err)
    report = RunReport(results, mode, unsafe, show_fixes=args.show_fixes)
    errors = [result.error for result in results if result.error is not None]
    if not results and args.paths != ["-"]:
        err.write("warning: No Python files found under the given path(s)\n")
    report_stream = err if (mode is Mode.FIX and args.paths == ["-"]) else out
    for file_error in errors:
        err.write(f"error: {file_error}\n")
    if mode is Mode.DIFF:
        if args.format == "json":
            _diff_json(results, out)
        else:
            for result in results:
                out.write(result.diff)
        changed = sum(1 for result in results if result.diff)
        if not args.quiet:
            would = f"Would fix {plural(sum(r.fixed for r in results), 'problem')} in {plural(changed, 'file')}."
            err.write(f"{would}\n" if changed else "No fixes to apply.\n")
        return EXIT_ERROR if errors else (EXIT_FINDINGS if changed else EXIT_CLEAN)
    machine_readable = args.format in ("json", "sarif", "github")
    color = not machine_readable and wants_color(report_stream)
    if args.statistics and args.format == "json":
        render_statistics_json(report, report_stream)
    elif args.statistics:
        render_statistics(report, report_stream)
    else:
        reporters()[args.format](report, report_stream, color)
    if args.show_fixes and mode is Mode.FIX and not machine_readable:
        render_fixed(report, report_stream)
    if not machine_readable and not args.quiet:
        report_stream.write(summary_line(report) + "\n")
    if errors:
        return EXIT_ERROR
    if report.diagnostics and not args.exit_zero:
        return EXIT_FINDINGS
    return EXIT_CLEAN


def _server_command(argv: Sequence[str], err: TextIO) -> int:
    """``gpulint server``: the language server over stdio (needs the ``lsp`` extra)."""
    parser = argparse.ArgumentParser(
        prog="gpulint server",
        description="Run the gpulint language server over stdio (for editors; needs pip install 'gpulint[lsp]').",
    )
    parser.parse_args(list(argv))
    try:
        from gpulint.lsp.server import main as serve
    except ImportError as error:
        err.write(f"gpulint server needs pygls ({error}): pip install 'gpulint[lsp]'\n")
        return EXIT_ERROR
    return serve()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """The console script. A reader that stops early (``gpulint check . | head``) ends the run
    quietly with the error status: the report was not delivered whole."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        return _dispatch(argv)
    except BrokenPipeError:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_ERROR


def _dispatch(argv: List[str]) -> int:
    if argv[:1] == ["rule"]:
        return _rule_command(argv[1:], sys.stdout, sys.stderr)
    if argv[:1] == ["server"]:
        return _server_command(argv[1:], sys.stderr)
    if argv[:1] == ["check"]:
        argv = argv[1:]
    return _check_command(argv, sys.stdout, sys.stderr)
