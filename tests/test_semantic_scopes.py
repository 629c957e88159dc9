"""The semantic model's scopes and bindings, checked against Python's own ``symtable``."""

from __future__ import annotations

import ast
import symtable
from collections import Counter
from pathlib import Path
from typing import Counter as CounterType, Tuple

import pytest
import torch

from gpulint.semantic.scopes import Binding, build_scopes

KINDS = {"function": "function", "class": "class", "module": "module"}
REAL_FILES = sorted((Path(torch.__file__).parent / "nn").rglob("*.py"))[:60]


def _ours(source: str) -> CounterType[Tuple[int, str, frozenset]]:
    root, _ = build_scopes(ast.parse(source))
    found: CounterType[Tuple[int, str, frozenset]] = Counter()
    for scope in root.walk():
        kind = "module" if scope.parent is None else "class" if scope.is_class else "function"
        line = getattr(scope.node, "lineno", 0)
        found[(line, kind, frozenset(scope.locals()))] += 1
    return found


def _symtable(source: str) -> CounterType[Tuple[int, str, frozenset]]:
    found: CounterType[Tuple[int, str, frozenset]] = Counter()
    stack = [symtable.symtable(source, "<test>", "exec")]
    while stack:
        table = stack.pop()
        kind = KINDS[table.get_type() if isinstance(table.get_type(), str) else table.get_type().value]
        names = frozenset(
            symbol.get_name() for symbol in table.get_symbols()
            if symbol.is_local() and not symbol.get_name().startswith(".") and symbol.get_name() != "__class__"
        )
        found[(table.get_lineno() if kind != "module" else 0, kind, names)] += 1
        stack.extend(table.get_children())
    return found


CASES = [
    "x = 1\ndef f(a, *b, c, **d):\n    y = a\n    global x\n    x = 2\n    return lambda z: z + y\n",
    "class C:\n    attr = 1\n    def m(self):\n        return attr\n",
    "def outer():\n    v = 1\n    def inner():\n        nonlocal v\n        v = 2\n    return inner\n",
    "def f(xs):\n    return [y for x in xs for y in x if (w := y)]\n",
    "import a.b as c, d.e\nfrom f import g as h, i\ntry:\n    pass\nexcept E as err:\n    pass\n",
    "def f():\n    for i, (j, *k) in x:\n        del i\n    with a as (b, c):\n        pass\n    match v:\n        case [p, *q] | {'k': p, **q}:\n            pass\n",
    "def f():\n    x: int\n    y: int = 3\n    class K:\n        z = y\n",
]


@pytest.mark.parametrize("source", CASES)
def test_locals_agree_with_symtable(source):
    assert _ours(source) == _symtable(source)


def test_locals_agree_with_symtable_on_real_files():
    for path in REAL_FILES:
        source = path.read_text(encoding="utf-8")
        assert _ours(source) == _symtable(source), path


def test_names_resolve_to_the_binding_python_reads():
    source = (
        "model = 1\n"
        "def a():\n    model = 2\n    def b():\n        return model\n    return b\n"
        "def c():\n    return model\n"
        "class K:\n    model = 3\n    def m(self):\n        return model\n"
    )
    tree = ast.parse(source)
    root, scope_of = build_scopes(tree)
    reads = [node for node in ast.walk(tree) if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)]
    resolved = {node.lineno: scope_of[id(node)].resolve(node.id) for node in reads}
    module_model = Binding(root, "model")
    a_scope = root.children[0]
    assert resolved[5] == Binding(a_scope, "model")
    assert resolved[8] == module_model
    assert resolved[12] == module_model
    assert resolved[5] != module_model
