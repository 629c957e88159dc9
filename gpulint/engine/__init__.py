"""The engine: lint one source text (prefilter, blank what no rule reads, parse once with LibCST, run
the rules, apply ``noqa``), apply fixes until nothing changes, and run that over many files with a
cache and worker processes. ``rule`` is the API every rule is written against."""
