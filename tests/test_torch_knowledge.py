"""What gpulint knows of torch's own API (``gpulint.semantic.torch_api``) agrees with the installed torch."""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import re
import warnings

import pytest

from gpulint.semantic import torch_api
from gpulint.semantic.model import SemanticModel
from gpulint.semantic.model_size import payload_size, state_dict_size

torch = pytest.importorskip("torch")
nn = torch.nn
numpy = pytest.importorskip("numpy")


def _resolves(qualified: str) -> bool:
    """Whether ``qualified`` (``torch.cuda.memory.empty_cache``) names an attribute of an importable module."""
    module_name, _, attribute = qualified.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    return hasattr(module, attribute)


def _public_module_classes(namespace) -> set:
    return {
        name for name in dir(namespace)
        if not name.startswith("_") and inspect.isclass(getattr(namespace, name))
        and issubclass(getattr(namespace, name), nn.Module)
    }


@pytest.mark.parametrize(
    "name", ["GRAD_OFF", "SET_GRAD_ENABLED", "LOADERS", "EMPTY_CACHE", "AUTOGRAD_ENTRY_POINTS", "MODULE_CONVERSIONS",
             "ARRAY_ONLY_FUNCTIONS", "EXPORTERS", "CPU_FABRICATIONS", "DEVICE_TAKING_MAKERS", "DEFAULT_DEVICE_SETTERS",
             "ALLOCATION_FREE_CUDA_FUNCTIONS"],
)
def test_qualified_names_resolve(name):
    names = getattr(torch_api, name)
    assert names and all(q.startswith("torch.") for q in names)
    assert sorted(q for q in names if not _resolves(q)) == []


@pytest.mark.parametrize(
    "name", ["DATA_LOADER", "DATA_SUBSET", "TENSOR_DATASET", "VARIABLE", "PARAMETER", "DEVICE_CONTEXT", "TORCH_SAVE", "SCRIPT_SAVE"]
)
def test_qualified_name_resolves(name):
    assert _resolves(getattr(torch_api, name))


def test_installing_a_tensor_as_a_parameter_takes_its_storage():
    """``p.data = t`` and ``nn.Parameter(t)`` both leave the parameter on ``t``'s own storage, so on its device."""
    loaded = torch.rand(2, 3, dtype=torch.float64)
    parameter = nn.Parameter(torch.zeros(2, 3))
    setattr(parameter, torch_api.TENSOR_STORAGE, loaded)
    made = nn.Parameter(loaded)
    assert parameter.data_ptr() == loaded.data_ptr() == made.data_ptr()
    assert parameter.dtype == made.dtype == torch.float64


def test_tensor_registrations_make_a_module_tensor_under_the_name_given_first():
    for method in sorted(torch_api.TENSOR_REGISTRATIONS):
        module = nn.Module()
        getattr(module, method)("alpha", nn.Parameter(torch.zeros(2)))
        assert "alpha" in dict(module.state_dict()), method


def test_elementwise_methods_map_a_tensor_to_one_of_its_shape():
    tensor = torch.rand(2, 3, requires_grad=True)
    for name in torch_api.ELEMENTWISE_METHODS:
        result = getattr(tensor, name)(-1) if "softmax" in name else getattr(tensor, name)()
        assert result.shape == tensor.shape and result.grad_fn is not None, name


def test_reductions_keep_the_history_of_the_tensor_reduced_as_methods_and_functions():
    tensor = torch.rand(2, 3, requires_grad=True)
    for name in sorted(torch_api.REDUCTIONS):
        method, function = getattr(tensor, name)(), getattr(torch, name)(tensor)
        assert method.grad_fn is not None and function.grad_fn is not None, name
        assert torch.equal(method, function), name


def test_torch_functions_of_comparisons_keep_no_history():
    """What ``semantic.confined`` reads as plain: torch's functions of values without history."""
    outputs = torch.rand(4, 3, requires_grad=True)
    preds = outputs.argmax(1)
    for name in sorted(torch_api.REDUCTIONS):
        assert getattr(torch, name)((preds == 1).float()).grad_fn is None, name


def test_command_line_parses_are_argument_parser_methods():
    import argparse

    assert all(callable(getattr(argparse.ArgumentParser, name)) for name in torch_api.COMMAND_LINE_PARSES)


def test_executor_modules_make_pools_or_threads():
    for name in torch_api.EXECUTOR_MODULES:
        module = importlib.import_module(name)
        assert any(hasattr(module, maker) for maker in ("Pool", "ThreadPoolExecutor", "Thread")), name


def test_grad_mode_names_are_what_they_say():
    assert {_object(q) for q in torch_api.GRAD_OFF} == {torch.no_grad, torch.inference_mode}
    assert {_object(q) for q in torch_api.SET_GRAD_ENABLED} == {torch.set_grad_enabled}
    assert {_object(q) for q in torch_api.GRAD_ON} == {torch.enable_grad}
    assert {_object(q) for q in torch_api.EMPTY_CACHE} == {torch.cuda.empty_cache}
    assert {_object(q) for q in torch_api.LOADERS} == {torch.load}


def _object(qualified: str):
    module_name, _, attribute = qualified.rpartition(".")
    return getattr(importlib.import_module(module_name), attribute)


def test_map_location_functions_resolve_and_include_the_loaders():
    assert sorted(q for q in torch_api.MAP_LOCATION_SLOT if not _resolves(q)) == []
    assert torch_api.LOADERS <= torch_api.MAP_LOCATION_SLOT.keys()


