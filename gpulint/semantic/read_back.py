"""Loads that read back what the program itself wrote, decided on the model.

Where a load reads a file that the same code writes, the tensors land where the program had them,
and ``map_location`` would move them somewhere else:

- **a cache**: one branch of an ``if`` loads a path into a name, and the other binds that name to a
  value it saves to the same path, directly (``torch.save(spec, spec_path)``) or through a
  function of the module that saves what it returns to the path it is passed; or it unpacks the
  load into names (``src, tgt = torch.load(path)``) that the other branch binds and saves, as the
  same tuple, to the same path (``torch.save((src, tgt), path)``); or it loads into an attribute
  (``self.ids = torch.load(ids_file)``) that the other branch binds, the same way, to a value
  saved to the same path; or it loads a dict and reads each part into a name or attribute
  (``self.mean = stats.get("mean")``) that the other branch binds and then saves under the same
  key, with the other parts, to the same path. Either branch leaves the same value, on the same
  device.
- **a live object restored**: the code saves a module or optimizer whole (what the model treats as
  a module, not a state dict, or a TorchScript module it makes and saves with ``torch.jit.save`` or
  its own ``save``) and loads the same path back: the object returns to the device the program put
  it on. So does a resume of whole modules: ``model = torch.load(path)`` (or
  ``encoder, decoder = torch.load(path)``) where the module saves those same bindings, modules all,
  whole to the same path (``torch.save(model, path)``, ``torch.save([encoder, decoder], path)``),
  before the load or after it; for two bindings or more (``model, criterion, optimizer =
  torch.load(f)`` in ``model_load(fn)`` where ``model_save(fn)`` writes ``[model, criterion,
  optimizer]``), from a path each helper is handed as a parameter, where the module saves nothing
  else to the load's path: the program's own live objects come back into the bindings that held
  them, whatever file the caller names. So does an object's own tensor: a method saves ``self.weight`` (or its
  ``.data``) to ``self.weight_file``, and ``self.weight = torch.load(self.weight_file)`` restores
  it (the path an attribute the class assigns once).

- **a live object placed by branch**: one branch of an ``if`` loads whole modules into names
  without ``map_location``, and the other loads the same path into the same names with one to the
  CPU (``if
  not args.cuda: model = torch.load(f, map_location=...)`` / ``else: model = torch.load(f)``): the
  code decides where the modules go in each case, and on the accelerator it restores them onto the
  device they were saved from, on purpose.

A path is the same when it is spelled the same and its names are the same bindings; a file object
opened by ``with open(path, ...) as f``, or in place (``torch.load(open(path, "rb"))``), stands for its path, and so do ``str(path)`` and ``os.fspath(path)``. A path is the same only when every
name in it is bound once (a parameter, or one assignment), or is given its value at both places by
the same assignment of the block that holds both (:meth:`ReadBack.same_path`), and a live object
is restored only by a load that runs after the save, in the same or an enclosing block (whole
modules resumed aside).
"""

from __future__ import annotations

import ast
from functools import cached_property
from typing import Dict, Iterator, List, Optional, Tuple

from gpulint.semantic.model import Place, SemanticModel
from gpulint.semantic.scopes import Binding
from gpulint.semantic.survey import STATEMENT_BLOCKS, ast_dotted_name, own_nodes
from gpulint.semantic.torch_api import LOADERS, MODULE_RETURNING_METHODS, SCRIPT_MAKERS, SCRIPT_SAVE, TORCH_SAVE

OPENERS = frozenset({"open", "builtins.open", "io.open"})
PATH_SPELLINGS = frozenset({"str", "builtins.str", "os.fspath"})
"""Calls that hand back the path they are given, spelt as a string: ``str(path)`` stands for ``path``."""
MAP_LOCATION = "map_location"


