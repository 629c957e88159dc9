"""Whether what a loop computes stays in it: no value it leaves behind may carry autograd history.

A loop's values stay in it when every name it binds to a value that may carry history is, wherever
its function (or the module) reads it outside the loop, bound again first on every path from the
loop (``output, h = net(inputs, h)`` before the training step reads ``output``; the training loop's
own ``for x, y in batches`` target); when whatever it adds to a container or stores in an attribute
from outside it carries no history (``losses.append(loss.item())``); and when it neither returns
nor yields such a value. Then running the loop with gradients off changes nothing that code after
it, or the next turn of a loop around it, can backpropagate. A value that may carry history goes
only to calls that keep nothing of it: not an in-place method (``acc.add_(out)``), ``setattr``, a
heap push, a class of the module (whose instance keeps it), nor a function of the module that may
store what it is given (``global``, ``nonlocal``, an attribute, an item or a container of a
parameter); a container the loop fills with one is local only when the loop binds it afresh
(``kept = []``) and nothing after the loop reads it. Values that carry no history are read
by their syntax: constants, Python numbers (``.item()``, ``float(...)``, ``len(...)``), shapes,
comparisons, indices and masks (``argmax``, ``eq``), detached tensors, arithmetic of those, torch's
functions of those (``torch.sum(preds == labels)``), numpy's functions, batches drawn from a
``DataLoader`` over no ``TensorDataset``, what a function of the module returns when each of its
returns is such a value (read through its own names and conditional expressions), and names bound
only to those in the scope.
"""

from __future__ import annotations

import ast
from typing import Callable, Dict, Iterator, List, Optional, Set, Tuple, cast

from gpulint.semantic.loaders import batches_without_history
from gpulint.semantic.model import Function, SemanticModel
from gpulint.semantic.scopes import COMPREHENSIONS, Binding
from gpulint.semantic.survey import argument_values, own_nodes
from gpulint.semantic.torch_api import (
    CLOCKS,
    DEVICE_KEEPING_TENSOR_METHODS,
    HISTORY_FREE_METHODS,
    LAYOUT_METHODS,
    NUMPY_PACKAGE,
    SUMMARY_WRITER_METHODS,
    TENSOR_METADATA_ATTRIBUTES,
    VALUE_BUILTINS,
    is_torch_tensor_function,
)

