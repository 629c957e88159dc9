"""gpulint: find and fix the PyTorch habits that run GPUs out of memory.

The package is layered; each layer imports only the ones listed after it:

- ``frontend``: the ``gpulint`` command, the flake8 plugin, configuration, file discovery, notebooks.
- ``report``: text, JSON, SARIF and GitHub output.
- ``rules``: one module per rule: a LibCST visitor that reports and builds its fixes, or a rule
  decided on the semantic model whose fixes LibCST builds from the code they change (GPU001).
- ``engine``: linting one text, fixing, running over many files; the rule API (``engine.rule``).
- ``analysis``: per-scope data flow over LibCST trees (control flow, liveness, tensor-likeness),
  reading qualified names from the semantic model.
- ``edits``: formatting-preserving edits that fixes are built from.
- ``semantic``: the per-file model on Python's ``ast`` (bindings, calls, summaries, how values are
  used) and the torch API knowledge it reads.
"""

__version__ = "0.1.0"