class ReadBack:
    """Which loads of one module read back a file the module itself writes."""

    def __init__(self, model: SemanticModel) -> None:
        self.model = model
        self._held: Dict[Tuple[Binding, int], Dict[int, List[ast.Name]]] = {}

    @cached_property
    def saves(self) -> List[Tuple[ast.Call, ast.expr, Optional[ast.expr]]]:
        """``(call, value, path)`` of every ``torch.save(value, path)`` of the module."""
        found = []
        for call in self.model.calls():
            if not self._saves(call):
                continue
            value, path = _argument(call, 0, "obj"), _argument(call, 1, "f")
            if value is not None and path is not None:
                found.append((call, value, self.path_of(path)))
        return found

    @cached_property
    def script_saves(self) -> List[Tuple[ast.Call, ast.expr, Optional[ast.expr]]]:
        """``(call, module, path)`` of every save of a TorchScript module the code makes
        (:meth:`_script_save`): a live object only, for :meth:`_restores_live_object`."""
        found = []
        for call in self.model.calls():
            value, path = self._script_save(call)
            if value is not None and path is not None:
                found.append((call, value, self.path_of(path)))
        return found

    def _script_save(self, call: ast.Call) -> Tuple[Optional[ast.expr], Optional[ast.expr]]:
        """``(module, path)`` of ``torch.jit.save(module, path)`` or ``module.save(path)`` where
        ``module`` is a TorchScript module (:meth:`_scripted`); ``(None, None)`` for any other call."""
        if (call.func.attr if isinstance(call.func, ast.Attribute) else getattr(call.func, "id", None)) != "save":
            return None, None
        if self.model.resolved_names(call.func) == {SCRIPT_SAVE}:
            value, path = _argument(call, 0, "m"), _argument(call, 1, "f")
            return (value, path) if value is not None and self._scripted(value) else (None, None)
        if isinstance(call.func, ast.Attribute) and call.func.attr == "save" and self._scripted(call.func.value):
            return call.func.value, _argument(call, 0, "f")
        return None, None

    def _scripted(self, node: ast.expr) -> bool:
        """Whether ``node`` is a TorchScript module the code makes (``torch.jit.trace(...)``,
        ``torch.jit.script(...)``, also followed by ``.to(device)`` or ``.eval()``): made in place,
        or a name every binding of which makes one."""
        if isinstance(node, ast.Call):
            return self._makes_a_script(node)
        if not isinstance(node, ast.Name):
            return False
        binding = self.model.scope_at(node).resolve(node.id)
        stores = [use for use in self.model.uses(binding) if not isinstance(use.ctx, ast.Load)]
        if not stores or binding.name in binding.scope.parameters:
            return False
        for store in stores:
            statement = self.model.parent(store)
            if not (isinstance(statement, ast.Assign) and statement.targets == [store] and self._makes_a_script(statement.value)):
                return False
        return True

    def _makes_a_script(self, value: ast.expr) -> bool:
        while isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in MODULE_RETURNING_METHODS:
            value = value.func.value
        names = self.model.resolved_names(value.func) if isinstance(value, ast.Call) else set()
        return bool(names) and names <= SCRIPT_MAKERS

    def reads_back(self, call: ast.Call, loaded: ast.expr) -> bool:
        """Whether ``call``, loading ``loaded``, reads a cache or a live object the module writes."""
        path = self.path_of(loaded)
        return path is not None and (
            self._restores_live_object(call, path) or self._restores_attribute(call, path) or self._reads_cache(call, path)
            or self._reads_keyed_cache(call, path) or self._placed_by_branch(call, path)
        )

    def reads_own_file(self, call: ast.Call) -> bool:
        """Whether ``call`` loads a path the module itself saves to (the same path: :meth:`same_path`),
        whatever it saves there: the program put those tensors where it had them."""
        loaded = loaded_path(call)
        path = self.path_of(loaded) if loaded is not None else None
        return path is not None and any(self.same_path(saved, path) for _, _, saved in self.saves)

    def path_of(self, node: ast.expr) -> Optional[ast.expr]:
        """The path a file object stands for (``f`` of ``with open(path, "rb") as f``, in the same
        function), ``node`` itself for anything else (a name is told apart from another by
        :meth:`same_path`), and None for a name a ``with`` binds to what gpulint cannot tell apart
        from another file (another opener, a parameter...). A file opened in place
        (``torch.load(open(path, "rb"))``) stands for its path too, and so does the path spelt as a
        string (``str(path)``, ``os.fspath(path)``)."""
        if isinstance(node, ast.Call) and self._opens(node):
            return _argument(node, 0, "file")
        if isinstance(node, ast.Call) and len(node.args) == 1 and not node.keywords and (
            self.model.resolved_names(node.func) & PATH_SPELLINGS or self.model.is_builtin(node.func, {"str"})
        ):
            return self.path_of(node.args[0])
        if not isinstance(node, ast.Name):
            return node
        binding = self.model.scope_at(node).resolve(node.id)
        ancestor = self.model.parent(node)
        while ancestor is not None and not isinstance(ancestor, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
            if isinstance(ancestor, (ast.With, ast.AsyncWith)):
                for item in ancestor.items:
                    target, opened = item.optional_vars, item.context_expr
                    if not (isinstance(target, ast.Name) and target.id == node.id):
                        continue
                    if self.model.scope_at(target).resolve(target.id) != binding:
                        return None
                    if isinstance(opened, ast.Call) and self._opens(opened):
                        return _argument(opened, 0, "file")
                    return None
            ancestor = self.model.parent(ancestor)
        return node

    def same_path(self, first: Optional[ast.expr], second: Optional[ast.expr]) -> bool:
        """Spelled the same, every name of the same binding and either bound once (a parameter, or
        one assignment: never a loop, ``with`` or comprehension target) or, where it is assigned
        more than once, given its value at both places by the same assignment (:meth:`_same_value`)."""
        if first is None or second is None or ast.dump(first) != ast.dump(second):
            return False
        return all(
            self.model.scope_at(a).resolve(a.id) == self.model.scope_at(b).resolve(b.id)
            and (self._bound_once(a) or self._same_value(a, b))
            for a, b in zip(_names_in(first), _names_in(second))
        )

    def _same_value(self, first: ast.Name, second: ast.Name) -> bool:
        """Whether a plain assignment ``name = value`` in the block that holds both uses, before
        both, is the last statement of the block to bind the name before either runs, and nothing
        else binds it in between — no statement of the block, and no function (``global``): the
        tutorial that sets ``FILE = "model.pth"``, saves and loads it, then sets
        ``FILE = "checkpoint.pth"`` for the next example."""
        holder = self._common_block(first, second)
        if holder is None:
            return False
        block, first_index, second_index = holder
        binding = self.model.scope_at(first).resolve(first.id)
        stores = [use for use in self.model.uses(binding) if not isinstance(use.ctx, ast.Load)]
        scope = self.model.innermost_function(first)
        if self.model.innermost_function(second) is not scope or any(
            self.model.innermost_function(store) is not scope for store in stores
        ):
            return False
        held = self._stores_by_statement(binding, block, stores)
        start, end = min(first_index, second_index), max(first_index, second_index)
        if any(start <= index <= end for index in held):
            return False
        before = [index for index in held if index < start]
        if not before:
            return False
        statement = block[max(before)]
        return (
            isinstance(statement, ast.Assign) and len(statement.targets) == 1
            and held[max(before)] == statement.targets
        )

    def _stores_by_statement(self, binding: Binding, block: List[ast.stmt], stores: List[ast.Name]) -> Dict[int, List[ast.Name]]:
        """The stores of ``binding``, by the index of the statement of ``block`` that holds each."""
        key = (binding, id(block))
        if key not in self._held:
            indexes = {id(statement): index for index, statement in enumerate(block)}
            held: Dict[int, List[ast.Name]] = {}
            for store in stores:
                index = next((indexes[id(node)] for node in (store, *self.model.ancestors(store)) if id(node) in indexes), None)
                if index is not None:
                    held.setdefault(index, []).append(store)
            self._held[key] = held
        return self._held[key]

    def _common_block(self, first: ast.AST, second: ast.AST) -> Optional[Tuple[List[ast.stmt], int, int]]:
        """The innermost block (a statement list) that holds both nodes, with the indexes of the
        statements of it that hold each."""
        chain = {id(parent): child for child, parent in self._ancestors(first)}
        for child, parent in self._ancestors(second):
            if id(parent) not in chain:
                continue
            other = chain[id(parent)]
            for field_name in STATEMENT_BLOCKS:
                block = getattr(parent, field_name, None)
                if isinstance(block, list) and any(item is other for item in block) and any(item is child for item in block):
                    return (
                        block, next(i for i, item in enumerate(block) if item is other),
                        next(i for i, item in enumerate(block) if item is child),
                    )
            return None
        return None

    def _bound_once(self, name: ast.Name) -> bool:
        binding = self.model.scope_at(name).resolve(name.id)
        stores = [use for use in self.model.uses(binding) if not isinstance(use.ctx, ast.Load)]
        if binding.name in binding.scope.parameters:
            return not stores
        if len(stores) != 1:
            return not stores and bool(self.model.resolved_names(name))
        statement = self.model.parent(stores[0])
        return isinstance(statement, (ast.Assign, ast.AnnAssign)) and (
            statement.targets == [stores[0]] if isinstance(statement, ast.Assign) else statement.target is stores[0]
        )

    def _saves(self, call: ast.Call) -> bool:
        """Whether ``call`` is ``torch.save`` (the import table's superset first: no binding to resolve)."""
        return TORCH_SAVE in self.model.qualified_names(call.func) and self.model.resolved_names(call.func) == {TORCH_SAVE}

    def _opens(self, call: ast.Call) -> bool:
        """Whether ``call`` opens a file: ``open(...)`` (the builtin also under a star import, as
        :meth:`~gpulint.semantic.model.SemanticModel.is_builtin` reads it) or ``io.open(...)``."""
        return bool(self._names(call.func) & OPENERS) or self.model.is_builtin(call.func, {"open"})

    def _names(self, func: ast.expr) -> frozenset:
        names = self.model.resolved_names(func)
        return names or frozenset({ast_dotted_name(func) or ""})

    def _restores_live_object(self, call: ast.Call, path: Optional[ast.expr]) -> bool:
        return any(
            (ast_dotted_name(value) in self.model.modules or self._scripted(value))
            and self.same_path(saved, path) and self.runs_before(save, call)
            for save, value, saved in (*self.saves, *self.script_saves)
        ) or self._resumes_modules(call, path)

    def _resumes_modules(self, call: ast.Call, path: Optional[ast.expr]) -> bool:
        """``model = torch.load(path)`` or ``encoder, decoder = torch.load(path)`` where a save of the
        module writes those bindings, every one a module, whole to the same path."""
        bound = self._bound_names(call)
        if bound is None or bound[2] is not None:
            return False
        statement = bound[0]
        targets = statement.targets[0]
        restored = [targets] if isinstance(targets, ast.Name) else [e for e in getattr(targets, "elts", []) if isinstance(e, ast.Name)]
        if not all(target.id in self.model.modules for target in restored):
            return False
        bindings = [self.model.scope_at(target).resolve(target.id) for target in restored]
        any_path = len(restored) > 1 and self._a_parameter(path) and not any(self.same_path(saved, path) for _, _, saved in self.saves)
        for _, value, saved in self.saves:
            if not (_spells(value, bound[1]) and ((any_path and self._a_parameter(saved)) or self.same_path(saved, path))):
                continue
            written = [value] if isinstance(value, ast.Name) else [e for e in getattr(value, "elts", []) if isinstance(e, ast.Name)]
            if [self.model.scope_at(name).resolve(name.id) for name in written] == bindings:
                return True
        return False

    def _a_parameter(self, path: Optional[ast.expr]) -> bool:
        """Whether ``path`` is a parameter of the function it is read in, never rebound there: a
        helper's ``fn``."""
        if not isinstance(path, ast.Name):
            return False
        binding = self.model.scope_at(path).resolve(path.id)
        return binding.name in binding.scope.parameters and all(isinstance(use.ctx, ast.Load) for use in self.model.uses(binding))

    def _placed_by_branch(self, call: ast.Call, path: ast.expr) -> bool:
        """``model = torch.load(f)`` in one branch of an ``if`` whose other branch binds the same
        names, modules all, to a load of the same path with a ``map_location`` to the CPU."""
        bound = self._bound_names(call)
        if bound is None or bound[2] is not None or not all(name in self.model.modules for name in bound[1]):
            return False
        other = self._other_branch(bound[0])
        for statement in other or []:
            value = statement.value if isinstance(statement, ast.Assign) and len(statement.targets) == 1 else None
            if not (isinstance(value, ast.Call) and any(
                keyword.arg == MAP_LOCATION and self.model.names_the_cpu(keyword.value) for keyword in value.keywords
            )):
                continue
            other_bound = self._bound_names(value)
            if other_bound is None or other_bound[1] != bound[1] or not self.model.resolved_names(value.func) & LOADERS:
                continue
            other_loaded = loaded_path(value)
            other_path = self.path_of(other_loaded) if other_loaded is not None else None
            if other_path is not None and ast.dump(other_path) == ast.dump(path) and all(
                self.model.scope_at(a).resolve(a.id) == self.model.scope_at(b).resolve(b.id)
                for a, b in zip(_names_in(other_path), _names_in(path))
            ):
                return True
        return False

    def _restores_attribute(self, call: ast.Call, path: ast.expr) -> bool:
        """``self.weight = torch.load(self.weight_file)`` where a method of the class saves
        ``self.weight`` (or its ``.data``) to ``self.weight_file``, an attribute the class assigns
        once: the object's own state, restored to where the object had it."""
        statement = self.model.parent(call)
        if isinstance(statement, ast.Assign) and len(statement.targets) == 1 and statement.value is call:
            target: ast.expr = statement.targets[0]
        elif isinstance(statement, ast.AnnAssign) and statement.value is call:
            target = statement.target
        else:
            return False
        restored, file = self.model.place(target), self.model.place(path)
        if restored is None or file is None or not _on_self(restored) or not _on_self(file) or not self._assigned_once(file):
            return False
        for _, value, saved in self.saves:
            state = value.value if isinstance(value, ast.Attribute) and value.attr == "data" else value
            if saved is not None and self.model.place(state) == restored and self.model.place(saved) == file:
                return True
        return False

    def _assigned_once(self, place: Place) -> bool:
        """Whether one plain assignment, and nothing else, binds the attribute ``place`` in the module."""
        stores = [
            node for node in self.model.nodes(ast.Attribute)
            if not isinstance(node.ctx, ast.Load) and self.model.place(node) == place
        ]
        if len(stores) != 1:
            return False
        statement = self.model.parent(stores[0])
        return isinstance(statement, (ast.Assign, ast.AnnAssign)) and (
            statement.targets == [stores[0]] if isinstance(statement, ast.Assign) else statement.target is stores[0]
        )

    def runs_before(self, first: ast.AST, second: ast.AST) -> bool:
        """Whether ``first`` lies in an earlier statement than ``second`` of a block that holds
        both (not in the other branch of an ``if`` or ``try``)."""
        holder = self._common_block(first, second)
        return holder is not None and holder[1] < holder[2]

    def _ancestors(self, node: ast.AST) -> Iterator[Tuple[ast.AST, ast.AST]]:
        """``(child, parent)`` pairs from ``node`` up to the module."""
        parent = self.model.parent(node)
        while parent is not None:
            yield node, parent
            node, parent = parent, self.model.parent(parent)

    def _reads_cache(self, call: ast.Call, path: Optional[ast.expr]) -> bool:
        bound = self._bound_names(call)
        if bound is None:
            return self._reads_attribute_cache(call, path)
        statement, names, index = bound
        branch = self._other_branch(statement)
        if branch is None:
            return False
        for node in own_nodes(branch):
            if isinstance(node, ast.Call) and self._saves(node):
                value, saved = _argument(node, 0, "obj"), _argument(node, 1, "f")
                if (
                    _spells(value, names) and saved is not None
                    and self.same_path(self.path_of(saved), path)
                    and all(self._bound_before(branch, name, node) for name in names)
                ):
                    return True
            if len(names) == 1 and isinstance(node, ast.Assign) and len(node.targets) == 1:
                name = names[0]
                value = _element(node.targets[0], node.value, name, index)
                if isinstance(value, ast.Call) and self._saves_and_returns(value, path):
                    return True
        return False

    def _reads_attribute_cache(self, call: ast.Call, path: Optional[ast.expr]) -> bool:
        """A cache held in an attribute: ``self.ids = torch.load(path)`` in one branch of an ``if``,
        and in the other ``self.ids`` bound to what a function of the module saves to the path it
        is passed and returns (``self.ids = self._preprocess(ids, path)``), or bound and then saved
        itself to the same path (``torch.save(self.ids, path)``)."""
        statement = self.model.parent(call)
        if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
            return False
        target = statement.targets[0]
        cached = self.model.place(target) if isinstance(target, ast.Attribute) else None
        branch = self._other_branch(statement)
        if cached is None or branch is None:
            return False
        stores = [
            node for node in own_nodes(branch)
            if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], ast.Attribute)
            and self.model.place(node.targets[0]) == cached
        ]
        if any(isinstance(store.value, ast.Call) and self._saves_and_returns(store.value, path) for store in stores):
            return True
        for node in own_nodes(branch):
            if isinstance(node, ast.Call) and self._saves(node):
                value, saved = _argument(node, 0, "obj"), _argument(node, 1, "f")
                if (
                    value is not None and self.model.place(value) == cached and saved is not None
                    and self.same_path(self.path_of(saved), path) and any(self.runs_before(store, node) for store in stores)
                ):
                    return True
        return False

    def _reads_keyed_cache(self, call: ast.Call, path: Optional[ast.expr]) -> bool:
        """A cache saved as a dict of its parts: ``stats = torch.load(path)`` in one branch of an
        ``if``, then ``self.mean = stats.get("mean")`` (or ``stats["mean"]``) for each part, and in
        the other branch ``self.mean`` bound and then saved under the same key, with every part the
        load branch reads, to the same path (``torch.save({"mean": self.mean, ...}, path)``, or
        ``dict(mean=self.mean, ...)``)."""
        statement = self.model.parent(call)
        if not (isinstance(statement, ast.Assign) and statement.value is call and len(statement.targets) == 1):
            return False
        holder = statement.targets[0]
        branch = self._other_branch(statement)
        own = self._own_branch(statement)
        if not isinstance(holder, (ast.Name, ast.Attribute)) or branch is None or own is None:
            return False
        reads = [node for node in own if self.runs_before(statement, node)]
        parts = {
            key: target for key, target in (self._part_read(node, holder) for node in reads)
            if key is not None and target is not None
        }
        if not parts or self._holder_read_otherwise(reads, holder):
            return False  # ``stats.get("dataset", None)``: a file the other branch did not write (a legacy cache)
        for node in own_nodes(branch):
            if isinstance(node, ast.Call) and self._saves(node):
                saved_parts, saved = _keyed_parts(self.model, _argument(node, 0, "obj")), _argument(node, 1, "f")
                if saved is None or saved_parts is None or not self.same_path(self.path_of(saved), path):
                    continue
                if all(
                    key in saved_parts and ast.unparse(saved_parts[key]) == ast.unparse(target)
                    and self._assigned_before(branch, target, node)
                    for key, target in parts.items()
                ):
                    return True
        return False

    def _own_branch(self, statement: ast.stmt) -> Optional[List[ast.stmt]]:
        """The branch of the ``if`` that holds ``statement`` directly."""
        parent = self.model.parent(statement)
        if not isinstance(parent, ast.If):
            return None
        return parent.body if any(child is statement for child in parent.body) else parent.orelse

    def _holder_read_otherwise(self, statements: List[ast.stmt], holder: ast.expr) -> bool:
        """Whether ``statements`` read ``holder`` other than as a part read into a target."""
        spelled = ast.unparse(holder)
        part_reads = sum(1 for statement in statements if self._part_read(statement, holder)[0] is not None)
        holder_reads = sum(
            1 for node in own_nodes(statements)
            if isinstance(node, (ast.Name, ast.Attribute)) and isinstance(node.ctx, ast.Load) and ast.unparse(node) == spelled
        )
        return holder_reads != part_reads

    @staticmethod
    def _part_read(node: ast.stmt, holder: ast.expr) -> Tuple[Optional[str], Optional[ast.expr]]:
        """``(key, target)`` for ``target = holder.get("key")`` or ``target = holder["key"]``."""
        if not (isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(node.targets[0], (ast.Name, ast.Attribute))):
            return None, None
        value = node.value
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr == "get" and len(value.args) == 1 and not value.keywords:
            source, key = value.func.value, value.args[0]
        elif isinstance(value, ast.Subscript):
            source, key = value.value, value.slice
        else:
            return None, None
        if ast.unparse(source) != ast.unparse(holder) or not (isinstance(key, ast.Constant) and isinstance(key.value, str)):
            return None, None
        return key.value, node.targets[0]

    def _assigned_before(self, branch: List[ast.stmt], target: ast.expr, save: ast.Call) -> bool:
        """Whether a statement of ``branch`` assigns ``target`` (spelled the same) before ``save`` runs."""
        return any(
            isinstance(node, ast.Assign) and any(ast.unparse(each) == ast.unparse(target) for each in _store_targets(node))
            and self.runs_before(node, save)
            for node in own_nodes(branch)
        )

    def _bound_before(self, branch: List[ast.stmt], name: str, save: ast.Call) -> bool:
        """Whether a statement of ``branch`` binds ``name`` before ``save`` runs."""
        return any(
            isinstance(node, ast.Name) and node.id == name and isinstance(node.ctx, ast.Store)
            and self.runs_before(node, save)
            for node in own_nodes(branch)
        )

    def _bound_names(self, call: ast.Call) -> Optional[Tuple[ast.Assign, Tuple[str, ...], Optional[int]]]:
        """``(statement, names, index)`` for ``name = load(...)`` and ``first, second = load(...)``
        (index None) and ``name, other = load(...), value`` (the index of ``name`` in the tuple)."""
        parent = self.model.parent(call)
        if isinstance(parent, ast.Assign) and len(parent.targets) == 1 and parent.value is call:
            target = parent.targets[0]
            if isinstance(target, ast.Name):
                return parent, (target.id,), None
            elements = target.elts if isinstance(target, (ast.Tuple, ast.List)) else []
            if elements and all(isinstance(element, ast.Name) for element in elements):
                return parent, tuple(element.id for element in elements if isinstance(element, ast.Name)), None
            return None
        statement = self.model.parent(parent) if isinstance(parent, ast.Tuple) else None
        if isinstance(statement, ast.Assign) and isinstance(parent, ast.Tuple) and len(statement.targets) == 1:
            target = statement.targets[0]
            index = next(i for i, element in enumerate(parent.elts) if element is call)
            element = target.elts[index] if isinstance(target, ast.Tuple) and len(target.elts) == len(parent.elts) else None
            if isinstance(element, ast.Name):
                return statement, (element.id,), index
        return None

    def _other_branch(self, statement: ast.stmt) -> Optional[List[ast.stmt]]:
        """The other branch of the ``if`` whose body or ``else`` holds ``statement`` directly."""
        parent = self.model.parent(statement)
        if not isinstance(parent, ast.If) or not parent.orelse:
            return None
        if any(child is statement for child in parent.body):
            return parent.orelse
        return parent.body

    def _saves_and_returns(self, call: ast.Call, path: Optional[ast.expr]) -> bool:
        """Whether the function of the module that ``call`` calls saves a name to the parameter
        that ``call`` passes ``path`` to, and returns that name."""
        function = self.model.callee(call)
        site = self.model.site_of.get(id(call))
        if function is None or site is None:
            return False
        passed = {function.positional[index] for index, argument in self.model.positional_arguments(site)
                  if index < len(function.positional) and self.same_path(self.path_of(argument), path)}
        passed.update(keyword.arg for keyword in call.keywords if keyword.arg and self.same_path(self.path_of(keyword.value), path))
        passed = {name for name in passed if not any(
            isinstance(node, ast.Name) and node.id == name and not isinstance(node.ctx, ast.Load) for node in own_nodes(function.node.body)
        )}
        saved = set()
        returned = set()
        for node in own_nodes(function.node.body):
            if isinstance(node, ast.Call) and self._saves(node):
                value, target = _argument(node, 0, "obj"), _argument(node, 1, "f")
                if isinstance(value, ast.Name) and isinstance(target, ast.Name) and target.id in passed:
                    saved.add(value.id)
            returned_value = node.value if isinstance(node, ast.Return) else None
            if isinstance(returned_value, ast.Name):
                returned.add(returned_value.id)
        return bool(saved & returned)