CONTAINER_MUTATORS = frozenset({
    "append", "extend", "insert", "add", "update", "put", "put_nowait", "setdefault", "appendleft", "extendleft",
    "push", "send", "__setitem__", "register_buffer", "register_parameter",
})
"""Methods that store their arguments in the object they are called on (``list``, ``dict``, ``set``,
``deque``, a queue, a generator, a module's buffers)."""
STORING_FUNCTIONS = frozenset({
    "builtins.setattr", "heapq.heappush", "heapq.heappushpop", "heapq.heapreplace", "operator.setitem",
})
"""Functions that store a value they are given in another object."""
FRESH_CONTAINERS = (ast.List, ast.Set, ast.Dict, ast.ListComp, ast.SetComp, ast.DictComp)
MAX_DEPTH = 50
"""How many names deep a value is followed before it counts as one that may carry history."""
HISTORY_KEEPING_METHODS = LAYOUT_METHODS | DEVICE_KEEPING_TENSOR_METHODS
"""Methods whose result carries history only if their receiver does (``(pred == y).sum().float()``)."""
DETACHED_ATTRIBUTES = frozenset({"data"})
"""Attributes of a tensor that hold its values without its history (``total.cpu().data``)."""
VALUE_READS = HISTORY_FREE_METHODS | TENSOR_METADATA_ATTRIBUTES | DETACHED_ATTRIBUTES
"""Attributes and methods whose read of a tensor gives a Python value, metadata or its values
without history: nothing of its graph goes further."""
NAMED_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
DEFINITIONS = (*NAMED_DEFINITIONS, ast.Lambda)
UNTRACKED_EXPRESSIONS = (ast.Lambda, ast.Yield, ast.YieldFrom, ast.Await, ast.NamedExpr)
"""Expressions a value read after a loop is not followed through: it may run later, leave the
function or bind a name on the way."""
COMPREHENSION_NODES = (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
READING_BUILTINS = frozenset({"print", "float", "int", "round", "abs", "bool", "str", "repr", "format", "len", "min", "max"})
"""Builtins that only read what they are given and give back a Python value (or nothing)."""
EXCLUSIVE = (ast.If, ast.Match)
"""Statements whose parts run one at a time: a value bound in one part never reaches another."""


def stays_inside(model: SemanticModel, loop: ast.stmt) -> bool:
    """Whether no value ``loop`` computes that may carry autograd history is seen after it."""
    return _Confinement(model, [loop]).holds()


def stays_in_statements(model: SemanticModel, statements: List[ast.stmt]) -> bool:
    """Whether no value that ``statements``, consecutive statements of one block, compute and that
    may carry autograd history is seen after them — after the block, or, in a loop's body, in the
    statements before them that the next turn runs first — read as for a loop that runs them once."""
    return _Confinement(model, statements).holds()


class _Confinement:
    def __init__(self, model: SemanticModel, region: List[ast.stmt]) -> None:
        self.model = model
        self.region = region
        self.scope = model.scope_at(region[0])
        self.around = {*map(id, region), *map(id, model.ancestors(region[0]))}
        """The region's statements and every node around them."""
        self.inside = list(own_nodes(region))
        self.inside_ids = {id(node) for node in self.inside}
        self._plain_names: Dict[Binding, bool] = {}
        self._read_scopes = [self.scope]
        """The region's scope, and the scopes of the functions whose returns are being read."""
        self._depth = 0
        self._positions: Dict[int, Dict[int, Tuple[List[ast.stmt], int]]] = {}

    def holds(self) -> bool:
        if self.scope.is_class or any(
            isinstance(node, (*NAMED_DEFINITIONS, ast.Match)) for statement in self.region for node in ast.walk(statement)
        ):
            return False
        bound = self._bound_inside()
        if bound is None:
            return False
        escaping = {binding for binding in bound if not self._plain_binding(binding) and not self._all_reads_rebound(binding)}
        local = {binding for binding in bound - escaping if self._fresh_inside(binding)}
        totals = set(filter(self._a_plain_started_total, escaping))
        return (
            all(map(self._replaced_inside, escaping - totals)) and self._reach_nothing_after(escaping, totals)
            and all(self._keeps_nothing(node, local) for node in self.inside)
        )

    # Values read after the loop.

    def _replaced_inside(self, binding: Binding) -> bool:
        """Whether the region binds the name only afresh (``logit = model(x)``, a loop target; not
        ``acc += out``, which may add in place to an object bound elsewhere): what it holds after
        the region is a value the region made, which no other name holds."""
        return all(
            not _augmented_target(self.model, use) for use in self.model.uses(binding)
            if id(use) in self.inside_ids and not isinstance(use.ctx, ast.Load)
        )

    def _reach_nothing_after(self, escaping: Set[Binding], totals: Set[Binding]) -> bool:
        """Whether the region's values read after it, and every name of the scope bound from them,
        are read only where they can reach no backward pass and nothing that outlives the function
        (:meth:`_harmless_read`): its totals (``acc`` of ``acc += metric(out, y)``, then ``acc = acc
        / n``: :meth:`_a_plain_started_total`), where a read the total is started again before, on
        every path from the region, reads another value; and the names it binds afresh
        (``logit[0].cpu().data`` after the loop), where a read the name is bound again before does."""
        reached = set(escaping)
        pending = list(escaping)
        while pending:
            binding = pending.pop()
            for use in self.model.uses(binding):
                if not isinstance(use.ctx, ast.Load) or id(use) in self.inside_ids:
                    continue
                if binding in escaping and self._rebound_before(use, _resets if binding in totals else None):
                    continue
                bound = self._harmless_read(use)
                if bound is None:
                    return False
                pending.extend(binding for binding in bound if binding not in reached)
                reached.update(bound)
        return True

    def _harmless_read(self, use: ast.Name) -> Optional[List[Binding]]:
        """Where a read of a value that may carry history reaches no backward pass: as an operand or
        an argument of builtins that only read (``print``, ``float``) in an expression statement
        (``print(acc)``), the test of an ``if`` or ``while``, or the value of an assignment to plain
        names of the scope — whose bindings are returned, to be followed in turn; through methods
        that keep its history (``acc.cpu()``, ``acc.sum()``), read as the value they give; read for
        a Python value, metadata or its values without history (``acc.item()``, ``acc.shape``,
        ``acc.cpu().data``) or formatted into a string (``f"{acc}"``,
        ``"%.4f" % acc``, ``"{}".format(acc)``), it is done. Never an argument of any other call (a
        helper of the module, an ``accelerator.backward``), the receiver of any other method
        (``.backward()``, ``.add_()``), returned, yielded, stored in an attribute or item, or read in
        a lambda or a comprehension (which may run later)."""
        if self.model.scope_at(use) is not self.scope:
            return None
        node: ast.AST = use
        while not isinstance(node, ast.stmt):
            parent = self.model.parent(node)
            if parent is None or isinstance(parent, (*UNTRACKED_EXPRESSIONS, *COMPREHENSION_NODES)):
                return None
            if isinstance(parent, ast.Attribute):
                if parent.attr in VALUE_READS:
                    return []
                call = _kept_by(self.model, node)
                if call is None or not all(map(self._plain, argument_values(call))):
                    return None
                node = call
                continue
            if isinstance(parent, ast.Subscript) and parent.value is node:
                node = parent
                continue
            if _formats(parent):
                return []
            if isinstance(parent, ast.Call) and node is not parent.func and isinstance(parent.func, ast.Attribute) and (
                parent.func.attr in SUMMARY_WRITER_METHODS
            ):
                return []
            if isinstance(parent, ast.Call) and (node is parent.func or not self.model.is_builtin(parent.func, READING_BUILTINS)):
                return None
            if isinstance(parent, ast.Call) and isinstance(parent.func, ast.Name) and parent.func.id in VALUE_BUILTINS:
                return []
            node = parent
        if isinstance(node, ast.AugAssign) and not (
            isinstance(node.target, ast.Name)
            and self._a_plain_started_total(self.model.scope_at(node.target).resolve(node.target.id))
        ):
            return None
        if isinstance(node, (ast.Expr, ast.If, ast.While)):
            return []
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            elements = [element for target in targets for element in _elements(target)]
            if not all(isinstance(element, ast.Name) for element in elements):
                return None
            bound = [self.model.scope_at(element).resolve(cast(ast.Name, element).id) for element in elements]
            return bound if all(binding.scope is self.scope for binding in bound) else None
        return None

    def _keeps_nothing(self, node: ast.AST, local: Set[Binding]) -> bool:
        """Whether ``node`` hands nothing that may carry history to a place that outlives the loop."""
        if isinstance(node, (ast.Yield, ast.YieldFrom)):
            return False
        if isinstance(node, ast.Return) and node.value is not None:
            return self._plain(node.value)
        if isinstance(node, ast.Raise) and node.exc is not None:
            exc = node.exc
            return isinstance(exc, ast.Name) or (isinstance(exc, ast.Call) and all(map(self._plain, argument_values(exc))))
        if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name) and not self._plain(node.value):
            total = self.model.scope_at(node.target).resolve(node.target.id)
            return self._local(node.target, local) or self._a_plain_started_total(total) or self._a_numpy_array(total)
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store):
            statement = self.model.parent(node)
            while statement is not None and isinstance(statement, (ast.Tuple, ast.List, ast.Starred)):
                statement = self.model.parent(statement)
            value = statement.value if isinstance(statement, (ast.Assign, ast.AugAssign, ast.AnnAssign)) else None
            return self._local(node, local) or (value is not None and self._plain(value))
        if isinstance(node, ast.Call) and not all(map(self._plain, argument_values(node))):
            return self._call_keeps_nothing(node, local)
        return True

    def _call_keeps_nothing(self, call: ast.Call, local: Set[Binding]) -> bool:
        """A call given a value that may carry history: not one that stores it."""
        func = call.func
        if isinstance(func, ast.Attribute) and _stores_into_receiver(func.attr):
            return self._local(func.value, local)
        if self.model.resolved_names(func) & STORING_FUNCTIONS or (
            isinstance(func, ast.Name) and func.id == "setattr" and func.id not in self.model.root.bound
        ):
            return False
        if isinstance(func, (ast.Name, ast.Attribute)) and self.model.class_built(call) is not None:
            return False
        callee = self.model.callee(call)
        return callee is None or not _may_store(self.model, callee)

    def _bound_inside(self) -> Optional[Set[Binding]]:
        """The bindings of the loop's scope that the loop binds; None if it binds a name of another
        scope (``global``, ``nonlocal``), which code elsewhere may read."""
        found: Set[Binding] = set()
        for node in self.inside:
            if isinstance(node, ast.Name) and isinstance(node.ctx, (ast.Store, ast.Del)):
                binding = self.model.scope_at(node).resolve(node.id)
                if isinstance(binding.scope.node, COMPREHENSIONS):
                    continue
                if binding.scope is not self.scope:
                    return None
                found.add(binding)
        return found

    def _fresh_inside(self, binding: Binding) -> bool:
        """Whether every binding of the name is in the loop, to a new container (``kept = []``)."""
        stores = [use for use in self.model.uses(binding) if isinstance(use.ctx, ast.Store)]
        if binding.name in binding.scope.parameters or not stores:
            return False
        for store in stores:
            statement = self.model.parent(store)
            if id(store) not in self.inside_ids or not (
                isinstance(statement, ast.Assign) and statement.targets == [store] and isinstance(statement.value, FRESH_CONTAINERS)
            ):
                return False
        return True

    def _a_plain_started_total(self, binding: Binding) -> bool:
        """Whether ``acc`` of ``acc += metric(out, y)`` is a total that only ever starts from a
        Python value (``acc = 0.``) and is otherwise bound only by ``+=`` and arithmetic (``acc =
        acc / n``), which makes a new object: the tensor it may become is made by the additions
        themselves, so adding in place changes no object bound anywhere else (where it goes after
        the loop is :meth:`_reach_nothing_after`'s)."""
        if binding.name in binding.scope.parameters:
            return False
        started = False
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load) or _augmented_target(self.model, use):
                continue
            statement = self.model.parent(use)
            if not (isinstance(statement, ast.Assign) and statement.targets == [use]):
                return False
            if isinstance(statement.value, (ast.BinOp, ast.UnaryOp)) and not _python_number(statement.value):
                continue
            if not _python_number(statement.value):
                return False
            started = True
        return started

    def _local(self, target: ast.expr, local: Set[Binding]) -> bool:
        """Whether ``target`` (``kept`` in ``kept.append(x)``, ``kept[k]``, ``kept.x``) is a container
        the loop makes and nothing after it sees."""
        while isinstance(target, (ast.Attribute, ast.Subscript)):
            target = target.value
        if not isinstance(target, ast.Name):
            return False
        return self.model.scope_at(target).resolve(target.id) in local

    # Reads after the loop.

    def _all_reads_rebound(self, binding: Binding) -> bool:
        for use in self.model.uses(binding):
            if id(use) in self.inside_ids:
                continue
            if isinstance(use.ctx, ast.Load) or _augmented_target(self.model, use):
                if not self._rebound_before(use):
                    return False
        return True

    def _rebound_before(self, use: ast.Name, binds: Optional[Callable[[ast.AST, str], bool]] = None) -> bool:
        """Whether every path from the loop to ``use`` binds its name again first (or none leads
        there), by a statement ``binds`` holds for (by default, any plain binding). A read in a
        lambda or a generator expression may run later: never."""
        binds = binds if binds is not None else _binds_plainly
        name = use.id
        node: ast.AST = use
        while not isinstance(node, (ast.stmt, ast.excepthandler, ast.match_case)):
            parent = self.model.parent(node)
            if parent is None or isinstance(parent, (ast.Lambda, ast.GeneratorExp)):
                return False
            node = parent
        if isinstance(node, ast.While) and id(node) in self.around:
            return False
        while True:
            parent = self.model.parent(node)
            if parent is None:
                return True
            if isinstance(parent, DEFINITIONS) and parent is not self.scope.node:
                return False
            block, index = self._position(parent, node)
            for earlier in reversed(block[:index]):
                if id(earlier) in self.around:
                    return False
                if binds(earlier, name):
                    return True
            if parent is self.scope.node:
                return True
            if isinstance(parent, (ast.For, ast.AsyncFor)) and _in_body(parent, node) and name in _names(parent.target):
                return True
            if isinstance(parent, (ast.With, ast.AsyncWith)) and any(
                item.optional_vars is not None and name in _names(item.optional_vars) for item in parent.items
            ):
                return True
            if id(parent) in self.around and not isinstance(parent, EXCLUSIVE):
                return False
            node = parent

    def _position(self, parent: ast.AST, node: ast.AST) -> Tuple[List[ast.stmt], int]:
        """The block of ``parent`` that holds ``node`` and its index there (an empty block if
        ``node`` is a header part, a handler or a case); each parent's blocks indexed once."""
        positions = self._positions.get(id(parent))
        if positions is None:
            positions = self._positions[id(parent)] = {
                id(statement): (block, index)
                for field in ("body", "orelse", "finalbody")
                for block in [getattr(parent, field, None)] if isinstance(block, list)
                for index, statement in enumerate(block)
            }
        return positions.get(id(node), ([], 0))

    # Values without history.

    def _plain_binding(self, binding: Binding) -> bool:
        """Whether every binding of the name in its scope is to a value without history that is no
        container (a greatest fixed point: ``total = 0`` and ``total += loss.item()`` leave
        ``total`` plain); never a parameter, whose value comes from the caller."""
        known = self._plain_names.get(binding)
        if known is not None:
            return known
        if binding.name in binding.scope.parameters or self._depth > MAX_DEPTH:
            return False
        self._plain_names[binding] = True
        self._depth += 1
        values = list(self._bound_values(binding))
        plain = self._a_numpy_array(binding) or bool(values) and all(
            value is not None and not isinstance(value, FRESH_CONTAINERS) and self._plain(value) for value in values
        )
        self._depth -= 1
        self._plain_names[binding] = plain
        return plain

    def _a_numpy_array(self, binding: Binding) -> bool:
        """Whether the name is bound only to arrays numpy makes (``agg = np.zeros(3)``) and by ``+=``
        and its kin, which add to the array in place: it stays an array, which holds no history
        (numpy refuses a tensor that requires grad)."""
        made = False
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load) or _augmented_target(self.model, use):
                continue
            statement = self.model.parent(use)
            if not (
                isinstance(statement, ast.Assign) and statement.targets == [use] and isinstance(statement.value, ast.Call)
                and any(name.split(".")[0] == NUMPY_PACKAGE for name in self.model.resolved_names(statement.value.func))
            ):
                return False
            made = True
        return made

    def _bound_values(self, binding: Binding) -> Iterator[Optional[ast.expr]]:
        """The value each binding of the name gives it; None where it is not an assignment's."""
        for use in self.model.uses(binding):
            if isinstance(use.ctx, ast.Load):
                continue
            parent = self.model.parent(use)
            if isinstance(parent, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and parent.value is not None and (
                use in (parent.targets if isinstance(parent, ast.Assign) else [parent.target])
            ):
                yield parent.value
            elif (isinstance(parent, ast.For) and parent.target is use and self._loops_over(parent.iter, "range")) or (
                isinstance(parent, ast.Tuple) and parent.elts and parent.elts[0] is use and self._enumerated(parent)
            ) or self._drawn_from_a_data_loader(use):
                yield COUNT
            elif isinstance(use.ctx, ast.Del):
                continue
            else:
                yield None

    def _drawn_from_a_data_loader(self, use: ast.Name) -> bool:
        """Whether ``use`` is (a part of) the target of a ``for`` loop over a ``DataLoader``
        (``for i, (x, y) in enumerate(tqdm(loader))``): a batch the loader collates from its
        dataset's examples, which carry no history (:func:`~gpulint.semantic.loaders.batches_without_history`)."""
        node: ast.AST = use
        parent = self.model.parent(node)
        while isinstance(parent, (ast.Tuple, ast.List, ast.Starred)):
            node, parent = parent, self.model.parent(parent)
        return isinstance(parent, ast.For) and parent.target is node and batches_without_history(self.model, parent.iter)

    def _enumerated(self, target: ast.Tuple) -> bool:
        """Whether ``target`` is the target of ``for i, x in enumerate(...)``, whose first element is
        a count."""
        loop = self.model.parent(target)
        return isinstance(loop, (ast.For, ast.comprehension)) and loop.target is target and self._loops_over(loop.iter, "enumerate")

    def _loops_over(self, iterable: ast.expr, builtin: str) -> bool:
        """Whether ``iterable`` is a call of the builtin ``range`` or ``enumerate`` (not a name the
        module binds), whose loop target, or its first element, is a Python number."""
        return isinstance(iterable, ast.Call) and self.model.is_builtin(iterable.func, {builtin})

    def _plain(self, value: ast.expr) -> bool:
        """Whether ``value`` carries no autograd history, by its syntax."""
        if isinstance(value, ast.Constant):
            return True
        if isinstance(value, (ast.Compare, ast.JoinedStr)):
            return True
        if isinstance(value, ast.UnaryOp):
            return self._plain(value.operand)
        if isinstance(value, ast.BinOp):
            return self._plain(value.left) and self._plain(value.right)
        if isinstance(value, ast.BoolOp):
            return all(self._plain(operand) for operand in value.values)
        if isinstance(value, (ast.Tuple, ast.List)):
            return all(self._plain(element) for element in value.elts)
        if isinstance(value, ast.Name):
            binding = self.model.scope_at(value).resolve(value.id)
            return any(binding.scope is scope for scope in self._read_scopes) and self._plain_binding(binding)
        if isinstance(value, ast.IfExp):
            return self._plain(value.body) and self._plain(value.orelse)
        if isinstance(value, ast.Attribute):
            return value.attr in TENSOR_METADATA_ATTRIBUTES or value.attr == "data"
        if isinstance(value, ast.Subscript):
            return self._plain(value.value)
        if isinstance(value, ast.Call):
            func = value.func
            if isinstance(func, ast.Name) and func.id in VALUE_BUILTINS and func.id not in self.model.root.bound:
                return True
            names = self.model.resolved_names(func)
            if names & CLOCKS or any(name.split(".")[0] == NUMPY_PACKAGE for name in names):
                return True
            if isinstance(func, ast.Attribute):
                if func.attr in HISTORY_FREE_METHODS:
                    return True
                if func.attr in HISTORY_KEEPING_METHODS and self._plain(func.value):
                    return True
            if self._torch_of_plain(value):
                return True
            return self._returns_plain(self.model.callee(value))
        return False

    def _torch_of_plain(self, call: ast.Call) -> bool:
        """Whether ``call`` runs a function of torch that computes a tensor
        (:func:`~gpulint.semantic.torch_api.is_torch_tensor_function`) on values without history
        only (``torch.sum(preds == labels)``): its result has none either. (One made with
        ``requires_grad=True`` is a leaf, which records none, and is made so with gradients off too.)"""
        return any(map(is_torch_tensor_function, self.model.resolved_names(call.func))) and all(
            map(self._plain, argument_values(call))
        )

    def _returns_plain(self, function: Optional[Function]) -> bool:
        """Whether a function of the module returns, wherever it returns, a value without history
        (``return (out.argmax(-1) == y).float().mean().item()``)."""
        if function is None or self._depth > MAX_DEPTH:
            return False
        returns = [node for node in own_nodes(function.node.body) if isinstance(node, ast.Return)]
        self._depth += 1
        self._read_scopes.append(function.scope)
        plain = bool(returns) and all(node.value is not None and self._plain(node.value) for node in returns)
        self._read_scopes.pop()
        self._depth -= 1
        return plain


def _resets(statement: ast.AST, name: str) -> bool:
    """``name = 0.``: a total started again, which holds nothing of what it held."""
    return (
        isinstance(statement, ast.Assign) and any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)
        and _python_number(statement.value)
    )


