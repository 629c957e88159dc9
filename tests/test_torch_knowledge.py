"""What gpulint knows of torch's own API agrees with the installed torch."""

from __future__ import annotations

import pytest

from gpulint.analysis.tensors import MODULE_API

torch = pytest.importorskip("torch")


def test_module_api_is_the_public_methods_of_nn_module_but_forward():
    public = {
        name for name in dir(torch.nn.Module)
        if not name.startswith("_") and callable(getattr(torch.nn.Module, name))
    }
    assert MODULE_API == public - {"forward"}
