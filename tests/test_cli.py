"""The installed ``gpulint`` console script, run as users run it."""

from __future__ import annotations

import json
import os
import subprocess

import pytest

from tests.helpers import GPULINT, PAGES, run_gpulint, run_gpulint_raw

SAFE = "import torch\n\n\ndef restore(model, path):\n    model.load_state_dict(torch.load(path))\n"
UNSAFE = "import torch\nmodel = torch.load('model.pt')\n"
CLEAN = "import torch\nstate = torch.load('model.pt', map_location='cpu')\n"


@pytest.fixture
def project(tmp_path):
    (tmp_path / "safe.py").write_text(SAFE)
    (tmp_path / "unsafe.py").write_text(UNSAFE)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


def test_check_reports_in_ruff_style_and_exits_1(project):
    result = run_gpulint(["check", "safe.py", "unsafe.py"], cwd=project)
    assert result.returncode == 1
    assert "safe.py:5:27: GPU001 [*] `torch.load` without `map_location`" in result.stdout
    assert "unsafe.py:2:9: GPU001 `torch.load`" in result.stdout
    assert "5 |     model.load_state_dict(torch.load(path))" in result.stdout
    assert "  |                           ^^^^^^^^^^^^^^^^ GPU001" in result.stdout
    assert '= help: Add `map_location="cpu"`' in result.stdout
    assert result.stdout.rstrip().endswith("Found 2 problems (1 fixable with --fix, 1 with --unsafe-fixes).")


def test_clean_file_exits_0(project):
    result = run_gpulint(["clean.py"], cwd=project)
    assert result.returncode == 0
    assert result.stdout.strip() == "All checks passed!"


def test_default_path_is_the_current_directory(project):
    assert run_gpulint([], cwd=project).stdout.count("GPU001 ") == 2


def test_fix_applies_safe_fixes_only(project):
    result = run_gpulint(["--fix", "."], cwd=project)
    assert result.returncode == 1
    assert "(1 fixed, 1 remaining)" in result.stdout
    assert "torch.load(path, map_location=\"cpu\")" in (project / "safe.py").read_text()
    assert (project / "unsafe.py").read_text() == UNSAFE
    again = run_gpulint(["--fix", "safe.py"], cwd=project)
    assert again.returncode == 0 and "All checks passed!" in again.stdout


def test_unsafe_fixes_are_applied_on_request(project):
    result = run_gpulint(["check", "--fix", "--unsafe-fixes", "."], cwd=project)
    assert result.returncode == 0
    assert (project / "unsafe.py").read_text() == "import torch\nmodel = torch.load('model.pt', map_location='cpu')\n"


def test_diff_prints_changes_and_writes_nothing(project):
    result = run_gpulint(["--diff", "safe.py", "unsafe.py"], cwd=project)
    assert result.returncode == 1
    assert "--- safe.py\n+++ safe.py\n" in result.stdout
    assert '+    model.load_state_dict(torch.load(path, map_location="cpu"))' in result.stdout
    assert "unsafe.py" not in result.stdout
    assert (project / "safe.py").read_text() == SAFE
    assert run_gpulint(["--diff", "clean.py"], cwd=project).returncode == 0


def test_select_and_ignore(project):
    assert run_gpulint(["--ignore", "GPU001", "."], cwd=project).returncode == 0
    assert run_gpulint(["--select", "GPU", "."], cwd=project).returncode == 1
    assert run_gpulint(["--select", "ALL", "--ignore", "GPU0", "."], cwd=project).returncode == 0
    unknown = run_gpulint(["--select", "GPU404", "."], cwd=project)
    assert unknown.returncode == 2 and "unknown rule selector 'GPU404'" in unknown.stderr


def test_json_format(project):
    result = run_gpulint(["--format", "json", "safe.py", "clean.py"], cwd=project)
    assert result.returncode == 1
    (item,) = json.loads(result.stdout)
    assert item == {
        "path": "safe.py",
        "cell": None,
        "line": 5,
        "column": 27,
        "end_line": 5,
        "end_column": 43,
        "code": "GPU001",
        "name": "torch-load-without-map-location",
        "message": "`torch.load` without `map_location` loads every tensor onto the device it was saved from",
        "fix": {
            "applicability": "safe",
            "title": 'Add `map_location="cpu"`',
            "edits": [{"line": 5, "column": 42, "end_line": 5, "end_column": 42, "content": ', map_location="cpu"'}],
        },
        "fix_note": None,
    }
    assert json.loads(run_gpulint(["--format", "json", "clean.py"], cwd=project).stdout) == []