def _formats(node: ast.AST) -> bool:
    """An f-string, ``"..." % values`` or ``"...".format(...)``: whatever goes in comes out a string."""
    if isinstance(node, (ast.JoinedStr, ast.FormattedValue)):
        return True
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        return isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"
        and isinstance(node.func.value, ast.Constant) and isinstance(node.func.value.value, str)
    )


def _python_number(value: ast.expr) -> bool:
    """A number the code spells (``0``, ``0.``, ``-1.0``)."""
    if isinstance(value, ast.UnaryOp) and isinstance(value.op, (ast.USub, ast.UAdd)):
        value = value.operand
    return isinstance(value, ast.Constant) and type(value.value) in (int, float)


COUNT = ast.Constant(value=0)
"""Stands for the Python number a counting loop binds its target to."""


def _augmented_target(model: SemanticModel, name: ast.Name) -> bool:
    """``total`` in ``total += x``, which reads it."""
    parent = model.parent(name)
    return isinstance(parent, ast.AugAssign) and parent.target is name


def _elements(target: ast.expr) -> Iterator[ast.expr]:
    if isinstance(target, (ast.Tuple, ast.List)):
        for element in target.elts:
            yield from _elements(element)
    elif isinstance(target, ast.Starred):
        yield from _elements(target.value)
    else:
        yield target


