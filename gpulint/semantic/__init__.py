"""The semantic model of one file, built on Python's own ``ast`` before any rule runs: imports and
qualified names, scopes and bindings, classes, the call graph, per-function summaries, and the torch
API knowledge (``torch_api``) they are read against. It does not import the rule API."""
