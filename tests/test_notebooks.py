"""Jupyter notebooks: code cells checked as one program, positions per cell, fixes written in place."""

from __future__ import annotations

import json

import pytest

from gpulint.notebook import parse_notebook
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


SAFE_LOAD = 'model = torch.nn.Linear(2, 2)\nmodel.load_state_dict(torch.load("w.pt"))'


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
        "        loss = model(x).sum()\n        loss.backward()\n        optimizer.step()\n        torch.cuda.empty_cache()"
    )
    (tmp_path / "nb.ipynb").write_text(_notebook("import torch", loop, "print(1)"), encoding="utf-8")
    assert run_gpulint(["--fix", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[2]["source"]).endswith("        del loss\n        torch.cuda.empty_cache()")
    assert "".join(cells[1]["source"]) == "import torch"
    assert "".join(cells[3]["source"]) == "print(1)"


def test_a_module_level_wrap_stays_in_its_cell(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).eval()\nout = model(torch.ones(1, 4))"
    second = "print(out.shape)\ndoubled = out * 2"
    (tmp_path / "nb.ipynb").write_text(_notebook(first, second), encoding="utf-8")
    assert run_gpulint(["--fix", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[1]["source"]).endswith("with torch.no_grad():\n    out = model(torch.ones(1, 4))")
    assert "".join(cells[2]["source"]) == second


def test_a_wrap_leaves_the_displayed_expression_outside(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).eval()\nout = model(torch.ones(1, 4))\nout.softmax(-1)"
    (tmp_path / "nb.ipynb").write_text(_notebook(first, "print(1)"), encoding="utf-8")
    assert run_gpulint(["--fix", "--unsafe-fixes", "nb.ipynb"], cwd=tmp_path).returncode == 0
    cells = json.loads((tmp_path / "nb.ipynb").read_text(encoding="utf-8"))["cells"]
    assert "".join(cells[1]["source"]).endswith("with torch.no_grad():\n    out = model(torch.ones(1, 4))\nout.softmax(-1)")


def test_no_wrap_when_the_forward_pass_is_the_displayed_expression(tmp_path):
    first = "import torch\nmodel = torch.nn.Linear(4, 2).eval()\nmodel(torch.ones(1, 4))"
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
    assert result.stdout.splitlines() == ["nb.ipynb:cell 2:2:5: GPU001 `torch.load` without `map_location` loads every tensor onto the device it was saved from"]