def test_concise_format_statistics_quiet_and_exit_zero(project):
    concise = run_gpulint(["--format", "concise", "-q", "safe.py"], cwd=project)
    assert concise.stdout == "safe.py:5:27: GPU001 [*] `torch.load` without `map_location` loads every tensor onto the device it was saved from\n"
    statistics = run_gpulint(["--statistics", "."], cwd=project)
    assert "    2\tGPU001\t[*] torch-load-without-map-location" in statistics.stdout
    assert run_gpulint(["--exit-zero", "--no-cache", "."], cwd=project).returncode == 0


def test_noqa_suppresses(project):
    (project / "noqa.py").write_text("import torch\nmodel = torch.load('m.pt')  # noqa: GPU001\n")
    assert run_gpulint(["noqa.py"], cwd=project).returncode == 0


def test_stdin_check_and_fix(project):
    checked = run_gpulint(["check", "-", "--stdin-filename", "x.py"], cwd=project, stdin=SAFE.encode())
    assert checked.returncode == 1 and "x.py:5:27: GPU001" in checked.stdout
    fixed = run_gpulint(["--fix", "-", "--stdin-filename", "x.py"], cwd=project, stdin=SAFE.encode())
    assert fixed.returncode == 0
    assert fixed.stdout == SAFE.replace("torch.load(path)", 'torch.load(path, map_location="cpu")')
    assert "(1 fixed, 0 remaining)" in fixed.stderr


def test_syntax_error_is_reported_and_other_files_are_still_checked(project):
    (project / "broken.py").write_text("import torch\ndef f(:\n    pass\n")
    result = run_gpulint(["broken.py", "safe.py"], cwd=project)
    assert result.returncode == 2
    assert "error: broken.py:2:7: cannot parse" in result.stderr
    assert "safe.py:5:27: GPU001" in result.stdout


def test_missing_path_and_non_utf8_file_are_errors(project):
    (project / "latin.py").write_bytes(b"x = '\xe9'\n")
    result = run_gpulint(["missing.py", "latin.py", "clean.py"], cwd=project)
    assert result.returncode == 2
    assert "error: missing.py: no such file or directory" in result.stderr
    assert "error: latin.py: not valid utf-8" in result.stderr


def test_a_fix_is_never_written_when_the_file_does_not_parse(project):
    (project / "broken.py").write_text("import torch\nmodel.load_state_dict(torch.load(p))\nif\n")
    result = run_gpulint(["--fix", "broken.py"], cwd=project)
    assert result.returncode == 2
    assert (project / "broken.py").read_text() == "import torch\nmodel.load_state_dict(torch.load(p))\nif\n"


def test_discovery_honours_gitignore_and_default_excludes(project):
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    (project / ".gitignore").write_text("ignored.py\ngenerated/\n")
    for relative in ["ignored.py", "generated/a.py", "build/b.py", ".venv/lib/c.py", "node_modules/d.py",
                     "pkg/__pycache__/e.py", "env/pyvenv.cfg", "env/f.py", "pkg/kept.py", "pkg/notes.txt"]:
        path = project / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(UNSAFE)
    result = run_gpulint(["--format", "concise", "-q", "."], cwd=project)
    reported = sorted({line.split(":")[0] for line in result.stdout.splitlines()})
    assert reported == ["pkg/kept.py", "safe.py", "unsafe.py"]
    named = run_gpulint(["--format", "concise", "-q", "ignored.py", "pkg/notes.txt", "generated"], cwd=project)
    assert sorted(line.split(":")[0] for line in named.stdout.splitlines()) == ["generated/a.py", "ignored.py", "pkg/notes.txt"]


def test_exclude_options(project):
    assert run_gpulint(["--extend-exclude", "unsafe.py,safe.py", "."], cwd=project).returncode == 0
    (project / "build").mkdir()
    (project / "build" / "x.py").write_text(UNSAFE)
    result = run_gpulint(["--format", "concise", "-q", "--exclude", "safe.py", "."], cwd=project)
    assert sorted(line.split(":")[0] for line in result.stdout.splitlines()) == ["build/x.py", "unsafe.py"]


def test_pyproject_configuration(project):
    (project / "pyproject.toml").write_text(
        "[tool.gpulint]\nunsafe-fixes = true\n[tool.gpulint.per-file-ignores]\n'safe.py' = ['GPU001']\n"
    )
    result = run_gpulint(["--fix", "."], cwd=project)
    assert result.returncode == 0
    assert "map_location" in (project / "unsafe.py").read_text()
    assert (project / "safe.py").read_text() == SAFE