def loaded_path(call: ast.Call) -> Optional[ast.expr]:
    """What a ``torch.load(f, ...)`` call reads: its first argument, or ``f=``."""
    return _argument(call, 0, "f")


def saved_path(call: ast.Call) -> Optional[ast.expr]:
    """Where a ``torch.save(obj, f)`` call writes: its second argument, or ``f=``."""
    return _argument(call, 1, "f")


def _argument(call: ast.Call, index: int, keyword: str) -> Optional[ast.expr]:
    positional = [argument for argument in call.args if not isinstance(argument, ast.Starred)]
    if len(positional) == len(call.args) and index < len(positional):
        return positional[index]
    return next((k.value for k in call.keywords if k.arg == keyword), None)


def _element(target: ast.expr, value: ast.expr, name: str, index: Optional[int]) -> Optional[ast.expr]:
    """The value ``target = value`` binds to ``name`` (at ``index`` of a tuple), if it binds it."""
    if index is None:
        return value if isinstance(target, ast.Name) and target.id == name else None
    if not (isinstance(target, ast.Tuple) and isinstance(value, ast.Tuple) and len(target.elts) == len(value.elts) > index):
        return None
    element = target.elts[index]
    return value.elts[index] if isinstance(element, ast.Name) and element.id == name else None


def _spells(value: Optional[ast.expr], names: Tuple[str, ...]) -> bool:
    """Whether ``value`` is the name ``names`` holds one of, or the tuple or list of ``names``, in order."""
    if len(names) == 1:
        return isinstance(value, ast.Name) and value.id == names[0]
    return isinstance(value, (ast.Tuple, ast.List)) and len(value.elts) == len(names) and all(
        isinstance(element, ast.Name) and element.id == name for element, name in zip(value.elts, names)
    )