def test_deprecated_cuda_memory_functions_and_their_replacements_exist():
    assert sorted(q for q in torch_api.DEPRECATED_CUDA_MEMORY if not _resolves(q)) == []
    assert sorted(new for new in torch_api.DEPRECATED_CUDA_MEMORY.values() if not hasattr(torch.cuda, new)) == []


def test_module_api_is_the_public_methods_of_nn_module_but_forward():
    public = {
        name for name in dir(nn.Module)
        if not name.startswith("_") and callable(getattr(nn.Module, name))
    }
    assert torch_api.MODULE_API == public - {"forward"}


def test_module_methods_are_module_api():
    assert sorted(torch_api.MODULE_METHODS - torch_api.MODULE_API) == []


def test_module_classes_are_the_public_nn_classes_that_subclass_module():
    assert torch_api.MODULE_CLASSES == _public_module_classes(nn)
    assert "Parameter" not in torch_api.MODULE_CLASSES


def test_nested_module_classes_are_the_other_module_classes_of_public_nn_submodules():
    found = set()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for info in pkgutil.walk_packages(nn.__path__, "torch.nn."):
            if any(part.startswith("_") for part in info.name.split(".")):
                continue
            found |= _public_module_classes(importlib.import_module(info.name))
    assert torch_api.NESTED_MODULE_CLASSES == found - torch_api.MODULE_CLASSES


def test_loss_modules_are_the_nn_loss_classes():
    from torch.nn.modules.loss import _Loss

    losses = {
        name for name in _public_module_classes(nn)
        if issubclass(getattr(nn, name), _Loss) or name.endswith("Loss")
    }
    assert torch_api.LOSS_MODULES == losses


@pytest.mark.parametrize("qualified, expected", [
    ("torch.nn.Linear", True),
    ("torch.nn.modules.linear.Linear", True),
    ("torch.nn.ParameterList", True),
    ("torch.nn.parallel.DistributedDataParallel", True),
    ("torch.nn.CrossEntropyLoss", True),
    ("torch.nn.Parameter", False),
    ("torch.nn.parameter.Parameter", False),
    ("torch.nn.Buffer", False),
    ("torch.nn.utils.rnn.PackedSequence", False),
    ("torch.nn.functional.linear", False),
    ("torch.Tensor", False),
    ("mylib.nn.Linear", False),
])
def test_is_module_constructor(qualified, expected):
    assert torch_api.is_module_constructor(qualified) is expected


@pytest.mark.parametrize("qualified, expected", [
    ("torch.nn.CrossEntropyLoss", True),
    ("torch.nn.modules.loss.MSELoss", True),
    ("torch.nn.AdaptiveLogSoftmaxWithLoss", True),
    ("torch.nn.Linear", False),
    ("mylib.nn.FocalLoss", False),
    ("torch.nn.FocalLoss", False),
])
def test_is_loss_module(qualified, expected):
    assert torch_api.is_loss_module(qualified) is expected


@pytest.mark.parametrize("name", ["SHAPE_FACTORIES", "NON_TENSOR_TORCH"])
def test_torch_functions_exist(name):
    assert sorted(f for f in getattr(torch_api, name) if not hasattr(torch, f)) == []


def test_fabrications_make_cpu_tensors_without_a_device():
    """Each of ``CPU_FABRICATIONS``, given only numbers, shapes or lists, makes a tensor on the CPU."""
    arguments = {"torch.full": ((2,), 0.5), "torch.randint": (5, (2,)), "torch.normal": (0.0, 1.0, (2,)),
                 "torch.linspace": (0.0, 1.0, 3), "torch.tensor": ([1, 2],), "torch.as_tensor": ([1, 2],)}
    for qualified in torch_api.CPU_FABRICATIONS:
        function = getattr(torch, qualified.rpartition(".")[2])
        made = function(*arguments.get(qualified, (2,)))
        assert isinstance(made, torch.Tensor) and made.device.type == "cpu", qualified


def test_device_taking_makers_make_their_tensor_on_the_device_given():
    """Each of ``DEVICE_TAKING_MAKERS`` takes ``device=`` and makes its tensor there (the meta
    device: no memory, and no accelerator needed)."""
    like = torch.zeros(2)
    arguments = {"torch.full": ((2,), 0.5), "torch.randint": (5, (2,)), "torch.normal": (0.0, 1.0, (2,)),
                 "torch.linspace": (0.0, 1.0, 3), "torch.logspace": (0.0, 1.0, 3), "torch.tensor": ([1, 2],),
                 "torch.as_tensor": ([1, 2],), "torch.asarray": ([1, 2],), "torch.full_like": (like, 0.5),
                 "torch.randint_like": (like, 5)}
    for qualified in torch_api.DEVICE_TAKING_MAKERS:
        name = qualified.rpartition(".")[2]
        given = arguments.get(qualified, (like,) if name.endswith("_like") else (2,))
        made = getattr(torch, name)(*given, device="meta")
        assert isinstance(made, torch.Tensor) and made.device.type == "meta", qualified


def test_tensor_new_methods_make_their_tensor_on_the_device_given():
    reference = torch.zeros(2)
    arguments = {"new_full": ((2,), 0.5), "new_tensor": ([1, 2],)}
    for name in torch_api.TENSOR_NEW_METHODS:
        made = getattr(reference, name)(*arguments.get(name, ((2,),)), device="meta")
        assert isinstance(made, torch.Tensor) and made.device.type == "meta", name


def test_accelerator_moves_are_the_device_moves_but_cpu():
    assert torch_api.ACCELERATOR_MOVES < torch_api.DEVICE_MOVES and "cpu" not in torch_api.ACCELERATOR_MOVES