def test_bad_configuration_exits_2(project):
    (project / "pyproject.toml").write_text("[tool.gpulint]\nselect = ['GPU001']\nignroe = ['GPU001']\n")
    result = run_gpulint(["."], cwd=project)
    assert result.returncode == 2
    assert "unknown key(s) in [tool.gpulint]: ignroe" in result.stderr


def test_explicit_config_file(project):
    (project / "gpulint.toml").write_text("[tool.gpulint]\nignore = ['GPU001']\n")
    assert run_gpulint(["--config", "gpulint.toml", "."], cwd=project).returncode == 0
    assert run_gpulint(["--config", "nowhere.toml", "."], cwd=project).returncode == 2


def test_usage_error_exits_2(project):
    assert run_gpulint(["--format", "xml", "."], cwd=project).returncode == 2


def test_version():
    result = run_gpulint(["--version"])
    assert result.returncode == 0 and result.stdout.startswith("gpulint ")


def test_rule_command_prints_the_page():
    result = run_gpulint(["rule", "GPU001"])
    assert result.returncode == 0
    assert result.stdout == (PAGES / "GPU001.md").read_text()
    assert run_gpulint(["rule", "torch-load-without-map-location"]).stdout == result.stdout


def test_rule_all_lists_every_rule():
    result = run_gpulint(["rule", "--all"])
    assert result.returncode == 0
    assert "GPU001\ttorch-load-without-map-location\tfix: sometimes" in result.stdout


def test_unknown_rule_exits_2():
    result = run_gpulint(["rule", "GPU404"])
    assert result.returncode == 2 and "unknown rule" in result.stderr


def test_colour_only_when_asked(project):
    plain = run_gpulint(["safe.py"], cwd=project)
    assert "\033[" not in plain.stdout
    forced = run_gpulint(["safe.py"], cwd=project, color=True)
    assert "\033[1;31mGPU001\033[0m" in forced.stdout


def test_fix_through_a_symlink_keeps_the_link(project):
    (project / "link.py").symlink_to(project / "safe.py")
    assert run_gpulint(["--fix", "link.py"], cwd=project).returncode == 0
    assert (project / "link.py").is_symlink()
    assert "map_location" in (project / "safe.py").read_text()


def test_stdin_fix_keeps_the_encoding_and_bom():
    latin = "# -*- coding: latin-1 -*-\nimport torch\nx = torch.load('caf\u00e9')\n".encode("latin-1")
    fixed = run_gpulint_raw(["--fix", "--unsafe-fixes", "-"], stdin=latin).stdout
    assert fixed == latin.replace(b"')", b"', map_location='cpu')")
    bom = b"\xef\xbb\xbfimport torch\nx = torch.load(p)\n"
    assert run_gpulint_raw(["--fix", "--unsafe-fixes", "-"], stdin=bom).stdout == bom.replace(b"(p)", b'(p, map_location="cpu")')


def test_stdin_fix_echoes_input_that_does_not_parse():
    source = b"x = 1\ndef (:\n"
    assert run_gpulint_raw(["--fix", "-"], stdin=source).stdout == source


def test_summary_never_claims_success_when_a_file_failed(project):
    result = run_gpulint(["missing.py", "clean.py"], cwd=project)
    assert result.returncode == 2
    assert "All checks passed" not in result.stdout
    assert "1 file could not be checked or fixed" in result.stdout


def test_old_mac_newlines_are_reported_but_never_rewritten(project):
    raw = b"import torch\rx = torch.load(p)\r"
    (project / "cr.py").write_bytes(raw)
    result = run_gpulint(["--fix", "--unsafe-fixes", "cr.py"], cwd=project)
    assert result.returncode == 1 and "GPU001" in result.stdout
    assert (project / "cr.py").read_bytes() == raw


def test_caret_lines_up_under_tab_indentation(project):
    (project / "tabs.py").write_text("import torch\nif True:\n\tx = torch.load(p)\n")
    result = run_gpulint(["tabs.py"], cwd=project)
    assert "3 | \tx = torch.load(p)\n  | \t    ^^^^^^^^^^^^^ GPU001" in result.stdout



@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
def test_an_empty_rule_selector_is_a_usage_error(project, option):
    result = run_gpulint(["check", option, "", "unsafe.py"], cwd=project)
    assert result.returncode == 2
    assert f"argument {option}: expected one or more rule codes" in result.stderr
    assert "All checks passed" not in result.stdout


