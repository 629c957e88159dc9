"""The strings a path expression may evaluate to, as far as the code spells them.

``os.path.join(model_pool, name + ".pth")`` after ``model_pool = "model_zoo"`` may be
``"model_zoo/<?>.pth"``: names are followed to every assignment that binds them (by binding, in
any scope), an item of a dict display that nothing changes to its values, ``args.x`` to the
default of the one ``add_argument`` of the module that fills ``x``, and strings are put together
as ``+``, f-strings, ``%``, ``str.format``, ``os.path.join`` and ``pathlib``'s ``/`` do. Whatever
the code does not spell — a parameter, a loop variable, a call, a name rebound with ``+=`` — is
:data:`UNKNOWN` in the result, so a reader can still see a folder the path is under when it cannot
see the file's name.
"""

from __future__ import annotations

import ast
import itertools
import re
from typing import Dict, FrozenSet, Iterable, List, Optional, Set

from gpulint.semantic.model import CallSite, Function, SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import ast_dotted_name

UNKNOWN = "\0"
"""Stands for a part of a path the code does not spell."""
MAX_VALUES = 32
"""The most strings an expression is followed to; beyond, it is taken as unknown."""
MAX_DEPTH = 12
"""How many names deep a path is followed."""
MAX_LENGTH = 4096
"""The longest string a path is followed to; beyond, it is taken as unknown."""
PATH_JOINS = frozenset({"os.path.join", "posixpath.join", "ntpath.join"})
PATH_KEEPERS = frozenset({
    "str", "os.path.expanduser", "os.path.abspath", "os.path.normpath", "os.path.realpath", "os.fspath",
    "pathlib.Path", "pathlib.PurePath", "pathlib.PosixPath", "pathlib.WindowsPath",
})
"""Functions that return the path they are given, spelled alike for what a reader looks for."""
PARSE_ARGUMENTS = frozenset({"parse_args"})
ADD_ARGUMENT = "add_argument"
CONSTRUCTOR = "__init__"
JOINED = "\x01"
"""Stands for the separator ``os.path.join`` puts between its parts, until :func:`_rooted` reads them."""
ATTRIBUTE_SETTERS = frozenset({"setattr", "vars", "__dict__", "set_defaults"})
"""What sets an attribute the code does not spell: ``setattr(obj, name, value)``, ``vars(obj)``,
``obj.__dict__``, ``parser.set_defaults(x=...)``."""
FORMAT_FIELD = re.compile(r"\{[^{}]*\}")
PERCENT_FIELD = re.compile(r"%(\([^)]*\))?[-#0 +]*\d*(\.\d+)?[sdirfgeExXoc]")

_Strings = FrozenSet[str]
_UNKNOWN_ONLY: _Strings = frozenset({UNKNOWN})


def path_strings(model: SemanticModel, node: ast.expr) -> _Strings:
    """Every string ``node`` may evaluate to, :data:`UNKNOWN` standing for what the code does not
    spell (a wholly unknown value is the string ``UNKNOWN``)."""
    return _Paths(model).strings(node, frozenset(), 0)


def segments(path: str) -> List[str]:
    """The folders and file name of a path, ``/`` and ``\\`` both separating them."""
    return [part for part in re.split(r"[/\\]", path) if part not in ("", ".")]