def _names_in(node: ast.AST) -> Iterator[ast.Name]:
    return (part for part in ast.walk(node) if isinstance(part, ast.Name))


def _on_self(place: Place) -> bool:
    """An attribute of ``self`` in a method (keyed by its class)."""
    return bool(place.path) and place.binding.name == "self" and place.binding.scope.is_class


def _keyed_parts(model: SemanticModel, value: Optional[ast.expr]) -> Optional[Dict[str, ast.expr]]:
    """The parts of a dict display with string keys (``{"mean": m}``), or of ``dict(mean=m)``."""
    if isinstance(value, ast.Dict):
        if not all(isinstance(key, ast.Constant) and isinstance(key.value, str) for key in value.keys):
            return None
        return {str(key.value): part for key, part in zip(value.keys, value.values) if isinstance(key, ast.Constant)}
    if (
        isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and model.is_builtin(value.func, {"dict"})
        and not value.args and all(keyword.arg is not None for keyword in value.keywords)
    ):
        return {str(keyword.arg): keyword.value for keyword in value.keywords}
    return None


def _store_targets(statement: ast.Assign) -> Iterator[ast.expr]:
    """The names and attributes an assignment stores into, through tuples."""
    stack: List[ast.expr] = list(statement.targets)
    while stack:
        target = stack.pop()
        if isinstance(target, (ast.Tuple, ast.List)):
            stack.extend(target.elts)
        else:
            yield target