def _names(target: ast.expr) -> Set[str]:
    return {element.id for element in _elements(target) if isinstance(element, ast.Name)}


def _binds_plainly(statement: ast.AST, name: str) -> bool:
    """Whether ``statement`` always binds ``name`` (an assignment, an import, a definition, a
    ``del``, or an ``if`` whose every branch binds it in a statement of its own: ``if dice: loss =
    ce + d`` / ``else: loss = ce``; a branch left early reaches nothing after the ``if``)."""
    if isinstance(statement, ast.If):
        return bool(statement.orelse) and all(
            any(_binds_plainly(inner, name) for inner in branch) for branch in (statement.body, statement.orelse)
        )
    if isinstance(statement, ast.Assign):
        return any(name in _names(target) for target in statement.targets)
    if isinstance(statement, ast.AnnAssign):
        return statement.value is not None and name in _names(statement.target)
    if isinstance(statement, (ast.Import, ast.ImportFrom)):
        return any((alias.asname or alias.name.partition(".")[0]) == name for alias in statement.names)
    if isinstance(statement, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return statement.name == name
    if isinstance(statement, ast.Delete):
        return any(name in _names(target) for target in statement.targets)
    return False


def _in_body(loop: ast.AST, node: ast.AST) -> bool:
    return any(statement is node for statement in getattr(loop, "body", ()))


def _may_store(model: SemanticModel, function: Function) -> bool:
    """Whether a function of the module may keep what it is given: it declares a name ``global`` or
    ``nonlocal``, or stores into an attribute, an item or a container of a parameter or of a name
    it does not bind itself (``self.cache = x``, ``buffer.append(x)``, ``LAST[key] = x`` for a
    module's dict; not ``torch.add(a, b)``, a function of torch); not into an attribute of ``self``
    read only for its values without history (:func:`_read_only_detached`). A generator keeps its
    arguments only while it lives."""
    parameters = set(function.scope.parameters)
    own = function.scope.locals() - parameters

    def of_a_parameter(node: ast.expr) -> bool:
        while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        return isinstance(node, ast.Name) and node.id not in own

    for node in own_nodes(function.node.body):
        if isinstance(node, (ast.Global, ast.Nonlocal)):
            return True
        if isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store) and isinstance(node.value, ast.Name) and (
            node.value.id == "self" and _read_only_detached(model, node.attr)
        ):
            continue
        if isinstance(node, (ast.Attribute, ast.Subscript)) and isinstance(node.ctx, ast.Store) and of_a_parameter(node):
            return True
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and _stores_into_receiver(node.func.attr) and (
            of_a_parameter(node.func.value) and not any(map(is_torch_tensor_function, model.resolved_names(node.func)))
        ):
            return True
    return False


