"""Data-flow analysis over one scope (module or function body) that liveness-aware rules share.

``cfg`` builds a statement-level control-flow graph with the names each step reads, binds and
deletes; ``dataflow`` solves liveness and definite binding over it; ``escapes`` finds names whose
uses cannot all be seen; ``tensors`` decides, conservatively, which values are tensor-like; and
``aliases`` groups the names that hold the same tensors. ``ScopeAnalysis`` ties them together and is
built once per scope and file, whichever rules ask for it.
"""
