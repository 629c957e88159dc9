"""gpulint: find and fix the PyTorch habits that run GPUs out of memory."""

__version__ = "0.1.0"
