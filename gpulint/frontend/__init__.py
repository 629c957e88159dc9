"""The front ends: how users reach gpulint (the ``gpulint`` command, the flake8 plugin), what they
configure (``[tool.gpulint]``, ``--select``), which files they mean, and notebooks turned into
Python text and back."""