def _read_only_detached(model: SemanticModel, attribute: str) -> bool:
    """Whether every read in the module of an attribute of that name (on any object but an imported
    module: not ``F.mse_loss`` for ``self.mse_loss``) reads its values without history
    (``self.bdy_loss.cpu().data``, ``.item()``, ``.shape``), through methods that keep it
    (``.cpu()``, ``.sum()``) on the way: what a method stores there reaches no backward pass."""
    for node in model.nodes(ast.Attribute):
        if node.attr != attribute or not isinstance(node.ctx, ast.Load) or model.resolved_names(node):
            continue
        read: Optional[ast.AST] = node
        while read is not None:
            parent = model.parent(read)
            if isinstance(parent, ast.Attribute) and parent.attr in VALUE_READS:
                break
            read = _kept_by(model, read)
        if read is None:
            return False
    return True


def _kept_by(model: SemanticModel, node: ast.AST) -> Optional[ast.Call]:
    """The call of a method that keeps the history of ``node``, its receiver (``node.cpu()``,
    ``node.sum()``: :data:`HISTORY_KEEPING_METHODS`); None where ``node`` is read otherwise."""
    parent = model.parent(node)
    call = model.parent(parent) if isinstance(parent, ast.Attribute) else None
    if isinstance(parent, ast.Attribute) and parent.attr in HISTORY_KEEPING_METHODS and isinstance(call, ast.Call) and call.func is parent:
        return call
    return None


def _stores_into_receiver(method: str) -> bool:
    """A container's storing method, or an in-place tensor method (``add_``, not ``__len__``)."""
    return method in CONTAINER_MUTATORS or (method.endswith("_") and not method.endswith("__"))