def test_shape_factories_allocate_floating_tensors():
    for name in torch_api.SHAPE_FACTORIES:
        function = getattr(torch, name)
        if name == "normal":
            result = function(0.0, 1.0, (2,))
        elif name.startswith("full"):
            result = function(torch.zeros(2) if name.endswith("_like") else (2,), 0.5)
        else:
            result = function(torch.zeros(2) if name.endswith("_like") else (2,))
        assert result.is_floating_point(), name


def test_tensor_namespaces_are_torch_modules():
    for namespace in torch_api.TENSOR_NAMESPACES:
        assert namespace.endswith(".")
        importlib.import_module(namespace[:-1])


def test_float_dtypes_are_floating_point_dtypes():
    for name in torch_api.FLOAT_DTYPES:
        dtype = getattr(torch, name, None)
        assert isinstance(dtype, torch.dtype) and dtype.is_floating_point, name


def _tensor_has(name: str) -> bool:
    return hasattr(torch.Tensor, name) or hasattr(torch.zeros(1), name)


def _module_has(name: str) -> bool:
    return hasattr(nn.Module, name) or hasattr(nn.Linear(1, 1), name)


@pytest.mark.parametrize("name", [
    "TENSOR_METADATA_ATTRIBUTES", "TENSOR_SHAPE_METHODS", "TENSOR_TO_PYTHON_METHODS", "TENSOR_ATTRIBUTES",
    "INDEX_METHODS", "DEVICE_KEEPING_TENSOR_METHODS", "BINARY_TENSOR_METHODS",
])
def test_tensor_members_exist(name):
    assert sorted(m for m in getattr(torch_api, name) if not _tensor_has(m)) == []


def test_on_cuda_attribute_says_where_a_tensor_lies():
    assert getattr(torch.zeros(1), torch_api.ON_CUDA_ATTRIBUTE) is False
    assert not callable(getattr(torch.zeros(1), torch_api.ON_CUDA_ATTRIBUTE))


def test_tensor_methods_are_methods():
    methods = torch_api.TENSOR_SHAPE_METHODS | torch_api.TENSOR_TO_PYTHON_METHODS | torch_api.INDEX_METHODS
    methods |= torch_api.DEVICE_KEEPING_TENSOR_METHODS | torch_api.BINARY_TENSOR_METHODS
    assert sorted(m for m in methods if not callable(getattr(torch.Tensor, m))) == []


def test_non_tensor_attributes_are_tensor_or_module_attributes():
    """All are a tensor's but ``training``, which is a module's, and the former attributes of tensors,
    which older releases had."""
    current = torch_api.NON_TENSOR_ATTRIBUTES - torch_api.FORMER_TENSOR_ATTRIBUTES
    assert sorted(a for a in current if not _tensor_has(a)) == ["training"]
    assert _module_has("training")


def test_former_tensor_attributes_are_only_named_tensors_names():
    """Names the installed torch cannot vouch for: kept to the one known (named tensors' ``names``)."""
    assert torch_api.FORMER_TENSOR_ATTRIBUTES <= {"names"}


def test_non_tensor_methods_are_tensor_or_module_methods():
    assert sorted(m for m in torch_api.NON_TENSOR_METHODS if not (_tensor_has(m) or _module_has(m))) == []
    module_only = {m for m in torch_api.NON_TENSOR_METHODS if not _tensor_has(m)}
    assert sorted(module_only - torch_api.MODULE_API) == []


def test_module_only_methods_are_module_methods_tensors_lack():
    assert torch_api.MODULE_ONLY_METHODS <= torch_api.MODULE_API
    assert sorted(m for m in torch_api.MODULE_ONLY_METHODS if _tensor_has(m) or not _module_has(m)) == []


def test_mode_switches_keep_a_modules_tensors_where_they_are():
    """``eval`` and ``train`` return the module itself, its parameters on the device they were on."""
    layer = nn.Linear(1, 1)
    weight = layer.weight
    for switch in sorted(torch_api.MODE_SWITCHES):
        assert _module_has(switch) and not _tensor_has(switch)
        assert getattr(layer, switch)() is layer
        assert layer.weight is weight


def test_parameter_listing_methods_give_the_modules_own_parameters():
    """An optimizer built from what they give holds the module's parameter tensors themselves."""
    layer = nn.Linear(2, 2)
    for method in sorted(torch_api.PARAMETER_LISTING_METHODS):
        assert _module_has(method) and not _tensor_has(method)
        given = [item[1] if isinstance(item, tuple) else item for item in getattr(layer, method)()]
        assert [id(tensor) for tensor in given] == [id(layer.weight), id(layer.bias)]


def test_layout_methods_are_tensor_methods():
    assert sorted(m for m in torch_api.LAYOUT_METHODS if not _tensor_has(m)) == []


def test_weight_attributes_are_a_layers_parameters():
    layer = nn.Linear(1, 1)
    assert all(isinstance(getattr(layer, name), nn.Parameter) for name in torch_api.WEIGHT_ATTRIBUTES)


def test_gpulint_does_not_import_torch_for_its_knowledge():
    source = inspect.getsource(torch_api)
    assert "import torch" not in source


def test_device_keeping_methods_return_tensors_of_their_input():
    """Each returns a tensor on its input's device."""
    value = torch.rand(2, 3, dtype=torch.float64)
    arguments = {"permute": (1, 0), "transpose": (0, 1), "reshape": (3, 2), "view": (3, 2), "clamp": (0.0, 1.0), "unsqueeze": (0,)}
    for method in sorted(torch_api.DEVICE_KEEPING_TENSOR_METHODS):
        result = getattr(value, method)(*arguments.get(method, ()))
        assert isinstance(result, torch.Tensor) and result.device == value.device, method



