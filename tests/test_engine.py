"""The engine's parts: suppression, the import table, edits and fix application, source round trips."""

from __future__ import annotations

import ast
import os
import stat
from pathlib import Path

import libcst as cst
import pytest

from gpulint.engine.diagnostics import Applicability, Edit, Fix
from gpulint.engine.fixer import FixError, apply_fixes, fix_text
from gpulint.semantic.import_table import ImportTable
from gpulint.engine.linter import lint_source
from gpulint.engine.rule import FileContext, FixAvailability, Rule
from gpulint.rules import ALL_RULES
from gpulint.rules.gpu001_torch_load_without_map_location import TorchLoadWithoutMapLocation as GPU001
from gpulint.engine.source import SourceError, read_source, write_source
from gpulint.semantic.model import SemanticModel


def _codes(source):
    return [(d.start.line, d.code) for d in lint_source(source, "x.py", ALL_RULES)]


LOAD = "import torch\nx = torch.load(p){comment}\n"


@pytest.mark.parametrize(
    ("comment", "suppressed"),
    [
        ("  # noqa", True),
        ("  # noqa: GPU001", True),
        ("  # NOQA:GPU001", True),
        ("  # noqa: E501, GPU001", True),
        ("  # noqa: E501", False),
        ("  # noqa: GPU002", False),
        ("  # a comment mentioning noqa-less things", False),
        ("", False),
    ],
)
def test_noqa_comments(comment, suppressed):
    assert _codes(LOAD.format(comment=comment)) == ([] if suppressed else [(2, "GPU001")])


def test_noqa_applies_to_the_line_where_a_multiline_diagnostic_starts():
    assert _codes("import torch\nx = torch.load(  # noqa: GPU001\n    p,\n)\n") == []
    assert _codes("import torch\nx = torch.load(\n    p,  # noqa: GPU001\n)\n") == [(2, "GPU001")]


def test_noqa_inside_a_string_does_not_suppress():
    assert _codes('import torch\nx = torch.load("# noqa")\n') == [(2, "GPU001")]


def test_import_table_qualified_names():
    tree = ast.parse(
        "import torch as t\nfrom torch import load as tl\nfrom torch import jit\n"
        "def f():\n    import torch.hub\nfrom . import sibling\n"
    )
    table = ImportTable.from_tree(tree)
    assert table.qualified_names("t.load") == {"torch.load"}
    assert table.qualified_names("tl") == {"torch.load"}
    assert table.qualified_names("jit.load") == {"torch.jit.load"}
    assert table.qualified_names("torch.hub.load") == {"torch.hub.load"}
    assert table.qualified_names("sibling.f") == set()
    star = ImportTable.from_tree(ast.parse("from torch.serialization import *\n"))
    assert star.qualified_names("load") == {"torch.serialization.load"}


def test_survey_gate_needs_a_call_that_imports_resolve_to_a_target():
    def fires(source: str) -> bool:
        return bool(GPU001.seeds(SemanticModel(ast.parse(source), source)))

    assert fires("import torch\nx = (torch  # c\n    .load)(p)\n")
    assert fires("from torch import load as fetch\nfetch(p)\n")
    assert not fires("import torch\nx = torch.loads(p)\nmytorch.load(p)\n")
    assert not fires('import torch\n"""Use torch.load(p) here."""\n# torch.load(p)\nf = torch.load\n')


def test_edit_between_is_minimal():
    assert Edit.between("f(a)", "f(a, b)") == Edit(3, 3, ", b")
    assert Edit.between("same", "same") is None


def test_apply_fixes_skips_overlapping_fixes():
    first = Fix("one", Applicability.SAFE, (Edit(0, 1, "A"),))
    overlapping = Fix("two", Applicability.SAFE, (Edit(0, 2, "BB"),))
    later = Fix("three", Applicability.SAFE, (Edit(3, 4, "D"),))
    assert apply_fixes("abcd", [overlapping, later, first]) == ("Abcd"[:3] + "D", 2)


class _AddsGcImport(Rule):
    """A test rule: asks for ``import gc`` in every file that calls ``collect_garbage``."""

    code = "GPU999"
    name = "test-adds-gc-import"
    message = "needs gc"
    fix_title = "Import gc"
    fix_availability = FixAvailability.ALWAYS
    tokens = frozenset({"collect_garbage"})

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "collect_garbage":
            fix = self.make_fix(Applicability.SAFE, [self.replacement_edit(node, cst.parse_expression("gc.collect()")), self.import_edit("gc")])
            self.report(node, fix=fix)


def test_import_edit_adds_an_import_once_in_sorted_place():
    source = '"""Doc."""\nimport os\n\ncollect_garbage()\ncollect_garbage()\n'
    result = fix_text(source, lambda text: lint_source(text, "x.py", [_AddsGcImport]), [Applicability.SAFE])
    assert result.text == '"""Doc."""\nimport gc\nimport os\n\ngc.collect()\ngc.collect()\n'
    assert result.applied == 2


def test_fix_producing_invalid_code_is_refused():
    class _Breaks(_AddsGcImport):
        """A test rule whose fix does not parse."""

        def visit_Call(self, node: cst.Call) -> None:
            self.report(node, fix=Fix("break", Applicability.SAFE, (Edit(0, 0, "def ("),)))

    with pytest.raises(FixError, match="does not parse"):
        fix_text("collect_garbage()\n", lambda text: lint_source(text, "x.py", [_Breaks]), [Applicability.SAFE])


def test_rule_context_collects_diagnostics_with_one_based_positions():
    diagnostics = lint_source("import torch\n\n    \nif x:\n    y = torch.load(p)\n", "x.py", ALL_RULES)
    (diagnostic,) = diagnostics
    assert (diagnostic.start.line, diagnostic.start.column, diagnostic.end.line, diagnostic.end.column) == (5, 9, 5, 22)
    assert isinstance(FileContext("x.py", "", cst.parse_module("")).diagnostics, list)


