"""Speed benchmark: gpulint against the LibCST parse floor, TorchFix and flake8, in one run.

    python benchmarks/speed.py                          # a seeded sample of torch + transformers
    python benchmarks/speed.py --corpus ~/src/fairseq   # any directory of real code
    python benchmarks/speed.py --files 0 --repeat 5     # every file, not a sample of 500

The corpus is copied into a temporary directory (so every tool sees exactly the same files, and
gpulint's cache lives there). Each measurement runs as a subprocess, alternating tools within
every repetition, and reports the median wall time:

1. floor: ``libcst.parse_module`` on every file, in one process;
2. gpulint cold (``--no-cache``), one job and all jobs;
3. gpulint warm (cache filled by an untimed run);
4. TorchFix on all jobs, from its own virtualenv (it pins an older LibCST): created under
   ``benchmarks/.torchfix-venv`` on first use with ``pip install torchfix``, or ``--torchfix CMD``;
5. ``flake8 --select GPU`` against bare ``flake8 --select E9`` (flake8 alone, from a virtualenv
   of its own under ``benchmarks/.flake8-venv``: flake8 runs every installed plugin whatever
   ``--select`` says), all jobs.

It also checks that gpulint reports the same findings cold, warm and with ``--no-prefilter``
(every rule on the whole of every file), and times gpulint cold with
one job on a quarter, half and all of the corpus, to show how time grows with the number of
files. Results are printed and written as JSON (``--output``).
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

HERE = Path(__file__).resolve().parent
PARSE_FLOOR = HERE / "parse_floor.py"
TORCHFIX_VENV = HERE / ".torchfix-venv"
FLAKE8_VENV = HERE / ".flake8-venv"


def package_root(package: str) -> Optional[Path]:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def assemble_corpus(args: argparse.Namespace, destination: Path) -> List[Path]:
    """Copy the chosen files under ``destination``; returns the copies gpulint would check."""
    from gpulint.frontend.config import Overrides, settings_for
    from gpulint.frontend.discovery import discover

    sources: Dict[str, Path] = {}
    if args.corpus:
        root = Path(args.corpus).resolve()
        sources.update({str(p.relative_to(root)): p for p in sorted(root.rglob("*.py"))})
    else:
        for package in args.package or ["torch", "transformers"]:
            root = package_root(package)
            if root is None:
                sys.exit(f"speed.py: package {package!r} is not installed")
            sources.update({f"{package}/{p.relative_to(root)}": p for p in sorted(root.rglob("*.py"))})
    names = sorted(sources)
    if args.files:
        names = sorted(random.Random(args.seed).sample(names, min(args.files, len(names))))
    sources = {name: sources[name] for name in names}
    if not args.corpus:
        fixtures = HERE.parent / "fixtures"
        sources.update({f"fixtures/{p.relative_to(fixtures)}": p for p in sorted(fixtures.rglob("*.py"))})
    for name, path in sources.items():
        target = destination / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
    (destination / "pyproject.toml").write_text("[tool.gpulint]\n", encoding="utf-8")
    kept = set(discover(destination, settings_for(destination, Overrides())))
    for path in destination.rglob("*.py"):
        if path not in kept:
            path.unlink()
    return sorted(kept)


def timed(command: Sequence[str], cwd: Path) -> float:
    started = time.perf_counter()
    completed = subprocess.run(command, cwd=cwd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"speed.py: {' '.join(command[:3])}... exited {completed.returncode}:\n{completed.stderr[-2000:]}")
    return elapsed


def _venv_tool(venv: Path, tool: str, requirement: str) -> Optional[List[str]]:
    """``tool`` from a virtualenv of its own, created with ``pip install requirement`` on first use."""
    bin_dir = venv / ("Scripts" if os.name == "nt" else "bin")
    if not (bin_dir / tool).exists():
        print(f"creating {venv.name} (pip install {requirement})...", file=sys.stderr)
        subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
        if subprocess.run([str(bin_dir / "pip"), "install", "-q", requirement]).returncode != 0:
            print(f"{requirement} could not be installed; it is left out", file=sys.stderr)
            return None
    return [str(bin_dir / tool)]


def torchfix_command(args: argparse.Namespace) -> Optional[List[str]]:
    if args.torchfix:
        return args.torchfix.split()
    return _venv_tool(TORCHFIX_VENV, "torchfix", "torchfix")


def bare_flake8_command() -> Optional[List[str]]:
    """flake8 without gpulint's plugin (flake8 runs every installed plugin whatever --select says),
    at the version installed here."""
    from importlib.metadata import version

    return _venv_tool(FLAKE8_VENV, "flake8", f"flake8=={version('flake8')}")


def main(argv: Optional[List[str]] = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="a directory of Python code (default: installed packages)")
    parser.add_argument("--package", action="append", help="an installed package for the corpus (repeatable; default torch and transformers)")
    parser.add_argument("--files", type=int, default=500, help="sample this many files of the corpus, seeded (0: all; default 500)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--repeat", type=int, default=3, help="repetitions of each measurement (median reported)")
    parser.add_argument("--jobs", type=int, default=len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count())
    parser.add_argument("--torchfix", help="command that runs TorchFix (default: a virtualenv of its own)")
    parser.add_argument("--no-torchfix", action="store_true")
    parser.add_argument(
        "--torchfix-repeat", type=int,
        help="repetitions of the TorchFix run (default: --repeat; it takes 10-20 times as long as the rest)",
    )
    parser.add_argument("--output", type=Path, help="write the results as JSON here")
    args = parser.parse_args(argv)

    bin_dir = Path(sys.executable).parent
    gpulint, flake8 = str(bin_dir / "gpulint"), str(bin_dir / "flake8")
    torchfix = None if args.no_torchfix else torchfix_command(args)
    bare_flake8 = bare_flake8_command()
    with tempfile.TemporaryDirectory(prefix="gpulint-speed-") as temporary:
        corpus = Path(temporary) / "corpus"
        files = assemble_corpus(args, corpus)
        lines = sum(p.read_text(encoding="utf-8", errors="replace").count("\n") for p in files)
        file_list = Path(temporary) / "files.txt"
        file_list.write_text("\n".join(map(str, files)), encoding="utf-8")
        quiet = ["--exit-zero", "-q", "--format", "concise"]
        commands: Dict[str, List[str]] = {
            "libcst parse floor (1 process)": [sys.executable, str(PARSE_FLOOR), str(file_list)],
            "gpulint cold, 1 job": [gpulint, "check", "--no-cache", "--jobs", "1", *quiet, "."],
            f"gpulint cold, {args.jobs} jobs": [gpulint, "check", "--no-cache", "--jobs", str(args.jobs), *quiet, "."],
            f"gpulint warm, {args.jobs} jobs": [gpulint, "check", "--jobs", str(args.jobs), *quiet, "."],
            f"flake8 --select GPU, {args.jobs} jobs": [flake8, "--select", "GPU", "--jobs", str(args.jobs), "."],
        }
        if bare_flake8:
            commands[f"bare flake8 --select E9, {args.jobs} jobs"] = [*bare_flake8, "--select", "E9", "--jobs", str(args.jobs), "."]
        if torchfix:
            commands[f"TorchFix, {args.jobs} jobs"] = [*torchfix, "--jobs", str(args.jobs), "."]
        timed(commands[f"gpulint warm, {args.jobs} jobs"], corpus)
        samples: Dict[str, List[float]] = {name: [] for name in commands}
        torchfix_repeat = args.repeat if args.torchfix_repeat is None else args.torchfix_repeat
        for repetition in range(args.repeat):
            for name, command in commands.items():
                if name.startswith("TorchFix") and repetition >= torchfix_repeat:
                    continue
                samples[name].append(timed(command, corpus))
                print(f"  [{repetition + 1}/{args.repeat}] {name}: {samples[name][-1]:.2f} s", file=sys.stderr)
        findings = [_output(commands, flag, args, corpus) for flag in ("--no-cache", None, "--no-prefilter")]
        identical = findings[0] == findings[1] == findings[2]
        scaling = []
        ordered = sorted(files, key=lambda p: random.Random(args.seed).random())
        for fraction in (0.25, 0.5, 1.0):
            subset = ordered[: max(1, round(len(ordered) * fraction))]
            subset_lines = sum(p.read_text(encoding="utf-8", errors="replace").count("\n") for p in subset)
            command = [gpulint, "check", "--no-cache", "--jobs", "1", *quiet, *map(str, subset)]
            seconds = statistics.median(timed(command, corpus) for _ in range(args.repeat))
            scaling.append({"files": len(subset), "lines": subset_lines, "seconds": round(seconds, 3)})

    medians = {name: statistics.median(values) for name, values in samples.items()}
    floor = medians["libcst parse floor (1 process)"]
    cold1, cold_n = medians["gpulint cold, 1 job"], medians[f"gpulint cold, {args.jobs} jobs"]
    warm = medians[f"gpulint warm, {args.jobs} jobs"]
    ratios = {
        "gpulint cold 1 job / parse floor": cold1 / floor,
        f"warm speed-up (cold {args.jobs} jobs / warm)": cold_n / warm,
    }
    if bare_flake8:
        ratios["flake8 GPU / bare flake8 E9"] = medians[f"flake8 --select GPU, {args.jobs} jobs"] / medians[f"bare flake8 --select E9, {args.jobs} jobs"]
    if torchfix:
        ratios[f"TorchFix / gpulint cold ({args.jobs} jobs each)"] = medians[f"TorchFix, {args.jobs} jobs"] / cold_n
    results = {
        "corpus": (Path(args.corpus).name if args.corpus else "+".join(args.package or ["torch", "transformers"]) + " + fixtures")
        + (f" (sample of {args.files} files, seed {args.seed})" if args.files else ""),
        "files": len(files),
        "lines": lines,
        "repetitions": args.repeat,
        "machine": {"python": platform.python_version(), "cores": args.jobs, "platform": platform.platform()},
        "versions": _versions(),
        "measurements": {
            name: {"median_seconds": round(value, 3), "files_per_second": round(len(files) / value, 1), "samples": [round(s, 3) for s in samples[name]]}
            for name, value in medians.items()
        },
        "ratios": {name: round(value, 2) for name, value in ratios.items()},
        "findings identical cold, warm and without prefilters": identical,
        "scaling (gpulint cold, 1 job)": scaling,
    }
    _print(results)
    if args.output:
        args.output.parent.mkdir(parents=True, exist_ok=True)
        args.output.write_text(json.dumps(results, indent=2) + "\n", encoding="utf-8")
    return 0 if identical else 1


def _output(commands: Dict[str, List[str]], cache_flag: Optional[str], args: argparse.Namespace, corpus: Path) -> str:
    """gpulint's JSON findings on the corpus, with the cache, without it, or without prefilters."""
    command = [commands["gpulint cold, 1 job"][0], "check", "--format", "json", "--exit-zero", "--jobs", str(args.jobs), "."]
    if cache_flag:
        command.insert(2, cache_flag)
    return subprocess.run(command, cwd=corpus, capture_output=True, text=True).stdout


def _versions() -> Dict[str, str]:
    from importlib.metadata import PackageNotFoundError, version

    found = {}
    for package in ("gpulint", "libcst", "flake8", "torch", "transformers"):
        try:
            found[package] = version(package)
        except PackageNotFoundError:
            pass
    return found


def _print(results: dict) -> None:
    print(f"corpus: {results['corpus']}: {results['files']} files, {results['lines']} lines; median of {results['repetitions']}")
    print(f"{'':44} {'seconds':>9} {'files/s':>9}")
    for name, measured in results["measurements"].items():
        print(f"{name:44} {measured['median_seconds']:9.2f} {measured['files_per_second']:9.1f}")
    print("ratios:")
    for name, value in results["ratios"].items():
        print(f"  {name}: {value:.2f}")
    print(f"findings identical cold, warm and without prefilters: {results['findings identical cold, warm and without prefilters']}")
    print("scaling (gpulint cold, 1 job):")
    for row in results["scaling (gpulint cold, 1 job)"]:
        print(f"  {row['files']:6} files {row['lines']:8} lines {row['seconds']:8.2f} s  {1000 * row['seconds'] / max(row['lines'], 1):.3f} s per 1000 lines")


if __name__ == "__main__":
    sys.exit(main())