def test_array_only_methods_are_not_tensor_methods():
    assert torch_api.ARRAY_ONLY_METHODS and sorted(m for m in torch_api.ARRAY_ONLY_METHODS if _tensor_has(m)) == []


def test_text_only_methods_are_string_methods_that_tensors_and_arrays_lack():
    assert torch_api.TEXT_ONLY_METHODS
    for method in sorted(torch_api.TEXT_ONLY_METHODS):
        assert hasattr(str, method) and hasattr(bytes, method), method
        assert not _tensor_has(method) and not hasattr(numpy.zeros(1), method), method


def test_a_tensor_split_needs_a_size():
    """``split()`` with no argument, or with a string, raises on a tensor (and numpy arrays have none)."""
    assert hasattr(str, torch_api.TEXT_SPLIT) and not hasattr(numpy.zeros(1), torch_api.TEXT_SPLIT)
    for arguments in ((), (" ",)):
        with pytest.raises(TypeError):
            getattr(torch.zeros(4), torch_api.TEXT_SPLIT)(*arguments)


def test_from_numpy_takes_no_tensor():
    for qualified in sorted(torch_api.ARRAY_ONLY_FUNCTIONS):
        with pytest.raises(TypeError):
            _object(qualified)(torch.zeros(2))


def test_history_free_methods_give_no_autograd_history():
    """Called on a tensor that carries history, each gives a value that carries none (``numpy`` refuses
    such a tensor instead)."""
    value = torch.rand(1, requires_grad=True) * 2
    arguments = {name: (value,) for name in ("eq", "ne", "lt", "le", "gt", "ge")}
    for method in sorted(torch_api.HISTORY_FREE_METHODS):
        try:
            result = getattr(value, method)(*arguments.get(method, ()))
        except RuntimeError:
            assert method == "numpy"
            continue
        assert not (isinstance(result, torch.Tensor) and result.requires_grad), method


def test_torch_package_is_the_name_import_torch_binds():
    namespace: dict = {}
    exec("import torch", namespace)
    assert namespace[torch_api.TORCH_PACKAGE] is torch


def test_value_builtins_give_python_values_of_a_tensor_with_history():
    """Each gives a Python value of a one-element tensor with history (``round`` refuses a tensor
    instead)."""
    import builtins

    value = torch.rand(1, requires_grad=True) * 2
    for name in sorted(torch_api.VALUE_BUILTINS):
        try:
            result = getattr(builtins, name)(value)
        except TypeError:
            assert name == "round"
            continue
        assert not isinstance(result, torch.Tensor), name
    assert torch_api.VALUE_BUILTINS <= torch_api.RELEASING_BUILTINS


RECURRENT_ARGUMENTS = {
    "input_size": 3, "hidden_size": 5, "num_layers": 2, "nonlinearity": "relu", "bias": False, "batch_first": True,
    "dropout": 0.5, "bidirectional": True, "proj_size": 2,
}
"""Distinct values for each parameter of the recurrent layers, which read ``*args`` themselves."""


@pytest.mark.parametrize("layer", sorted(torch_api.SIZED_LAYERS))
def test_sized_layers_take_their_arguments_in_that_order(layer):
    _, positional = torch_api.SIZED_LAYERS[layer]
    parameters = inspect.signature(getattr(nn, layer)).parameters
    if any(parameter.kind is inspect.Parameter.VAR_POSITIONAL for parameter in parameters.values()):
        built = getattr(nn, layer)(*[RECURRENT_ARGUMENTS[name] for name in positional])
        assert {name: getattr(built, name) for name in positional} == {name: RECURRENT_ARGUMENTS[name] for name in positional}
        assert layer in torch_api.RECURRENT_GATES
        return
    assert list(parameters)[:len(positional)] == list(positional)


def test_recurrent_gates_are_the_rows_of_each_weight():
    for layer, gates in torch_api.RECURRENT_GATES.items():
        assert getattr(nn, layer)(3, 5).weight_ih_l0.shape == (gates * 5, 3)


def test_resizing_names_are_torch_resizing_functions_and_layers():
    """Of ``torch.nn`` and ``torch.nn.functional``, exactly the layers and functions that resize
    their input by a scale or to a size are taken for resizing."""
    found = {
        f"{module.__name__}.{name}" for module in (nn, nn.functional) for name in dir(module)
        if not name.startswith("_") and torch_api.resizes_images(f"{module.__name__}.{name}")
    }
    assert found == {
        "torch.nn.Upsample", "torch.nn.UpsamplingBilinear2d", "torch.nn.UpsamplingNearest2d",
        "torch.nn.functional.interpolate", "torch.nn.functional.upsample", "torch.nn.functional.upsample_bilinear",
        "torch.nn.functional.upsample_nearest",
    }
    assert all(torch_api.resizes_images(f"torchvision.transforms.{name}") for name in (
        "Resize", "RandomResizedCrop", "Scale", "RandomSizedCrop", "functional.resize", "functional.resized_crop", "v2.Resize",
    ))
    assert not any(torch_api.resizes_images(f"torchvision.transforms.{name}") for name in ("ToTensor", "Normalize", "RandomCrop", "CenterCrop"))