def test_paths_without_python_files_say_so(tmp_path):
    (tmp_path / "notes.txt").write_text("no code here\n")
    result = run_gpulint(["check", "."], cwd=tmp_path)
    assert result.returncode == 0
    assert "warning: No Python files found under the given path(s)" in result.stderr


def test_output_format_alias_and_output_file(project):
    result = run_gpulint(["check", "--output-format", "json", "--output-file", "report.json", "unsafe.py"], cwd=project)
    assert result.returncode == 1 and result.stdout == ""
    (item,) = json.loads((project / "report.json").read_text(encoding="utf-8"))
    assert item["code"] == "GPU001"


def test_diff_summary_counts_in_words(project):
    result = run_gpulint(["check", "--diff", "safe.py"], cwd=project)
    assert result.returncode == 1
    assert result.stderr.strip().endswith("Would fix 1 problem in 1 file.")
    result = run_gpulint(["check", "--diff", "--unsafe-fixes", "safe.py", "unsafe.py"], cwd=project)
    assert result.stderr.strip().endswith("Would fix 2 problems in 2 files.")


@pytest.mark.parametrize(
    ("config", "path"),
    [
        ('[tool.gpulint]\nextend-exclude = ["scratch/"]\n', "scratch/s.py"),
        ('[tool.gpulint]\nextend-exclude = ["scratch"]\n', "scratch/deeper/s.py"),
        ("[tool.gpulint]\n", "build/x.py"),
        ("[tool.gpulint]\n", "node_modules/pkg/y.py"),
    ],
)
def test_force_exclude_skips_files_in_excluded_folders(project, config, path):
    (project / "pyproject.toml").write_text(config)
    (project / path).parent.mkdir(parents=True)
    (project / path).write_text(UNSAFE)
    forced = run_gpulint(["check", "--force-exclude", path], cwd=project)
    assert forced.returncode == 0 and "GPU001" not in forced.stdout
    named = run_gpulint(["check", path], cwd=project)
    assert named.returncode == 1, "a file named without --force-exclude is always checked"


def test_force_exclude_ignores_excluded_folders_above_the_project(tmp_path):
    project = tmp_path / "build" / "project"
    project.mkdir(parents=True)
    (project / "pyproject.toml").write_text("[tool.gpulint]\n")
    (project / "x.py").write_text(UNSAFE)
    assert run_gpulint(["check", "--force-exclude", "x.py"], cwd=project).returncode == 1


def test_discovery_never_follows_a_link_out_of_the_tree(tmp_path):
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "victim.py").write_text(SAFE)
    repo = tmp_path / "repo"
    (repo / "pkg").mkdir(parents=True)
    (repo / "real.py").write_text(SAFE)
    (repo / "link.py").symlink_to(tmp_path / "outside" / "victim.py")
    (repo / "pkg" / "inner_link.py").symlink_to(repo / "real.py")
    result = run_gpulint(["--fix", "."], cwd=repo)
    assert result.returncode == 0, result.stdout + result.stderr
    assert (tmp_path / "outside" / "victim.py").read_text() == SAFE
    assert "map_location" in (repo / "real.py").read_text()
    named = run_gpulint(["check", "link.py"], cwd=repo)
    assert named.returncode == 1, "a link named on the command line is still checked"


