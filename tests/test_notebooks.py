"""Jupyter notebooks: code cells checked as one program, positions per cell, fixes written in place."""

from __future__ import annotations

import json

import pytest

from gpulint.frontend.notebook import parse_notebook
from tests.helpers import run_gpulint


def _notebook(*sources, markdown_first=True) -> str:
    cells = [{"cell_type": "markdown", "metadata": {}, "source": ["# Title\n", "Notes."]}] if markdown_first else []
    for number, source in enumerate(sources, start=1):
        lines = source.splitlines(keepends=True)
        cells.append({
            "cell_type": "code", "execution_count": number, "metadata": {"tags": ["x"]},
            "outputs": [{"name": "stdout", "output_type": "stream", "text": ["caf\u00e9\n"]}], "source": lines,
        })
    document = {"cells": cells, "metadata": {"kernelspec": {"name": "python3"}}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(document, indent=1, ensure_ascii=False) + "\n"


SAFE_LOAD = 'model = torch.nn.Linear(1024, 1024)\nmodel.load_state_dict(torch.load("w.pt"))'


def test_diagnostics_point_to_the_cell(tmp_path):
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch", "x = 1\n" + SAFE_LOAD), encoding="utf-8")
    text = run_gpulint(["check", "nb.ipynb"], cwd=tmp_path)
    assert text.returncode == 1
    assert "nb.ipynb:cell 3:3:23: GPU001 [*]" in text.stdout
    assert '3 | model.load_state_dict(torch.load("w.pt"))' in text.stdout
    (item,) = json.loads(run_gpulint(["check", "--format", "json", "nb.ipynb"], cwd=tmp_path).stdout)
    assert (item["cell"], item["line"], item["column"]) == (3, 3, 23)
    assert item["fix"]["edits"][0]["cell"] == 3


def test_fix_rewrites_only_the_changed_cell(tmp_path):
    original = _notebook("import torch", SAFE_LOAD, "print(model)")
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    result = run_gpulint(["--fix", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    fixed = (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    old_line = json.dumps('model.load_state_dict(torch.load("w.pt"))', ensure_ascii=False)
    new_line = json.dumps('model.load_state_dict(torch.load("w.pt", map_location="cpu"))', ensure_ascii=False)
    assert fixed == original.replace(old_line, new_line)
    assert run_gpulint(["--fix", "nb.ipynb"], cwd=tmp_path).returncode == 0
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == fixed


def test_fix_that_adds_lines_keeps_them_in_their_cell(tmp_path):
    loop = (
        "def train(model, loader, optimizer):\n    model.train()\n    for x in loader:\n"
        "        out = model(x)\n        out.sum().backward()\n        optimizer.step()\n        torch.cuda.empty_cache()"
    )
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch", loop, "print(1)"), encoding="utf-8")
    assert run_gpulint(["--fix", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[2]["source"]).endswith("        del out\n        torch.cuda.empty_cache()")
    assert "".join(cells[1]["source"]) == "import torch"
    assert "".join(cells[3]["source"]) == "print(1)"


def test_a_module_level_wrap_stays_in_its_cell(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).cuda().eval()\nout = model(torch.ones(1, 4).cuda())"
    second = "print(out.shape)\ndoubled = out * 2"
    (tmp_path / "nb.ipynb").write_text(_notebook(first, second), encoding="utf-8")
    assert run_gpulint(["--fix", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[1]["source"]).endswith("with torch.no_grad():\n    out = model(torch.ones(1, 4).cuda())")
    assert "".join(cells[2]["source"]) == second


def test_each_cell_of_top_level_inference_is_reported_and_fixed_on_its_own(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).cuda().eval()\nout = model(torch.ones(1, 4).cuda())\nprint(out)"
    second = "for batch in [torch.ones(8, 4)]:\n    scores = model(batch)\n    print(scores.sum())"
    (tmp_path / "nb.ipynb").write_text(_notebook(first, "print(1)", second), encoding="utf-8")
    found = json.loads(run_gpulint(["check", "--format", "json", "nb.ipynb"], cwd=tmp_path).stdout)
    assert [(item["code"], item["cell"], item["line"]) for item in found] == [("GPU004", 2, 3), ("GPU004", 4, 2)]
    assert run_gpulint(["--fix", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[1]["source"]).endswith("with torch.no_grad():\n    out = model(torch.ones(1, 4).cuda())\nprint(out)")
    assert "".join(cells[3]["source"]).startswith("with torch.no_grad():\n    for batch in [torch.ones(8, 4)]:")
    assert "".join(cells[2]["source"]) == "print(1)"


def test_a_wrap_leaves_the_displayed_expression_outside(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).cuda().eval()\nout = model(torch.ones(1, 4).cuda())\nout.softmax(-1)"
    (tmp_path / "nb.ipynb").write_text(_notebook(first, "print(1)"), encoding="utf-8")
    assert run_gpulint(["--fix", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[1]["source"]).endswith("with torch.no_grad():\n    out = model(torch.ones(1, 4).cuda())\nout.softmax(-1)")


def test_no_wrap_when_the_forward_pass_is_the_displayed_expression(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).cuda().eval()\nmodel(torch.ones(1, 4).cuda())"
    (tmp_path / "nb.ipynb").write_text(_notebook(first, "print(1)"), encoding="utf-8")
    (item,) = json.loads(run_gpulint(["check", "--format", "json", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path).stdout)
    assert (item["code"], item["cell"], item["line"], item["fix"]) == ("GPU004", 2, 3, None)


def test_magics_and_shell_escapes_are_masked_not_parsed(tmp_path):
    source = _notebook(
        "%matplotlib inline\n!pip install torch\nimport torch",
        "files = !ls\n%timeit torch.ones(2)\nresult = torch.load('a.pt')  # noqa: GPU001",
        "%%bash\necho hello",
        "torch.ones?",
    )
    (tmp_path / "nb.ipynb").write_text(source, encoding="utf-8")
    result = run_gpulint(["check", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
    program = parse_notebook(source).program
    assert "!pip" not in program and "%%bash" not in program and "files = None" in program


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not a valid notebook: invalid JSON"),
        ('{"metadata": {}}', "not a valid notebook: no list of cells"),
        ('{"cells": [{"cell_type": "code"}]}', "not a valid notebook: cell 1 has no cell_type or source"),
    ],
)
def test_malformed_notebook_is_a_clear_error(tmp_path, content, message):
    (tmp_path / "bad.ipynb").write_text(content, encoding="utf-8")
    (tmp_path / "ok.py").write_text("import torch\nx = torch.load('a')\n")
    result = run_gpulint(["check", "bad.ipynb", "ok.py"], cwd=tmp_path)
    assert result.returncode == 2
    assert f"error: bad.ipynb: {message}" in result.stderr
    assert "ok.py:2:5: GPU001" in result.stdout


def test_discovery_includes_notebooks_but_not_checkpoints(tmp_path):
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\nx = torch.load('a')"), encoding="utf-8")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    (tmp_path / ".ipynb_checkpoints" / "nb-checkpoint.ipynb").write_text(_notebook("import torch\nx = torch.load('a')"))
    result = run_gpulint(["check", "--format", "concise", "-q", "."], cwd=tmp_path)
    assert result.stdout.splitlines() == ["nb.ipynb:cell 2:2:5: GPU001 [*] `torch.load` without `map_location` loads every tensor onto the device it was saved from"]


def test_a_notebooks_own_load_is_fixed_by_plain_fix(tmp_path):
    """No module imports a notebook, so its module-level state dict is only what its cells do with it."""
    loading = 'state = torch.load("w.pt")\nmodel.load_state_dict(state["model"])'
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch\nmodel = torch.nn.Linear(1024, 1024)", loading), encoding="utf-8")
    assert run_gpulint(["--fix", "nb.ipynb"], cwd=tmp_path).returncode == 0
    assert 'torch.load(\\"w.pt\\", map_location=\\"cpu\\")' in (tmp_path / "nb.ipynb").read_text(encoding="utf-8")
    (tmp_path / "as_module.py").write_text('import torch\nmodel = torch.nn.Linear(1024, 1024)\n' + loading + "\n")
    assert run_gpulint(["--fix", "as_module.py"], cwd=tmp_path).returncode == 1, "an importable module keeps it unsafe"


LOAD = 'model.load_state_dict(torch.load("w.pt"))'
FIXED_LOAD = 'model.load_state_dict(torch.load("w.pt", map_location="cpu"))'


def _replaced(text: str, old: str, new: str) -> str:
    """A notebook's JSON text with every source line that begins with ``old`` begun with ``new``."""
    old_json, new_json = json.dumps(old, ensure_ascii=False)[:-1], json.dumps(new, ensure_ascii=False)[:-1]
    assert old_json in text
    return text.replace(old_json, new_json)


def _fix_twice(folder) -> str:
    """Fix ``nb.ipynb`` twice, the second time with nothing left to change; its text after that."""
    first = run_gpulint(["--fix", "nb.ipynb"], cwd=folder)
    assert first.returncode == 0, first.stdout + first.stderr
    fixed = (folder / "nb.ipynb").read_text(encoding="utf-8")
    second = run_gpulint(["--fix", "nb.ipynb"], cwd=folder)
    assert second.returncode == 0 and "All checks passed!" in second.stdout, second.stdout + second.stderr
    assert (folder / "nb.ipynb").read_text(encoding="utf-8") == fixed
    return fixed


@pytest.mark.parametrize(
    "magic", ["%%time", "%%timeit -n 1 -r 1", "%%capture captured", "%%prun -s cumulative", "%%debug"]
)
def test_cell_magics_that_run_python_have_their_body_checked(tmp_path, magic):
    bash = "%%bash\nfor f in *; do\n    echo $f\ndone"
    original = _notebook("import torch\nmodel = torch.nn.Linear(1024, 1024)", f"{magic}\nx = 1\n{LOAD}", bash)
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    result = run_gpulint(["check", "--format", "concise", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nb.ipynb:cell 3:3:23: GPU001" in result.stdout
    assert _fix_twice(tmp_path) == _replaced(original, LOAD, FIXED_LOAD)
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert cells[2]["source"][0] == magic + "\n"


def test_statements_run_under_time_and_timeit_are_checked_in_their_own_columns(tmp_path):
    timed = (
        f"%time {LOAD}\nfor _ in range(2):\n    %timeit -n 10 -r 3 {LOAD}\n"
        "%time x = (1,\n%timeit -q"
    )
    original = _notebook("import torch\nmodel = torch.nn.Linear(1024, 1024)", timed)
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    result = run_gpulint(["check", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert "nb.ipynb:cell 3:1:29: GPU001 [*]" in result.stdout
    assert "nb.ipynb:cell 3:3:46: GPU001 [*]" in result.stdout
    assert f"1 | %time {LOAD}\n  |                             ^^^^^^^^^^^^^^^^^^ GPU001" in result.stdout
    items = json.loads(run_gpulint(["check", "--format", "json", "nb.ipynb"], cwd=tmp_path).stdout)
    columns = [(item["line"], item["column"], item["fix"]["edits"][0]["column"]) for item in items]
    assert columns == [(1, 29, 46), (3, 46, 63)]
    expected = original
    for prefix in ("%time ", "    %timeit -n 10 -r 3 "):
        expected = _replaced(expected, prefix + LOAD, prefix + FIXED_LOAD)
    assert _fix_twice(tmp_path) == expected


def test_only_real_help_lines_are_masked(tmp_path):
    help_lines = "?torch.load\ntorch.load?\ntorch.load??\ntorch.nn.Module.to?\n%timeit?\ntorch.*load*?"
    source = _notebook(f"import torch\n{help_lines}", 'state = torch.load("w.pt")  # map_location?')
    (tmp_path / "nb.ipynb").write_text(source, encoding="utf-8")
    result = run_gpulint(["check", "--format", "concise", "-q", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == ["nb.ipynb:cell 3:1:9"]


def test_a_line_continuing_a_bracket_is_python_even_where_it_starts_with_a_percent_sign(tmp_path):
    report = "print('loss %.4f, acc %.3f'\n      % (loss, acc))\nprint(\n    !done)"  # the last one still an error
    formatted = "import torch\nloss, acc = 1.0, 0.5\n" + report.split("\nprint(\n")[0]
    (tmp_path / "nb.ipynb").write_text(_notebook(formatted, "%matplotlib inline\n" + SAFE_LOAD), encoding="utf-8")
    result = run_gpulint(["check", "--format", "concise", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith("nb.ipynb:cell 3:3:23: GPU001")
    (tmp_path / "nb.ipynb").write_text(_notebook("x = (1\n% 2)\n%ls", report), encoding="utf-8")
    assert [cell.source for cell in parse_notebook((tmp_path / "nb.ipynb").read_text()).cells][0] == "x = (1\n% 2)\n%ls"
    program = parse_notebook((tmp_path / "nb.ipynb").read_text()).code
    assert "% 2)" in program and "%ls" not in program


def test_escapes_continued_with_a_backslash_are_masked_whole(tmp_path):
    escapes = "!pip install \\\n    torch \\\n    numpy\n%pip install \\\n  torchvision"
    original = _notebook(f"{escapes}\nimport torch", SAFE_LOAD)
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    result = run_gpulint(["check", "--format", "concise", "-q", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout.startswith("nb.ipynb:cell 3:2:23: GPU001")
    assert _fix_twice(tmp_path) == _replaced(original, LOAD, FIXED_LOAD)


def test_a_cell_that_does_not_parse_is_an_error_at_its_place_and_the_others_are_checked(tmp_path):
    original = _notebook("import torch\nmodel = torch.nn.Linear(1024, 1024)", "x = 1\ndef f(:\n    pass", SAFE_LOAD)
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    for _ in range(2):  # the second check is answered from the cache
        result = run_gpulint(["check", "--format", "concise", "nb.ipynb"], cwd=tmp_path)
        assert result.returncode == 2
        assert "error: nb.ipynb:cell 3:2:7: cannot parse" in result.stderr
        assert "nb.ipynb:cell 4:2:23: GPU001" in result.stdout
    for mode in ("--fix", "--diff"):
        result = run_gpulint([mode, "nb.ipynb"], cwd=tmp_path)
        assert result.returncode == 2 and "error: nb.ipynb:cell 3:2:7: cannot parse" in result.stderr
        assert "---" not in result.stdout
        assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == original


def test_diff_shows_each_changed_cell_in_its_own_lines(tmp_path):
    original = _notebook("import torch", SAFE_LOAD, "print(1)", f"%time {LOAD}")
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    result = run_gpulint(["--diff", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 1, result.stdout + result.stderr
    assert result.stdout == (
        "--- nb.ipynb:cell 3\n+++ nb.ipynb:cell 3\n@@ -1,2 +1,2 @@\n model = torch.nn.Linear(1024, 1024)\n"
        f"-{LOAD}\n+{FIXED_LOAD}\n"
        f"--- nb.ipynb:cell 5\n+++ nb.ipynb:cell 5\n@@ -1 +1 @@\n-%time {LOAD}\n+%time {FIXED_LOAD}\n"
    )
    assert (tmp_path / "nb.ipynb").read_text(encoding="utf-8") == original


def test_add_noqa_writes_into_the_cell(tmp_path):
    original = _notebook("import torch", "%time state = torch.load('w.pt')\nx = 1", "y = torch.load('v.pt')  # keep")
    (tmp_path / "nb.ipynb").write_text(original, encoding="utf-8")
    result = run_gpulint(["check", "--add-noqa", "nb.ipynb"], cwd=tmp_path)
    assert result.returncode == 0 and "Added 2 noqa directives." in result.stderr
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[2]["source"]) == "%time state = torch.load('w.pt')  # noqa: GPU001\nx = 1"
    assert "".join(cells[3]["source"]) == "y = torch.load('v.pt')  # keep  # noqa: GPU001"
    assert run_gpulint(["check", "nb.ipynb"], cwd=tmp_path).returncode == 0


def test_emptying_the_cache_in_the_last_cell_is_reported(tmp_path):
    """A script's last ``empty_cache()`` is not reported (the process exits next), but a notebook's
    kernel keeps its names and its cache after the last cell."""
    cells = ("import torch", "model = torch.nn.Linear(8, 8).cuda()\nout = model(torch.ones(8).cuda())\nprint(out)",
             "torch.cuda.empty_cache()")
    (tmp_path / "nb.ipynb").write_text(_notebook(*cells), encoding="utf-8")
    (tmp_path / "script.py").write_text("\n".join(cells) + "\n", encoding="utf-8")
    result = run_gpulint(["check", "--select", "GPU003", "--format", "concise", "nb.ipynb", "script.py"], cwd=tmp_path)
    assert "nb.ipynb:cell 4:1:1: GPU003" in result.stdout
    assert "script.py" not in result.stdout