class _Paths:
    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self._known: Dict[int, _Strings] = {}
        """Each expression's strings once followed (a cycle or the depth bound cut on the way only
        makes them more unknown): a name rebound from itself many times is followed once a binding."""

    def strings(self, node: ast.expr, following: FrozenSet[int], depth: int) -> _Strings:
        if depth > MAX_DEPTH or id(node) in following:
            return _UNKNOWN_ONLY
        known = self._known.get(id(node))
        if known is None:
            known = self._known[id(node)] = self._strings(node, following | {id(node)}, depth)
        return known

    def _strings(self, node: ast.expr, following: FrozenSet[int], depth: int) -> _Strings:
        if isinstance(node, ast.Constant):
            return frozenset({node.value}) if isinstance(node.value, str) else _UNKNOWN_ONLY
        if isinstance(node, ast.JoinedStr):
            return self._concatenation([self._formatted(part, following, depth) for part in node.values])
        if isinstance(node, ast.BinOp):
            return self._operation(node, following, depth)
        if isinstance(node, ast.Call):
            return self._call(node, following, depth)
        if isinstance(node, ast.Name):
            return self._name(node, following, depth)
        if isinstance(node, ast.Attribute):
            return self._attribute(node, following, depth)
        if isinstance(node, ast.Subscript):
            return self._item(node, following, depth)
        return _UNKNOWN_ONLY

    def _item(self, node: ast.Subscript, following: FrozenSet[int], depth: int) -> _Strings:
        """``model_dirs[name]`` where every binding of ``model_dirs`` is a dict display and every
        read of it looks an item up (nothing can change it): the value under a constant key, or
        any of its values."""
        mapping = node.value
        if not isinstance(mapping, ast.Name) or self.model.resolved_names(mapping) or mapping.id in self.model.names_bound_otherwise:
            return _UNKNOWN_ONLY
        binding = self.model.scope_at(mapping).resolve(mapping.id)
        if binding.name in binding.scope.parameters:
            return _UNKNOWN_ONLY
        displays: List[ast.Dict] = []
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load):
                lookup = self.model.parent(use)
                if not (isinstance(lookup, ast.Subscript) and lookup.value is use and isinstance(lookup.ctx, ast.Load)):
                    return _UNKNOWN_ONLY
                continue
            value = self._assigned_to(use)
            if not isinstance(value, ast.Dict) or any(key is None for key in value.keys):
                return _UNKNOWN_ONLY
            displays.append(value)
        key = node.slice
        chosen = [
            value for display in displays for item_key, value in zip(display.keys, display.values)
            if not (isinstance(key, ast.Constant) and isinstance(item_key, ast.Constant)) or item_key.value == key.value
        ]
        return self._union(self.strings(value, following, depth + 1) for value in chosen) if chosen else _UNKNOWN_ONLY

    def _formatted(self, part: ast.expr, following: FrozenSet[int], depth: int) -> _Strings:
        if isinstance(part, ast.FormattedValue):
            return self.strings(part.value, following, depth + 1) if part.format_spec is None else _UNKNOWN_ONLY
        return self.strings(part, following, depth)

    def _operation(self, node: ast.BinOp, following: FrozenSet[int], depth: int) -> _Strings:
        left = self.strings(node.left, following, depth + 1)
        if isinstance(node.op, ast.Add):
            return self._concatenation([left, self.strings(node.right, following, depth + 1)])
        if isinstance(node.op, ast.Div):
            return self._joined([left, self.strings(node.right, following, depth + 1)])
        if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
            return frozenset(PERCENT_FIELD.sub(UNKNOWN, value) for value in left)
        return _UNKNOWN_ONLY

    def _call(self, node: ast.Call, following: FrozenSet[int], depth: int) -> _Strings:
        names = self.model.resolved_names(node.func)
        arguments = [argument for argument in node.args if not isinstance(argument, ast.Starred)]
        if node.keywords or len(arguments) != len(node.args):
            return _UNKNOWN_ONLY
        if names & PATH_JOINS and arguments:
            return self._joined([self.strings(argument, following, depth + 1) for argument in arguments])
        if names & PATH_KEEPERS and len(arguments) == 1:
            return self.strings(arguments[0], following, depth + 1)
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant):
            template = func.value.value
            if isinstance(template, str):
                return frozenset({FORMAT_FIELD.sub(UNKNOWN, template)})
        return _UNKNOWN_ONLY

    def _name(self, node: ast.Name, following: FrozenSet[int], depth: int) -> _Strings:
        if self.model.resolved_names(node) or node.id in self.model.names_bound_otherwise:
            return _UNKNOWN_ONLY
        binding = self.model.scope_at(node).resolve(node.id)
        values: List[_Strings] = []
        if binding.name in binding.scope.parameters:
            values.append(self._passed(binding.scope.node, binding.name, following, depth))
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load):
                continue
            value = self._assigned_to(use)
            values.append(self.strings(value, following, depth + 1) if value is not None else _UNKNOWN_ONLY)
        return self._union(values) if values else _UNKNOWN_ONLY

    def _assigned_to(self, target: ast.expr) -> Optional[ast.expr]:
        """The value a plain ``name = value`` (or ``name: T = value``) binds, else None."""
        statement = self.model.parent(target)
        if isinstance(statement, ast.Assign) and statement.targets == [target]:
            return statement.value
        if isinstance(statement, ast.AnnAssign) and statement.target is target:
            return statement.value
        return None

    def _passed(self, definition: ast.AST, parameter: str, following: FrozenSet[int], depth: int) -> _Strings:
        """What the calls of a function of the module pass for one of its parameters: the
        argument, or the default where a call passes none; unknown for a function the module never
        calls. A method is followed only as ``__init__``, through the calls of its class, and only
        where no class of the module derives from it (a subclass may call it otherwise)."""
        function = self.model.function(definition)
        if function is None or not self.model.call_sites:
            return _UNKNOWN_ONLY
        sites = self._calls(function) if function.owner is None else self._constructions(function)
        if not sites:
            return _UNKNOWN_ONLY
        arguments = function.node.args
        positional = [*arguments.posonlyargs, *arguments.args]
        defaults = dict(zip([a.arg for a in positional[len(positional) - len(arguments.defaults):]], arguments.defaults))
        defaults.update({a.arg: d for a, d in zip(arguments.kwonlyargs, arguments.kw_defaults) if d is not None})
        index = function.positional.index(parameter) if parameter in function.positional else None
        values: List[_Strings] = []
        for site in sites:
            call = site.node
            if any(isinstance(argument, ast.Starred) for argument in call.args) or any(k.arg is None for k in call.keywords):
                return _UNKNOWN_ONLY
            passed = next((k.value for k in call.keywords if k.arg == parameter), None)
            if passed is None and index is not None and index < len(call.args):
                passed = call.args[index]
            passed = passed if passed is not None else defaults.get(parameter)
            values.append(self.strings(passed, following, depth + 1) if passed is not None else _UNKNOWN_ONLY)
        return self._union(values)

    def _calls(self, function: Function) -> List[CallSite]:
        """The calls of a function of the module, where its name is only ever called (not handed to
        ``map``, aliased or stored, which calls it unseen)."""
        scope = function.scope.parent
        if scope is None or function.node.decorator_list or not self._only_called(scope.resolve(function.name)):
            return []
        return function.calls

    def _constructions(self, constructor: Function) -> List[CallSite]:
        """The calls of the class whose ``__init__`` this is, where its name is only ever called, no
        class of the module derives from it, and none of its methods builds another instance
        (``cls(...)``, ``type(self)(...)``)."""
        owner = constructor.owner
        if owner is None or constructor.name != CONSTRUCTOR or owner.scope.parent is None or owner.node.decorator_list or any(
            self.model.defined_class(base) is owner.node for cls in self.model.nodes(ast.ClassDef) for base in cls.bases
        ):
            return []
        if not self._only_called(owner.scope.parent.resolve(owner.node.name)) or any(
            isinstance(node, ast.Call) and isinstance(node.func, (ast.Name, ast.Call, ast.Attribute))
            and (ast_dotted_name(node.func) in ("cls", "self.__class__") or (
                isinstance(node.func, ast.Call) and ast_dotted_name(node.func.func) == "type"
            ))
            for node in ast.walk(owner.node)
        ):
            return []
        return [site for site in self.model.call_sites if self.model.defined_class(site.node.func) is owner.node]

    def _only_called(self, binding: Binding) -> bool:
        reads = [use for use in self.model.uses(binding) if isinstance(use.ctx, ast.Load)]
        return all(_called(self.model.parent(read), read) for read in reads)

    def _attribute(self, node: ast.Attribute, following: FrozenSet[int], depth: int) -> _Strings:
        """``self.x``, by every plain assignment of ``x`` on the instance in the module's methods of
        the class; ``args.x``, by :meth:`_argument_default`."""
        place = self.model.place(node)
        if place is not None and place.binding.name == "self" and place.binding.scope.is_class and place.path.count(".") == 1:
            stores = [
                other for other in self.model.nodes(ast.Attribute)
                if not isinstance(other.ctx, ast.Load) and other.attr == node.attr
            ]
            owner = place.binding.scope.node
            stores = [store for store in stores if not self._on_another_class(store, owner)]
            if self._sets_attributes_unseen() or any(self.model.place(store) != place for store in stores):
                return _UNKNOWN_ONLY
            values = [self._assigned_to(store) for store in stores]
            return self._union(
                self.strings(value, following, depth + 1) if value is not None else _UNKNOWN_ONLY for value in values
            ) if values else _UNKNOWN_ONLY
        return self._argument_default(node, following, depth)

    def _on_another_class(self, store: ast.Attribute, owner: ast.AST) -> bool:
        """Whether ``store`` sets an attribute on ``self`` in a class that neither is nor derives
        from ``owner`` and that no class of the module combines with it (a mixin's method runs on
        the combined class): another object, whatever its attribute's name."""
        stored = self.model.place(store)
        if stored is None or stored.binding.name != "self" or not stored.binding.scope.is_class:
            return False
        other = stored.binding.scope.node
        return not any(
            self._derives_from(cls, other, frozenset()) and self._derives_from(cls, owner, frozenset())
            for cls in [*self.model.nodes(ast.ClassDef), other]
        )

    def _derives_from(self, cls: ast.AST, owner: ast.AST, seen: FrozenSet[int]) -> bool:
        """Whether ``cls`` is ``owner`` or derives from it through classes of the module (a class
        another module defines cannot derive from one of this module's)."""
        if cls is owner:
            return True
        if not isinstance(cls, ast.ClassDef) or id(cls) in seen:
            return False
        return any(
            defined is not None and self._derives_from(defined, owner, seen | {id(cls)})
            for defined in map(self.model.defined_class, cls.bases)
        )

    def _sets_attributes_unseen(self) -> bool:
        """Whether the module may set an attribute by name: ``setattr``, ``vars(...)``,
        ``__dict__``, or an argument parser's ``set_defaults``; not where ``vars(...)`` or
        ``__dict__`` is only looked up in (``models.__dict__[args.arch]()``, as scripts pick a
        torchvision model by name)."""
        return any(
            ((isinstance(node, ast.Name) and node.id in ATTRIBUTE_SETTERS)
             or (isinstance(node, ast.Attribute) and node.attr in ATTRIBUTE_SETTERS))
            and not self._looked_up_in(node)
            for node in ast.walk(self.model.tree)
        )

    def _looked_up_in(self, node: ast.AST) -> bool:
        """Whether ``node`` is ``__dict__`` or ``vars`` read only to look a key up in:
        ``obj.__dict__[key]`` or ``vars(obj)[key]``, read."""
        mapping = node
        if isinstance(node, ast.Name) and node.id == "vars":
            call = self.model.parent(node)
            if not (isinstance(call, ast.Call) and call.func is node):
                return False
            mapping = call
        elif not (isinstance(node, ast.Attribute) and node.attr == "__dict__"):
            return False
        lookup = self.model.parent(mapping)
        return isinstance(lookup, ast.Subscript) and lookup.value is mapping and isinstance(lookup.ctx, ast.Load)

    def _argument_default(self, node: ast.Attribute, following: FrozenSet[int], depth: int) -> _Strings:
        """``args.x`` where every binding of ``args`` is what ``parse_args()`` returns, nothing
        assigns ``x`` on any object nor sets attributes by name: the default of the one
        ``add_argument`` of the module whose destination is ``x``."""
        if not isinstance(node.value, ast.Name) or not self._parsed_arguments(node.value) or self._sets_attributes_unseen():
            return _UNKNOWN_ONLY
        if any(not isinstance(other.ctx, ast.Load) and other.attr == node.attr for other in self.model.nodes(ast.Attribute)):
            return _UNKNOWN_ONLY
        declarations = [call for call in self.model.nodes(ast.Call) if _destination(call) == node.attr]
        if len(declarations) != 1:
            return _UNKNOWN_ONLY
        default = next((keyword.value for keyword in declarations[0].keywords if keyword.arg == "default"), None)
        return self.strings(default, following, depth + 1) if default is not None else _UNKNOWN_ONLY

    def _parsed_arguments(self, name: ast.Name, within: Optional[Function] = None) -> bool:
        """Whether every binding of ``name`` is what ``parse_args()`` returns: the call itself, or
        a call of a function of the module that returns only that (``args = parse_args()`` after
        ``def parse_args(): ...; return parser.parse_args()``). ``within``: the function whose
        local ``name`` is, when following such a helper's return."""
        binding = self.model.scope_at(name).resolve(name.id)
        if binding.name in binding.scope.parameters or (within is not None and binding.scope is not within.scope):
            return False
        stores = [use for use in self.model.uses(binding) if not isinstance(use.ctx, ast.Load)]
        return bool(stores) and all(
            _parses_arguments(value) or (within is None and self._returns_parsed_arguments(value))
            for value in (self._assigned_to(use) for use in stores)
        )

    def _returns_parsed_arguments(self, value: Optional[ast.expr]) -> bool:
        """``helper()``, a function of the module, not decorated, whose every ``return`` gives what
        ``parse_args()`` returns, directly or through a local name bound only to it."""
        if not (isinstance(value, ast.Call) and isinstance(value.func, ast.Name)) or value.args or value.keywords:
            return False
        helper = self.model.called_definition(value.func)
        if helper is None or helper.node.decorator_list:
            return False
        returns = [
            node.value for node in ast.walk(helper.node)
            if isinstance(node, ast.Return) and self.model.innermost_function(node) is helper
        ]
        return bool(returns) and all(
            _parses_arguments(returned) or (isinstance(returned, ast.Name) and self._parsed_arguments(returned, helper))
            for returned in returns
        )

    @staticmethod
    def _concatenation(parts: List[_Strings]) -> _Strings:
        return _product(parts, "")

    @staticmethod
    def _joined(parts: List[_Strings]) -> _Strings:
        """``os.path.join`` and ``pathlib``'s ``/``: a part that is absolute drops the parts before
        it, and so may a part that starts with what the code does not spell."""
        return frozenset(_rooted(value) for value in _product(parts, JOINED))

    @staticmethod
    def _union(values: Iterable[_Strings]) -> _Strings:
        found: Set[str] = set()
        for value in values:
            found |= value
        return frozenset(found) if len(found) <= MAX_VALUES else _UNKNOWN_ONLY


