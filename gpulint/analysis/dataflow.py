"""Fixed-point data-flow problems over a ``ControlFlowGraph``: liveness and binding."""

from __future__ import annotations

from typing import Callable, Dict, FrozenSet, Iterable, List, Optional

from gpulint.analysis.cfg import ControlFlowGraph, Step

Names = FrozenSet[str]


def _solve(
    steps: List[Step],
    inputs: Callable[[Step], Iterable[Step]],
    meet: Callable[[List[Names]], Names],
    transfer: Callable[[Step, Names], Names],
    start: Dict[Step, Names],
    initial: Names,
) -> Dict[Step, Names]:
    """Iterate ``value_in(s) = meet(value_out(p) for p in inputs(s))`` to a fixed point.

    Returns the value flowing *into* each step (before its transfer)."""
    before: Dict[Step, Names] = {step: start.get(step, initial) for step in steps}
    after: Dict[Step, Names] = {step: transfer(step, before[step]) for step in steps}
    changed = True
    while changed:
        changed = False
        for step in steps:
            if step in start:
                continue
            sources = [after[source] for source in inputs(step)]
            value = meet(sources) if sources else frozenset()
            if value != before[step]:
                before[step] = value
                after[step] = transfer(step, value)
                changed = True
    return before


def _union(values: List[Names]) -> Names:
    return frozenset().union(*values)


def _intersection(values: List[Names]) -> Names:
    return frozenset.intersection(*values)


def live_after(graph: ControlFlowGraph, live_at_exit: Iterable[str] = ()) -> Dict[Step, Names]:
    """For each step, the names live just after it: read on some path onward before being rebound.

    Solved backward, so the value "flowing into" a step is the one after it."""
    steps = list(reversed(graph.steps)) + [graph.exit]
    return _solve(
        steps, lambda step: step.successors, _union, live_before, {graph.exit: frozenset(live_at_exit)}, frozenset()
    )


def live_before(step: Step, live_after_step: Names) -> Names:
    """The names live just before ``step``, given those live after it. ``del x`` uses ``x``: it
    fails if ``x`` is unbound."""
    return frozenset(step.reads) | frozenset(step.deletes) | (live_after_step - step.binds - step.deletes)


def definitely_bound(graph: ControlFlowGraph, added_deletes: Optional[Dict[Step, Names]] = None) -> Dict[Step, Names]:
    """For each step, the names bound on every path that reaches it (before the step runs).

    ``added_deletes`` answers "what if these steps also deleted these names": a ``del`` a fix
    would insert, which must not leave a name unbound where the code (or the ``del`` itself, on
    the next iteration of a loop) needs it."""
    everything = frozenset(name for step in graph.steps for name in step.binds)
    extra = added_deletes or {}

    def transfer(step: Step, bound: Names) -> Names:
        return (bound | step.binds) - step.deletes - extra.get(step, frozenset())

    return _solve(
        graph.steps + [graph.exit], lambda step: step.predecessors, _intersection, transfer,
        {graph.entry: frozenset()}, everything,
    )


def maybe_bound(graph: ControlFlowGraph) -> Dict[Step, Names]:
    """For each step, the names bound on some path that reaches it (before the step runs)."""
    return solve_forward_may(graph, lambda step, bound: (bound | step.binds) - step.deletes)


def solve_forward_may(graph: ControlFlowGraph, transfer: Callable[[Step, Names], Names]) -> Dict[Step, Names]:
    """A forward "may" problem (union at joins) from nothing at entry; values before each step."""
    return _solve(graph.steps + [graph.exit], lambda step: step.predecessors, _union, transfer,
                  {graph.entry: frozenset()}, frozenset())
