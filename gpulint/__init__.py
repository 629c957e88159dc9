"""gpulint: find and fix the PyTorch habits that run GPUs out of memory.

The package is layered; each layer imports only the ones listed after it:

- ``frontend``: the ``gpulint`` command, the flake8 plugin, configuration, file discovery, notebooks.
- ``report``: text, JSON, SARIF and GitHub output.
- ``rules``: one module per rule, each a LibCST visitor that reports and builds its fixes.
- ``engine``: linting one text, fixing, running over many files; the rule API (``engine.rule``).
- ``analysis``: per-scope data flow over LibCST trees (control flow, liveness, tensor-likeness).
- ``edits``: formatting-preserving edits that fixes are built from.
- ``semantic``: the per-file model on Python's ``ast`` and the torch API knowledge it reads.
"""

__version__ = "0.1.0"