def test_add_noqa_marks_every_finding_and_merges_existing_directives(tmp_path):
    source = (
        "import torch\n\n\ndef f(model, p):\n"
        "    model.load_state_dict(torch.load(p))  # restore\n"
        "    w = torch.load(p)  # noqa: E501\n"
        "    text = torch.load(p).describe('''a\n    b''')\n"
        "    return w, text\n"
    )
    (tmp_path / "n.py").write_bytes(source.replace("\n", "\r\n").encode())
    result = run_gpulint(["check", "--add-noqa", "n.py"], cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert "Added 2 noqa directives." in result.stderr
    assert "1 line cannot take a comment" in result.stderr
    fixed = (tmp_path / "n.py").read_bytes().decode()
    assert "    model.load_state_dict(torch.load(p))  # restore  # noqa: GPU001\r\n" in fixed
    assert "    w = torch.load(p)  # noqa: E501, GPU001\r\n" in fixed
    assert "describe('''a\r\n    b''')\r\n" in fixed
    again = run_gpulint(["check", "--format", "concise", "n.py"], cwd=tmp_path)
    assert again.stdout.count("GPU001") == 1, "only the line inside a string is still reported"


def test_add_noqa_refuses_fix_and_diff(project):
    result = run_gpulint(["check", "--add-noqa", "--fix", "safe.py"], cwd=project)
    assert result.returncode == 2 and "--add-noqa" in result.stderr


def test_show_fixes_previews_each_fix_and_lists_what_was_fixed(project):
    shown = run_gpulint(["check", "--show-fixes", "safe.py", "unsafe.py"], cwd=project)
    assert "  = fix (safe):\n    -     model.load_state_dict(torch.load(path))\n" in shown.stdout
    assert "    +     model.load_state_dict(torch.load(path, map_location=\"cpu\"))\n" in shown.stdout
    assert "  = fix (unsafe):\n    - model = torch.load('model.pt')\n    + model = torch.load('model.pt', map_location='cpu')\n" in shown.stdout
    assert (project / "safe.py").read_text() == SAFE
    fixed = run_gpulint(["--fix", "--show-fixes", "safe.py", "unsafe.py"], cwd=project)
    assert "Fixed 1 problem:\n- safe.py:\n    1 × GPU001 (torch-load-without-map-location)\n" in fixed.stdout


@pytest.mark.parametrize(("code", "fixture", "option"), [
    ("GPU001", "test_checkpoint.py", "report-loads-in-tests"),
    ("GPU004", "test_attention.py", "report-inference-in-tests"),
])
def test_test_modules_are_left_out_unless_asked(tmp_path, code, fixture, option):
    from tests.helpers import FIXTURES

    folder = tmp_path / "tests"
    folder.mkdir()
    source = (FIXTURES / code / "tests" / fixture).read_text()
    for name in ("tests/test_model.py", "model_test.py", "tests.py", "tests/helpers.py", "conftest.py"):
        (tmp_path / name).write_text(source)
    (tmp_path / "evaluate.py").write_text(source)
    script = source.replace("def test_", "def run_")
    assert script != source
    (tmp_path / "net_test.py").write_text(script)  # an evaluation script named like a test, with no tests in it
    entry_point = source.replace("def test_", "def test") + '\n\nif __name__ == "__main__":\n    print("evaluating")\n'
    (tmp_path / "test_net.py").write_text(entry_point)  # an evaluation script with a `def test...` and an entry point
    parsing = "import argparse\n\nargs = argparse.ArgumentParser().parse_args()\n" + source.replace("def test_", "def test")
    (tmp_path / "test_attack.py").write_text(parsing)  # a `def test...` in a script whose module-level code parses its arguments
    default = run_gpulint(["check", "--select", code, "--format", "concise", "-q", "."], cwd=tmp_path)
    assert sorted(line.split(":")[0] for line in default.stdout.splitlines()) == ["evaluate.py", "net_test.py", "test_attack.py", "test_net.py"]
    (tmp_path / "pyproject.toml").write_text(f"[tool.gpulint]\n{option} = true\n")
    included = run_gpulint(["check", "--select", code, "--format", "concise", "-q", "--no-cache", "."], cwd=tmp_path)
    assert len(included.stdout.splitlines()) == 9


def test_export_scripts_are_left_out_of_gpu004_unless_asked(tmp_path):
    from tests.helpers import FIXTURES

    (tmp_path / "export_onnx.py").write_text((FIXTURES / "GPU004" / "export_script.py").read_text())
    default = run_gpulint(["check", "--select", "GPU004", "--format", "concise", "-q", "."], cwd=tmp_path)
    assert default.returncode == 0 and default.stdout == ""
    (tmp_path / "pyproject.toml").write_text("[tool.gpulint]\nreport-inference-in-exports = true\n")
    included = run_gpulint(["check", "--select", "GPU004", "--format", "concise", "-q", "--no-cache", "."], cwd=tmp_path)
    assert [line.split(":")[:2] for line in included.stdout.splitlines()] == [["export_onnx.py", "19"]]


def test_a_reader_that_stops_early_ends_the_run_quietly(tmp_path):
    for module in range(30):
        (tmp_path / f"load_{module}.py").write_text("import torch\n" + "".join(f"state_{i} = torch.load('m{i}.pt')\n" for i in range(100)))
    environment = {**os.environ, "NO_COLOR": "1"}
    process = subprocess.Popen(
        [str(GPULINT), "check", "."], cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=environment
    )
    assert process.stdout is not None and process.stderr is not None
    assert b"GPU001" in process.stdout.readline()
    process.stdout.close()
    error = process.stderr.read().decode()
    assert process.wait(timeout=120) == 2
    assert "Traceback" not in error and "BrokenPipe" not in error