SIZED_EXAMPLES = [
    "nn.Linear(7, 5)", "nn.Linear(7, 5, bias=False)", "nn.Linear(7, 5, False)",
    "nn.Conv1d(4, 6, 3)", "nn.Conv2d(4, 6, (3, 2), bias=False)", "nn.Conv2d(4, 6, 3, 1, 0, 1, 2)",
    "nn.Conv3d(2, 4, 3, groups=2)", "nn.ConvTranspose1d(4, 6, 5)", "nn.ConvTranspose2d(4, 6, 3, groups=2, bias=False)",
    "nn.ConvTranspose3d(2, 2, (1, 2, 3))", "nn.Embedding(11, 3)", "nn.BatchNorm1d(5)",
    "nn.BatchNorm2d(5, affine=False)", "nn.BatchNorm3d(5, track_running_stats=False)",
    "nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Dropout(), nn.Linear(4, 2))",
    "nn.ModuleList([nn.Embedding(4, 2), nn.Conv1d(2, 2, 1)])",
    "nn.Parameter(torch.randn(3, 4))", "nn.Parameter(torch.zeros((2, 5)))", "nn.DataParallel(nn.Linear(7, 5))",
    "nn.Parameter(data=torch.randn(2, 3, requires_grad=True, dtype=torch.float))",
    "nn.LSTM(7, 5)", "nn.LSTM(7, 5, 2, bidirectional=True)", "nn.GRU(4, 3, 3, False)", "nn.GRU(4, 3, num_layers=2, batch_first=True)",
    "nn.RNN(4, 6, 2, 'relu', True, True, 0.0, True)", "nn.RNN(4, 6, bias=False)",
]


@pytest.mark.parametrize("example", SIZED_EXAMPLES)
def test_model_size_counts_what_torch_puts_in_the_state_dict(example):
    """``semantic.model_size`` reads the layers of ``SIZED_LAYERS``, the parameter-free layers and the
    containers from the code; the count is the elements of the state dict torch builds."""
    source = f"import torch\nfrom torch import nn\nvalue = {example}\n"
    tree = ast.parse(source)
    value = tree.body[-1].value
    built = eval(example, {"torch": torch, "nn": nn})
    tensors = [built] if isinstance(built, torch.Tensor) else list(built.state_dict().values())
    assert state_dict_size(SemanticModel(tree, source), value) == sum(tensor.numel() for tensor in tensors)


SIZED_PROGRAMS = [
    "x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])\nvalue = nn.Linear(x.shape[1], x.shape[0])",
    "x = torch.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])\nb = torch.stack((x, x, x), dim=-1)\nvalue = nn.Linear(b.shape[2], b.size(1))",
    "x = torch.zeros(4, 5)\nx = x.to('cpu').float()\nvalue = nn.Embedding(len(x), x.size()[1])",
    "WIDTH = 6\nclass Net(nn.Module):\n    def __init__(self, n):\n        super().__init__()\n        self.fc = nn.Linear(n, WIDTH)\n"
    "        self.plain = torch.ones(n, n)\n        self.register_buffer('mask', torch.triu(torch.ones(n, n), diagonal=1))\n"
    "value = Net(torch.stack([torch.ones(2), torch.ones(2)]).shape[0] * 3)",
]


@pytest.mark.parametrize("program", SIZED_PROGRAMS)
def test_model_size_reads_sizes_off_the_tensors_the_code_spells(program):
    """Sizes read off ``torch.tensor`` literals, ``torch.stack`` and the factories (``x.shape[1]``,
    ``x.size(0)``, ``len(x)``), through names bound once: the count is that of torch's state dict."""
    source = f"import torch\nfrom torch import nn\n{program}\n"
    tree = ast.parse(source)
    namespace = {"torch": torch, "nn": nn}
    exec(compile(source, "<program>", "exec"), namespace)
    expected = sum(tensor.numel() for tensor in namespace["value"].state_dict().values())
    assert state_dict_size(SemanticModel(tree, source), tree.body[-1].value) == expected


PAYLOADS = [
    "torch.arange(4, dtype=torch.float32)", "torch.arange(2, 11, 3)", "[torch.zeros(4), torch.ones(size=(2, 3))]",
    "{'x': torch.tensor([[1.0, 2.0], [3.0, 4.0]]), 'y': (torch.randn(5), torch.rand((2, 2)))}",
]


@pytest.mark.parametrize("payload", PAYLOADS)
def test_payload_size_counts_the_tensor_elements(payload):
    source = f"import torch\nvalue = {payload}\n"
    tree = ast.parse(source)
    built = eval(payload, {"torch": torch})
    tensors = built if isinstance(built, (list, tuple)) else [built]
    if isinstance(built, dict):
        tensors = [built["x"], *built["y"]]
    assert payload_size(SemanticModel(tree, source), tree.body[-1].value) == sum(tensor.numel() for tensor in tensors)


def test_integer_dtypes_and_tensor_classes_are_integer():
    for name in torch_api.INTEGER_DTYPES:
        dtype = getattr(torch, name.split(".", 1)[1])
        assert isinstance(dtype, torch.dtype) and not dtype.is_floating_point and not dtype.is_complex and dtype != torch.bool, name
    for name in torch_api.INTEGER_TENSOR_CLASSES:
        module, _, cls = name.rpartition(".")
        tensor_type = getattr(importlib.import_module(module), cls)
        if module == "torch":
            assert tensor_type([1, 2]).dtype in {torch.int64, torch.int32}, name
        else:
            assert getattr(torch, cls).dtype == tensor_type.dtype, name


def test_module_wrappers_take_the_module_first():
    for name in torch_api.MODULE_WRAPPERS:
        assert list(inspect.signature(getattr(nn.parallel, name)).parameters)[0] == "module", name