def _product(parts: List[_Strings], separator: str) -> _Strings:
    size = 1
    for part in parts:
        size *= len(part)
    if size > MAX_VALUES or sum(max(map(len, part), default=0) + len(separator) for part in parts) > MAX_LENGTH:
        return _UNKNOWN_ONLY
    return frozenset(separator.join(combination) for combination in itertools.product(*parts))


def _rooted(joined: str) -> str:
    """A joined path from its last part that is absolute (or may be: an unknown start) on."""
    parts = joined.split(JOINED)
    start = max((index for index, part in enumerate(parts) if part.startswith(("/", UNKNOWN))), default=0)
    return "/".join(parts[start:])


def _called(parent: Optional[ast.AST], read: ast.Name) -> bool:
    return isinstance(parent, ast.Call) and parent.func is read


def _parses_arguments(value: Optional[ast.expr]) -> bool:
    return (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in PARSE_ARGUMENTS
        and not value.args and not value.keywords
    )


def _destination(call: ast.Call) -> Optional[str]:
    """The attribute an ``add_argument`` call fills: its ``dest=``, else its first long option
    (``--model-pool``: ``model_pool``), else its one positional name."""
    if not isinstance(call.func, ast.Attribute) or call.func.attr != ADD_ARGUMENT:
        return None
    for keyword in call.keywords:
        if keyword.arg == "dest":
            return keyword.value.value if isinstance(keyword.value, ast.Constant) and isinstance(keyword.value.value, str) else None
        if keyword.arg is None:
            return None
    options = [argument.value for argument in call.args if isinstance(argument, ast.Constant) and isinstance(argument.value, str)]
    if len(options) != len(call.args) or not options:
        return None
    long_options = [option for option in options if option.startswith("--")]
    if long_options:
        return long_options[0][2:].replace("-", "_")
    return options[0] if len(options) == 1 and not options[0].startswith("-") else None