@pytest.mark.parametrize(
    "raw",
    [
        b"import torch\r\nx = torch.load(p)\r\n",
        b"\xef\xbb\xbfimport torch\nx = torch.load(p)\n",
        "# -*- coding: latin-1 -*-\nimport torch\nx = torch.load('caf\u00e9')\n".encode("latin-1"),
        b"import torch\nif x:\n\ty = torch.load(p)\n",
    ],
    ids=["crlf", "bom", "latin-1-cookie", "tabs"],
)
def test_fix_round_trips_encoding_newlines_and_indentation(tmp_path, raw):
    path = tmp_path / "x.py"
    path.write_bytes(raw)
    source = read_source(path)
    fixed = fix_text(source.text, lambda text: lint_source(text, "x.py", ALL_RULES), [Applicability.SAFE, Applicability.UNSAFE])
    write_source(source, fixed.text)
    written = path.read_bytes()
    assert written.replace(b', map_location="cpu"', b"").replace(b", map_location='cpu'", b"") == raw
    assert written != raw


def test_undecodable_file_is_a_source_error(tmp_path):
    path = tmp_path / "x.py"
    path.write_bytes(b"x = '\xff'\n")
    with pytest.raises(SourceError, match="not valid utf-8"):
        read_source(path)


def test_write_keeps_permissions_and_refuses_a_file_changed_on_disk(tmp_path):
    path = tmp_path / "x.py"
    path.write_text("a = 1\n")
    os.chmod(path, 0o751)
    source = read_source(path)
    write_source(source, "a = 2\n")
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert path.read_text() == "a = 2\n"
    path.write_text("a = 3\n")
    with pytest.raises(SourceError, match="changed on disk"):
        write_source(source, "a = 4\n")
    assert path.read_text() == "a = 3\n"
    assert [p.name for p in tmp_path.iterdir()] == ["x.py"]


def test_match_statements_and_prefilter_agree():
    source = "import json\nimport torch\nmatch c:\n    case 1:\n        json.load(f)\n        torch.load(f)\n"
    assert lint_source(source, "x.py", ALL_RULES) == lint_source(source, "x.py", ALL_RULES, prefilter=False)
    assert [d.start.line for d in lint_source(source, "x.py", ALL_RULES)] == [6]


def test_a_rule_decided_on_the_model_needs_no_libcst_parse_of_the_file(monkeypatch):
    """GPU001 reports from the semantic model, and LibCST parses only the call its fix changes."""
    source = (
        "import torch\n\n\ndef helper(net, path):\n    other = 1\n"
        "    net.load_state_dict(torch.load(path))  # keep\n\n\ndef unrelated():\n    return 2\n"
    )

    def refuse(text, *args, **kwargs):
        raise AssertionError("the whole file was parsed with LibCST")

    monkeypatch.setattr(cst, "parse_module", refuse)
    [diagnostic] = lint_source(source, "x.py", [GPU001])
    assert (diagnostic.code, diagnostic.start.line, diagnostic.start.column) == ("GPU001", 6, 25)
    assert diagnostic.fix is not None and diagnostic.fix.applicability is Applicability.SAFE
    [edit] = diagnostic.fix.edits
    assert source[: edit.start] + edit.content + source[edit.end :] == source.replace(
        "torch.load(path)", 'torch.load(path, map_location="cpu")'
    )


def test_a_visitor_rule_still_parses_the_file(monkeypatch):
    """The reference point of the test above: a LibCST visitor rule does parse the file."""
    parsed = []
    original = cst.parse_module
    monkeypatch.setattr(cst, "parse_module", lambda text, *a, **k: parsed.append(text) or original(text, *a, **k))
    lint_source("import torch\ntorch.cuda.memory_cached()\n", "x.py", ALL_RULES)
    assert parsed


def test_gpu001_fix_in_a_crlf_file_keeps_its_line_breaks():
    source = "import torch\r\ndef f(p):\r\n    state = torch.load(\r\n        p,\r\n    )\r\n    return state\r\n"
    [diagnostic] = lint_source(source, "x.py", [GPU001])
    assert diagnostic.fix is not None
    fixed = fix_text(source, lambda text: lint_source(text, "x.py", [GPU001]), {Applicability.SAFE, Applicability.UNSAFE}).text
    assert fixed == source.replace("        p,\r\n", '        p,\r\n        map_location="cpu",\r\n')


def test_gpu001_offers_no_fix_inside_an_f_string_joined_with_literals_of_the_other_quote():
    source = (
        "import torch\n\n\ndef restore(model, path):\n"
        "    print('restored: ' f\"{model.load_state_dict(torch.load(path))}\")\n"
        "    print(f\"it is {torch.load(path)}\")\n"
    )
    joined, single = lint_source(source, "x.py", [GPU001])
    assert joined.fix is None and "both quote styles" in (joined.fix_note or "")
    assert single.fix is not None and "map_location='cpu'" in single.fix.edits[0].content


def test_gpu002_reports_where_python_cannot_parse_the_file():
    """Without a semantic model (syntax this Python rejects, LibCST accepts) GPU002 decides on LibCST."""
    from gpulint.engine.linter import lint_source
    from gpulint.rules import rules_for

    source = (Path(__file__).parent.parent / "fixtures" / "GPU002" / "positives.py").read_text()
    found = lint_source(source, "positives.py", rules_for(("GPU002",)))
    newer = lint_source(source + "\ntype Alias = int\n", "positives.py", rules_for(("GPU002",)))
    assert found and [(d.start, d.code) for d in newer] == [(d.start, d.code) for d in found]