def test_shape_keeping_functions_and_methods_keep_the_shape():
    tensor = torch.rand(3, 4)
    for name in torch_api.SHAPE_KEEPING_FUNCTIONS:
        assert getattr(torch, name)(tensor).shape == tensor.shape, name
    for name in torch_api.SHAPE_KEEPING_METHODS:
        arguments = ("cpu",) if name == "to" else ()
        if name == "cuda":
            assert callable(getattr(tensor, name))
            continue
        assert getattr(tensor, name)(*arguments).shape == tensor.shape, name


def test_literal_and_stacking_functions_build_the_shapes_model_size_gives_them():
    assert getattr(torch, torch_api.LITERAL_TENSOR)([[1, 2, 3], [4, 5, 6]]).shape == (2, 3)
    assert getattr(torch, torch_api.STACKING_FUNCTION)((torch.ones(2, 3),) * 4, dim=1).shape == (2, 4, 3)


PARAMETER_FREE_ARGUMENTS = {
    "Softmax": {"dim": 1}, "LogSoftmax": {"dim": 1}, "MaxPool1d": {"kernel_size": 2}, "MaxPool2d": {"kernel_size": 2},
    "MaxPool3d": {"kernel_size": 2}, "AvgPool1d": {"kernel_size": 2}, "AvgPool2d": {"kernel_size": 2},
    "AvgPool3d": {"kernel_size": 2}, "AdaptiveAvgPool1d": {"output_size": 1}, "AdaptiveAvgPool2d": {"output_size": 1},
    "AdaptiveMaxPool1d": {"output_size": 1}, "AdaptiveMaxPool2d": {"output_size": 1}, "Upsample": {"scale_factor": 2},
}


@pytest.mark.parametrize("layer", sorted(torch_api.PARAMETER_FREE_LAYERS))
def test_parameter_free_layers_have_an_empty_state_dict(layer):
    assert not getattr(nn, layer)(**PARAMETER_FREE_ARGUMENTS.get(layer, {})).state_dict()


def test_module_containers_are_torch_nn_containers():
    assert all(issubclass(getattr(nn, name), nn.Module) for name in torch_api.MODULE_CONTAINERS)


@pytest.mark.parametrize(
    "name", ["resnet50-19c8e357.pth", "alexnet-owt-4df8aa71.pth", "densenet121-a639ec97.pth", "shufflenetv2_x1-5666bf0f80.pth"]
)
def test_hub_hashed_files_carry_the_hash_torch_hub_checks(name):
    ours = re.search(torch_api.HUB_HASHED_FILE, name)
    assert ours is not None
    assert torch.hub.HASH_REGEX.search(name).group(1) == ours.group(1)


@pytest.mark.parametrize("name", ["model-20231105.pth", "model-best.pth", "model-3f2a.pth", "resnet50-19c8e357.pth.bak/x"])
def test_a_date_or_a_short_tag_is_no_hub_hash(name):
    assert re.search(torch_api.HUB_HASHED_FILE, name) is None


def test_the_hub_hash_has_the_digits_torch_hub_asks_for():
    assert "first eight or more" in " ".join((torch.hub.load_state_dict_from_url.__doc__ or "").split())


def test_grad_requiring_tensor_methods_are_tensor_methods_that_raise_without_grad():
    for name in torch_api.GRAD_REQUIRING_TENSOR_METHODS:
        assert callable(getattr(torch.Tensor, name))
        assert not hasattr(torch.nn.Module, name)
        with torch.no_grad():
            computed = torch.ones(2, requires_grad=True) * 2
        with pytest.raises(RuntimeError):
            method = getattr(computed, name)
            method(lambda gradient: gradient) if name == "register_hook" else method()


def _metric_tasks(name):
    """Each task's class of a torchmetrics metric (``MulticlassAccuracy`` for ``Accuracy``), by task."""
    classification = importlib.import_module("torchmetrics.classification")
    return {task: getattr(classification, task + name) for task in torch_api.METRIC_TASKS if hasattr(classification, task + name)}


@pytest.mark.parametrize("name", sorted(torch_api.HISTORY_FREE_METRICS))
def test_history_free_metrics_are_torchmetrics_classes_that_are_not_differentiable(name):
    torchmetrics = importlib.import_module("torchmetrics")
    assert hasattr(torchmetrics, name)
    tasks = _metric_tasks(name)
    assert tasks and all(metric.is_differentiable is False for metric in tasks.values())
    assert all(torch_api.is_history_free_metric(f"torchmetrics.classification.{metric.__name__}") for metric in tasks.values())


@pytest.mark.parametrize("name", sorted(torch_api.HISTORY_FREE_METRICS))
def test_history_free_metrics_return_no_history_from_predictions_that_have_it(name):
    torchmetrics = importlib.import_module("torchmetrics")
    samples = {
        "binary": (torch.rand(8, requires_grad=True), torch.tensor([0, 1] * 4)),
        "multiclass": (torch.rand(8, 3, requires_grad=True), torch.tensor([0, 1, 2, 0, 1, 2, 0, 1])),
        "multilabel": (torch.rand(8, 3, requires_grad=True), torch.tensor([[0, 1, 1]] * 8)),
    }
    options = {"beta": 2.0} if name == "FBetaScore" else {}
    measured = 0
    for task in _metric_tasks(name):
        predictions, targets = samples[task.lower()]
        metric = getattr(torchmetrics, name)(task=task.lower(), num_classes=3, num_labels=3, **options)
        assert predictions.requires_grad
        assert not metric(predictions, targets).requires_grad
        measured += 1
    assert measured


def test_a_differentiable_metric_is_not_taken_for_a_history_free_one():
    torchmetrics = importlib.import_module("torchmetrics")
    assert torchmetrics.MeanSquaredError.is_differentiable
    assert not torch_api.is_history_free_metric("torchmetrics.MeanSquaredError")
    prediction = torch.rand(4, requires_grad=True)
    assert torchmetrics.MeanSquaredError()(prediction, torch.rand(4)).requires_grad
    assert not torch_api.is_history_free_metric("torch.nn.Accuracy")


def _loss_inputs(name: str) -> tuple:
    """Arguments of a batch of 8 rows of 16 for the loss class ``name`` (its input first)."""
    generator = torch.Generator().manual_seed(0)
    scores = torch.randn(8, 16, generator=generator, requires_grad=True)
    other = torch.randn(8, 16, generator=generator)
    classes = torch.randint(0, 16, (8,), generator=generator)
    signs = torch.ones(8)
    if name in ("CrossEntropyLoss", "MultiMarginLoss"):
        return scores, classes
    if name in ("NLLLoss", "NLLLoss2d"):
        return scores.log_softmax(1), classes
    if name == "BCELoss":
        return scores.sigmoid(), other.sigmoid()
    if name in ("BCEWithLogitsLoss", "MultiLabelSoftMarginLoss"):
        return scores, (other > 0).float()
    if name == "KLDivLoss":
        return scores.log_softmax(1), other.softmax(1)
    if name in ("SoftMarginLoss", "HingeEmbeddingLoss"):
        return scores, other.sign()
    if name == "PoissonNLLLoss":
        return scores, other.abs()
    if name == "GaussianNLLLoss":
        return scores, other, torch.ones(8, 16)
    if name == "CosineEmbeddingLoss":
        return scores, other, signs
    if name == "MarginRankingLoss":
        return scores[:, 0], other[:, 0], signs
    if name in ("TripletMarginLoss", "TripletMarginWithDistanceLoss"):
        return scores, other, other * 2
    if name == "MultiLabelMarginLoss":
        return scores, classes.unsqueeze(1).expand(8, 16).contiguous()
    return scores, other


SIZED_LOSSES = sorted(torch_api.LOSS_MODULES - {"AdaptiveLogSoftmaxWithLoss", "CTCLoss", "LinearCrossEntropyLoss"})
"""The loss classes built without arguments that take a batch of rows (CTC, adaptive softmax and
the fused linear one need sequences, sizes or weights of their own)."""


@pytest.mark.parametrize("name", SIZED_LOSSES)
def test_storage_keeping_losses_are_those_whose_backpropagated_value_keeps_the_input_size(name):
    """Reduced by default and backpropagated, a loss of :data:`STORAGE_KEEPING_LOSS_MODULES` still
    holds a storage as large as its input; every other one holds its own number."""
    inputs = _loss_inputs(name)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        loss = getattr(nn, name)()(*inputs)
    loss.backward()
    keeps_input_size = loss.untyped_storage().nbytes() >= inputs[0].numel() * inputs[0].element_size()
    assert keeps_input_size is (name in torch_api.STORAGE_KEEPING_LOSS_MODULES)


def _functions_called_by(name: str) -> set:
    """The ``torch.nn.functional`` functions the loss class ``name`` calls in its ``forward``."""
    return set(re.findall(r"\bF\.(\w+)\(", inspect.getsource(getattr(nn, name).forward)))


def test_storage_keeping_loss_functions_are_those_the_keeping_classes_call():
    """Each keeping class calls one keeping function, which keeps the input's size when called directly."""
    assert sorted(q for q in torch_api.STORAGE_KEEPING_LOSS_FUNCTIONS if not _resolves(q)) == []
    functions = {q.rpartition(".")[2] for q in torch_api.STORAGE_KEEPING_LOSS_FUNCTIONS}
    calling = {name: _functions_called_by(name) & functions for name in torch_api.STORAGE_KEEPING_LOSS_MODULES}
    assert all(len(called) == 1 for called in calling.values()), calling
    assert set().union(*calling.values()) == functions
    for name, (function,) in calling.items():
        inputs = _loss_inputs(name)
        loss = getattr(torch.nn.functional, function)(*inputs)
        loss.backward()
        assert loss.untyped_storage().nbytes() >= inputs[0].numel() * inputs[0].element_size()


def test_accelerator_move_methods_are_methods_of_tensors_and_modules():
    for name in torch_api.ACCELERATOR_MOVE_METHODS:
        assert callable(getattr(torch.Tensor, name, None)) and callable(getattr(nn.Module, name, None)), name


def test_allocation_free_cuda_functions_resolve_in_torch_cuda():
    assert all(q.startswith(torch_api.CUDA_NAMESPACE) for q in torch_api.ALLOCATION_FREE_CUDA_FUNCTIONS)
    assert sorted(q for q in torch_api.ALLOCATION_FREE_CUDA_FUNCTIONS if not _resolves(q)) == []


def test_torch_dtypes_are_dtypes():
    for qualified in torch_api.TORCH_DTYPES:
        assert isinstance(getattr(torch, qualified.split(".", 1)[1]), torch.dtype), qualified


def _fresh_arguments(name: str, value: torch.Tensor) -> tuple:
    """Arguments that make each fresh method or function compute from ``value`` (a 2x3 tensor)."""
    if name in {"add", "sub", "mul", "div", "pow"}:
        return (value,)
    if name in {"matmul", "torch.matmul"}:
        return (value.t(),) if name == "matmul" else (value, value.t())
    if name in {"clamp"}:
        return (0.0, 1.0)
    if name in {"softmax", "log_softmax", "torch.softmax", "torch.nn.functional.softmax", "torch.nn.functional.log_softmax"}:
        return (-1,) if not name.startswith("torch") else (value, -1)
    if name in {"torch.cat", "torch.stack"}:
        return ([value, value],)
    if name == "torch.cdist":
        return (value, value)
    if name == "torch.einsum":
        return ("ij->i", value)
    if name == "torch.nn.functional.cosine_similarity":
        return (value, value)
    if name == "torch.nn.functional.interpolate":
        return (value.unsqueeze(0), None, 2.0)
    if name == "torch.nn.functional.pad":
        return (value, (1, 1))
    return () if not name.startswith("torch") else (value,)


def test_fresh_tensor_methods_give_no_history_under_no_grad():
    """A method counted fresh gives a tensor that neither is its receiver nor shares its history."""
    leaf = torch.rand(2, 3, requires_grad=True)
    value = leaf * 2
    for method in sorted(torch_api.FRESH_TENSOR_METHODS):
        with torch.no_grad():
            result = getattr(value, method)(*_fresh_arguments(method, value))
        assert isinstance(result, torch.Tensor) and not result.requires_grad and result is not value, method
    for method in ("view", "float", "reshape", "squeeze"):
        with torch.no_grad():
            kept = getattr(value, method)(*((2, 3) if method in {"view", "reshape"} else ()))
        assert kept.requires_grad and method not in torch_api.FRESH_TENSOR_METHODS, method


def test_fresh_torch_functions_give_no_history_under_no_grad():
    import importlib

    leaf = torch.rand(2, 3, requires_grad=True)
    value = leaf * 2
    for qualified in sorted(torch_api.FRESH_TORCH_FUNCTIONS):
        namespace, _, name = qualified.rpartition(".")
        function = getattr(importlib.import_module(namespace), name)
        with torch.no_grad():
            result = function(*_fresh_arguments(qualified, value))
        assert isinstance(result, torch.Tensor) and not result.requires_grad, qualified


def test_loss_functions_are_those_the_weightless_loss_classes_call():
    """:data:`LOSS_FUNCTIONS` is what the loss classes holding no weights call (not
    ``AdaptiveLogSoftmaxWithLoss`` or ``LinearCrossEntropyLoss``, which hold a projection's weight),
    and each resolves in the installed torch."""
    assert sorted(q for q in torch_api.LOSS_FUNCTIONS if not _resolves(q)) == []
    weightless = []
    for name in sorted(torch_api.LOSS_MODULES - {"NLLLoss2d"}):
        try:
            loss = getattr(nn, name)()
        except TypeError:
            continue
        if not list(loss.parameters()):
            weightless.append(name)
    assert not {"AdaptiveLogSoftmaxWithLoss", "LinearCrossEntropyLoss"} & set(weightless)
    called = set().union(*(_functions_called_by(name) for name in weightless))
    assert {q.rpartition(".")[2] for q in torch_api.LOSS_FUNCTIONS} == called


def test_in_place_methods_keep_a_tensors_size_but_those_known_to_change_it():
    for name in sorted(torch_api.SIZE_CHANGING_IN_PLACE_METHODS):
        assert callable(getattr(torch.Tensor, name)), name
    grown = torch.zeros(2, 3)
    grown.resize_(4, 5)
    assert grown.numel() == 20
    weight = nn.Linear(3, 2).weight.data
    for name, arguments in (("normal_", (0, 0.1)), ("uniform_", ()), ("fill_", (1.0,)), ("zero_", ()), ("copy_", (torch.ones(2, 3),))):
        assert name not in torch_api.SIZE_CHANGING_IN_PLACE_METHODS
        assert getattr(weight, name)(*arguments).shape == (2, 3), name


def test_weight_initialisers_fill_the_tensor_given_in_place():
    namespace = _object(torch_api.WEIGHT_INITIALISERS)
    weight = nn.Parameter(torch.zeros(2, 3))
    for name in ("xavier_uniform_", "kaiming_normal_", "zeros_", "constant_"):
        initialiser = getattr(namespace, name)
        result = initialiser(weight, 0.5) if name == "constant_" else initialiser(weight)
        assert result is weight and weight.shape == (2, 3), name



def test_graph_readers_are_torchviz_functions():
    """torchviz is no dependency of gpulint: its functions are checked where it is installed."""
    assert {name.partition(".")[0] for name in torch_api.GRAPH_READERS} == {"torchviz"}
    torchviz = pytest.importorskip("torchviz")
    assert sorted(name for name in torch_api.GRAPH_READERS if not callable(getattr(torchviz, name.partition(".")[2], None))) == []


def test_module_additions_are_module_methods_tensors_lack():
    assert sorted(m for m in torch_api.MODULE_ADDITIONS if _tensor_has(m) or not callable(getattr(nn.Module, m, None))) == []


def test_the_gradient_request_is_a_factory_keyword_and_a_tensor_method():
    assert torch.zeros(1, **{torch_api.GRAD_REQUEST_KEYWORD: True}).requires_grad
    assert getattr(torch.zeros(1), torch_api.GRAD_REQUEST_METHOD)().requires_grad


def test_the_nn_package_is_torchs():
    assert importlib.import_module(torch_api.NN_PACKAGE.rstrip(".")) is nn


def test_the_transforms_package_holds_the_transforms_named():
    transforms = pytest.importorskip(torch_api.TRANSFORMS_PACKAGE.rstrip("."))
    assert sorted(name for name in torch_api.SIZE_KEEPING_TRANSFORMS if not hasattr(transforms, name)) == []
