"""What gpulint knows of the torch API: the functions, classes, methods and attributes that rules and
analyses read code against, written out as data in one place.

gpulint never imports torch; ``tests/test_torch_knowledge.py`` checks every name here against the
installed torch (and torchmetrics' against the installed torchmetrics) instead. Heuristics about
how projects name things (``criterion``, ``no_grad`` in a decorator's name), Python builtins and
other libraries' conventions stay with the analysis or rule that decides with them, added to these
sets by union where it needs more.
"""

from __future__ import annotations

from typing import AbstractSet, Dict, FrozenSet, Tuple

METRICS_PACKAGE = "torchmetrics"
"""The metrics library built on torch whose metric classes are ``nn.Module`` subclasses."""
HISTORY_FREE_METRICS = frozenset({
    "Accuracy", "Precision", "Recall", "F1Score", "FBetaScore", "Specificity", "StatScores", "HammingDistance",
    "ExactMatch", "JaccardIndex", "ConfusionMatrix", "MatthewsCorrCoef", "AUROC", "AveragePrecision",
})
"""torchmetrics' classification metrics whose results carry no autograd history, whatever the
predictions they are given (counts and ratios of thresholded or ranked predictions: each task's
class has ``is_differentiable = False``). An instance is a module without parameters whose call
builds no graph: not a model."""
METRIC_TASKS = ("Binary", "Multiclass", "Multilabel")
"""The prefixes of torchmetrics' task-specific classes (``MulticlassAccuracy``)."""
OTHER_FRAMEWORKS = frozenset({"paddle", "tensorflow", "keras", "jax", "flax", "mindspore", "oneflow", "mxnet", "megengine", "jittor"})
"""Deep-learning frameworks other than torch: a module that imports one and nothing of torch's
(:data:`TORCH_LIBRARIES`) runs that framework's models (``paddle.no_grad()``), which torch's grad
mode does not reach."""
TORCH_LIBRARIES = frozenset({
    "torch", "torchvision", "torchaudio", "torchtext", "timm", "transformers", "diffusers", "accelerate",
    "lightning", "pytorch_lightning", "peft", "deepspeed", "fairseq", "detectron2", "mmcv", "mmdet",
    "ultralytics", "kornia", "open_clip", "clip", "sentence_transformers", "torch_geometric",
})
"""Packages built on torch: a module that imports one may run torch models, whatever else it imports."""
TORCH_PACKAGE = "torch"
"""The name that importing torch's package binds. A star import of a module that imports torch
brings that name along (``from project.modules import *``): an unbound ``torch`` under a star
import is torch."""

# -- Functions -------------------------------------------------------------------------------------

LOADERS = frozenset({"torch.load", "torch.serialization.load"})
"""The functions that unpickle a saved object, tensors and all: ``analysis.tensors`` and GPU002 read
a call of one as a loaded checkpoint (or whole model)."""

JIT_LOAD = "torch.jit.load"
"""Loads a TorchScript module, onto the device it was saved from unless ``map_location`` says."""
MAP_LOCATION_SLOT: Dict[str, int] = {**dict.fromkeys(LOADERS, 1), JIT_LOAD: 1}
"""Each function that takes ``map_location``, and the 0-based positional slot of that parameter in its
signature: GPU001 flags a call of one that passes none."""

HUB_HASHED_FILE = r"-(?=[0-9]*[a-f])([0-9a-f]{8,})\.[A-Za-z]\w*$"
"""How ``torch.hub`` names a published file: ``filename-<sha256>.ext``, the first eight or more hex
digits of its SHA-256 (``resnet50-19c8e357.pth``), the hash ``load_state_dict_from_url(check_hash=True)``
reads with ``torch.hub.HASH_REGEX``. Here the hash must hold a letter, so a date
(``model-20231105.pth``) is none. Such a file is a release, downloaded by that name."""

GRAD_REQUIRING_TENSOR_METHODS = frozenset({"register_hook", "retain_grad"})
"""Tensor methods that raise ``RuntimeError`` on a tensor that does not require grad (any tensor
computed under ``torch.no_grad()``): a hook on its gradient, keeping its gradient."""

TENSORLESS_FILES = frozenset({"training_args.bin"})
"""Files a library writes with ``torch.save`` that hold no tensors: transformers' ``Trainer`` pickles
its ``TrainingArguments`` as ``training_args.bin`` (``transformers.trainer.TRAINING_ARGS_NAME``)."""

CHECKPOINT_COUNTER_KEYS = frozenset({
    "epoch", "epochs", "step", "steps", "global_step", "iteration", "iterations", "iter",
    "acc", "accuracy", "best_acc", "best_accuracy", "best_epoch", "best_score", "best_metric",
})
"""Keys under which a training script's checkpoint keeps its counters and scores
(``torch.save({"model": model.state_dict(), "epoch": epoch, "accuracy": acc}, path)``): Python
numbers, not tensors, whatever device the checkpoint's tensors were loaded onto."""

COCO_EVALUATION_PARAMS = frozenset({"iouThrs", "recThrs", "maxDets", "areaRng", "areaRngLbl", "useCats", "catIds", "imgIds", "iouType"})
"""The settings of pycocotools' ``Params``, which ``COCOeval.eval`` holds as its ``params`` entry beside
numpy arrays (``precision``, ``recall``, ``scores``): a payload read as ``data["params"].recThrs`` is
that dict, saved with ``torch.save`` by detection projects (DETR's evaluation files), and holds no
tensors."""

EMPTY_CACHE = frozenset({"torch.cuda.empty_cache", "torch.cuda.memory.empty_cache"})
"""``torch.cuda.empty_cache`` under the names it is exported by: GPU003 checks what is alive at each call."""

MODULE_CONVERSIONS = frozenset({
    "torch.quantization.quantize_dynamic", "torch.ao.quantization.quantize_dynamic",
    "torch.quantization.convert", "torch.ao.quantization.convert",
    "torch.quantization.quantize", "torch.ao.quantization.quantize",
})
"""Functions that return a new module built from the one they are given (a quantized copy): where it
replaces a submodule (``net.backbone = quantize_dynamic(...)``), whatever held the old one is then its
only holder. GPU003 reads them."""

ARRAY_ONLY_FUNCTIONS = frozenset({"torch.from_numpy"})
"""Functions that take only a numpy array, never a tensor: a value passed to one is no tensor
(``semantic.array_data`` reads them)."""

NUMPY_ARRAY_CONSTRUCTORS = frozenset({
    "numpy.empty", "numpy.zeros", "numpy.ones", "numpy.full", "numpy.array", "numpy.asarray",
    "numpy.empty_like", "numpy.zeros_like", "numpy.ones_like", "numpy.full_like", "numpy.arange",
})
"""numpy's functions that make a new array: writing a value into a slice of one (``buffer[a:b] =
value``) converts it to numpy, which no tensor on an accelerator allows (``semantic.array_data``)."""

TORCH_SAVE = "torch.save"
"""Pickles an object, its tensors tagged with the devices they are on."""
SCRIPT_SAVE = "torch.jit.save"
"""Saves a TorchScript module (as its own ``save`` method does)."""
SCRIPT_MAKERS = frozenset({"torch.jit.trace", "torch.jit.trace_module", "torch.jit.script", "torch.jit.freeze"})
"""Functions that return a TorchScript module."""
EXPORTERS = frozenset({"torch.onnx.export", "torch.jit.trace", "torch.jit.trace_module", "torch.export.export"})
"""Functions that export a model (ONNX, TorchScript by tracing, ``torch.export``): a module that calls
one is an export script, whose forward passes check or trace the export on an example input."""

AUTOGRAD_ENTRY_POINTS = frozenset({"torch.autograd.grad", "torch.autograd.backward"})
"""The functions that backpropagate besides ``Tensor.backward``: GPU005 reads a loop that calls one
as a training loop."""

GRAPH_READERS = frozenset({"torchviz.make_dot", "torchviz.make_dot_from_trace"})
"""Functions that read a tensor's autograd graph to draw it (torchviz): code that calls one wants
the graph its forward passes build, as code that backpropagates does."""

ACCELERATOR_WORDS = ("cuda", "gpu", "device", "accelerat", "fabric", "parallel", "deepspeed")
"""Words, in lower case, that a name, attribute, keyword, import or string of the code contains
wherever it puts a model or tensor on an accelerator — ``.cuda()``, ``torch.cuda.amp``,
``device=``/``device_map=``, ``torch.set_default_device``, ``DataParallel`` and
``DistributedDataParallel``, Accelerate's ``Accelerator``, Lightning's ``Fabric``, DeepSpeed, an
``args.gpu`` option. GPU004 reads a module that spells none of them, nor one of
:data:`ACCELERATOR_TOKENS`, and calls no ``.to``, as running the models it builds on the CPU."""

ACCELERATOR_TOKENS = frozenset({"mps", "xpu", "npu", "hub", "8bit", "4bit"})
"""Shorter words that count only as a whole part of a name or string (split at anything but letters
and digits, so ``inputs`` and ``dumps`` do not count): Apple's ``mps``, Intel's ``xpu``, Ascend's
``.npu()``, ``torch.hub`` (hub models pick a device themselves), ``load_in_8bit``."""

MULTI_DEVICE_WORDS = (
    "rank", "distributed", "set_device", "parallel", "world_size", "device_ids", "ddp", "accelerat", "fabric",
    "deepspeed",
)
"""Words, in lower case, that code running on several GPUs spells (``local_rank``,
``torch.distributed``, ``torch.cuda.set_device``, ``DistributedDataParallel``...): there, a tensor
loaded onto the GPU it was saved from is not on the process's own (``semantic.moved_at_once``
reads them)."""

GRAD_OFF = frozenset({
    "torch.no_grad", "torch.inference_mode", "torch.autograd.no_grad", "torch.autograd.inference_mode",
    "torch.autograd.grad_mode.no_grad", "torch.autograd.grad_mode.inference_mode",
})
"""The context managers (and decorators) that turn gradients off, under every name torch exports them
by: ``semantic.grad_mode`` reads them."""

SET_GRAD_ENABLED = frozenset({
    "torch.set_grad_enabled", "torch.autograd.set_grad_enabled", "torch.autograd.grad_mode.set_grad_enabled",
})
"""``set_grad_enabled`` under every name torch exports it by: ``semantic.grad_mode`` reads a call of it
with anything but ``True`` as turning gradients off."""

GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad", "torch.autograd.grad_mode.enable_grad"})
"""The context manager (and decorator) that turns gradients back on, under every name torch exports it by."""

DEPRECATED_CUDA_MEMORY: Dict[str, str] = {
    f"{namespace}.{old}": new
    for namespace in ("torch.cuda", "torch.cuda.memory")
    for old, new in (
        ("memory_cached", "memory_reserved"),
        ("max_memory_cached", "max_memory_reserved"),
        ("reset_max_memory_cached", "reset_peak_memory_stats"),
        ("reset_max_memory_allocated", "reset_peak_memory_stats"),
    )
}
"""Each deprecated ``torch.cuda`` memory function, and the name of the ``torch.cuda`` function that
replaces it: GPU006 reports and renames them (and judges which renames behave the same)."""

SHAPE_FACTORIES = frozenset({
    "zeros", "ones", "empty", "full", "rand", "randn", "normal",
    "zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like",
})
"""``torch`` functions that allocate a floating-point tensor of a given shape: ``analysis.tensors``
reads one called with a device as a large allocation (unless given another ``dtype``: ids and masks
are small)."""

SIZE_ARGUMENT_FACTORIES = frozenset({"zeros", "ones", "empty", "rand", "randn"})
"""Those of :data:`SHAPE_FACTORIES` whose positional arguments are the shape alone
(``torch.randn(25, 128)``): ``semantic.tiny_batches`` reads a spelled one as a batch of vectors."""

LITERAL_TENSOR = "tensor"
"""``torch.tensor(data)``: a tensor of the shape of the nested lists it is given."""
RANGE_FUNCTION = "arange"
"""``torch.arange(end)``, ``torch.arange(start, end, step)``: a one-dimensional tensor of the range."""
TENSOR_OPTIONS = frozenset({"dtype", "device", "requires_grad"})
"""Keywords of torch's tensor creation functions that leave the shape as the other arguments give it."""
STACKING_FUNCTION = "stack"
"""``torch.stack(tensors, dim)``: the tensors' common shape with their number inserted at ``dim``."""
SHAPE_KEEPING_FUNCTIONS = frozenset({"triu", "tril"})
"""``torch`` functions that return a tensor of their first argument's shape (``semantic.model_size``
reads a buffer's size through them)."""
SHAPE_KEEPING_METHODS = frozenset({
    "to", "cpu", "cuda", "float", "half", "double", "long", "int", "bool", "detach", "clone", "contiguous",
    "requires_grad_",
})
"""Tensor methods whose result has the receiver's shape (``x = x.to(device)`` keeps what
``semantic.model_size`` knows of ``x``)."""

SIZE_CHANGING_IN_PLACE_METHODS = frozenset({"resize_", "resize_as_", "set_", "as_strided_"})
"""In-place tensor methods that may change how many elements the tensor holds; the others
(``normal_``, ``uniform_``, ``fill_``, ``zero_``, ``copy_``, ``requires_grad_``) keep its size, so
a constructor that fills a weight so (``self.fc.weight.data.normal_(0, 0.1)``) leaves the state
dict's size as its layers give it (``semantic.model_size``)."""
WEIGHT_INITIALISERS = "torch.nn.init"
"""The namespace of functions that fill the tensor they are given in place, keeping its size
(``nn.init.xavier_uniform_(self.fc.weight)``)."""

NON_TENSOR_TORCH = frozenset({
    "device", "dtype", "no_grad", "enable_grad", "inference_mode", "set_grad_enabled", "manual_seed",
    "seed", "is_tensor", "is_floating_point", "is_complex", "numel", "save", "compile", "get_default_dtype",
    "set_default_dtype", "typename", "Generator", "Size", "finfo", "iinfo", "is_grad_enabled",
    "set_printoptions", "use_deterministic_algorithms", "set_num_threads", "get_num_threads",
    "is_inference_mode_enabled", "set_float32_matmul_precision", "autocast", "allclose", "equal",
    "is_nonzero", "is_same_size", "is_storage", "get_rng_state", "initial_seed",
})
"""``torch.X`` functions that return no tensor: ``is_torch_tensor_function`` excepts them."""

FUNCTIONAL_NAMESPACE = "torch.nn.functional."
"""Where torch's functional layers and losses live (``F.cross_entropy``)."""
TENSOR_NAMESPACES = (FUNCTIONAL_NAMESPACE, "torch.linalg.", "torch.fft.", "torch.special.")
"""Namespaces every function of which computes tensors: ``is_torch_tensor_function`` accepts them
all, and ``is_module_constructor`` none."""

INTEGER_DTYPES = frozenset({"torch.long", "torch.int64", "torch.int", "torch.int32"})
"""Integer dtypes of ids, indices or counts, as qualified names (not the bytes of an image: read by
``semantic.one_example``)."""
INTEGER_TENSOR_CLASSES = frozenset({"torch.LongTensor", "torch.IntTensor", "torch.cuda.LongTensor", "torch.cuda.IntTensor"})
"""Legacy constructors of integer tensors: ``torch.LongTensor(ids)``."""

FLOAT_DTYPES = frozenset({"float", "float16", "float32", "float64", "half", "bfloat16", "double"})
"""The floating-point ``torch`` dtypes, by attribute name (``torch.float16``): ``analysis.tensors``
reads a shape factory given another ``dtype`` as a small allocation."""

OPTIMIZER_NAMESPACE = "torch.optim."
"""Where torch's optimizers live (``torch.optim.SGD``, ``torch.optim.Adam``...): GPU001 reads a name
bound to one of them as a live optimizer."""

PARAMETER_LISTING_METHODS = frozenset({"parameters", "named_parameters"})
"""``nn.Module`` methods that give the module's own parameter tensors (not copies), which an
optimizer or another object built with them keeps alive."""

OPTIMIZER_STEPS = frozenset({"step", "zero_grad"})
"""What training calls on an optimizer (GPU001 reads a loaded value stepped so as a live optimizer)."""

# -- Tensor methods and attributes -----------------------------------------------------------------

MODEL_SUMMARIES = frozenset({"torchsummary.summary", "torchinfo.summary"})
"""Functions of torch's companion packages that print a network's layers and sizes, running it on
a made-up input with hooks they remove again: they add nothing to the network."""

SUMMARY_WRITER_METHODS = frozenset({"add_scalar", "add_scalars", "add_histogram", "add_text"})
"""Methods of ``torch.utils.tensorboard.SummaryWriter`` that turn the values they are given into
numbers or arrays to write them out, and keep nothing of a tensor (``writer.add_scalar(tag, loss,
step)``)."""

NUMPY_PACKAGE = "numpy"
"""numpy's functions give arrays and numbers, which carry no autograd history (numpy refuses a
tensor that requires grad)."""

ON_CUDA_ATTRIBUTE = "is_cuda"
"""The tensor attribute that is true where the tensor lies on a CUDA device."""

TENSOR_METADATA_ATTRIBUTES = frozenset({"shape", "dtype", "device", "ndim", ON_CUDA_ATTRIBUTE, "requires_grad"})
"""Attributes of a tensor that describe it and hold none of its storage or history: every analysis
that follows tensors (``tensors``, ``aliases``, ``gradients``) and GPU002 start from these."""

GRAD_MODE_ATTRIBUTES = frozenset({"requires_grad"})
"""Tensor metadata that the grad mode a tensor was made in decides: ``torch.no_grad()`` changes it."""

TENSOR_SHAPE_METHODS = frozenset({"size", "dim", "numel"})
"""Tensor methods that answer a question about its shape: their result holds no tensor (read by
``NON_TENSOR_METHODS``, ``analysis.aliases``, ``analysis.gradients`` and ``TENSOR_ATTRIBUTES``)."""

TENSOR_TO_PYTHON_METHODS = frozenset({"item", "tolist"})
"""Tensor methods that copy its values out into Python numbers or lists: their result holds no tensor
and no history (read where ``TENSOR_SHAPE_METHODS`` is)."""

DEVICE_KEEPING_TENSOR_METHODS = frozenset({
    "abs", "clamp", "clone", "contiguous", "detach", "double", "exp", "flatten", "float", "half", "log",
    "max", "mean", "min", "permute", "reshape", "round", "sqrt", "squeeze", "std", "sum", "transpose",
    "unsqueeze", "var", "view",
})
"""Tensor methods whose result is a tensor on the input's device (reductions, reshapes, casts), most
of them numpy arrays' methods too: ``semantic.array_data`` follows a value through them."""

LAYOUT_METHODS = frozenset({
    "view", "reshape", "permute", "transpose", "squeeze", "unsqueeze", "flatten", "contiguous", "to", "cpu",
    "cuda", "float", "half", "double", "long", "int", "bool", "type",
})
"""Tensor methods whose arguments are shapes, dimensions, devices or dtypes: the result carries the
receiver's autograd history and nothing from the arguments (``semantic.history`` reads them)."""

REDUCTIONS = frozenset({"sum", "mean"})
"""Reductions, as tensor methods (``loss.sum()``) and ``torch`` functions (``torch.mean(loss)``),
whose result keeps the autograd history of the tensor reduced."""
BINARY_TENSOR_METHODS = frozenset({
    "add", "sub", "mul", "div", "matmul", "mm", "bmm", "mv", "dot", "inner", "outer", "pow", "dist",
    "maximum", "minimum", "eq", "ne", "lt", "le", "gt", "ge", "where", "masked_fill", "index_select",
})
"""Tensor methods that compute with the receiver and another tensor (``vectors.matmul(centers)``),
which must be on one device."""
ELEMENTWISE_METHODS = frozenset({"softmax", "log_softmax", "sigmoid", "tanh", "relu", "neg"})
"""Tensor methods that map each value of the receiver (along a dimension, for ``softmax``): the
result is a tensor made of the receiver alone."""

FRESH_TENSOR_METHODS = frozenset({
    "abs", "add", "clamp", "clone", "div", "exp", "log", "log_softmax", "matmul", "max", "mean", "min", "mul",
    "neg", "norm", "pow", "relu", "sigmoid", "softmax", "sqrt", "std", "sub", "sum", "tanh", "var",
})
"""Tensor methods that compute a new tensor, never a view of their receiver nor the receiver itself:
run with gradients off, the result has no autograd history whatever it was computed from (the test
suite checks this on the installed torch). ``view``, ``reshape``, ``float`` and the like may return
the receiver or a view that keeps its history."""
FRESH_TORCH_FUNCTIONS = frozenset({
    "torch.cat", "torch.stack", "torch.mean", "torch.sum", "torch.matmul", "torch.softmax", "torch.sigmoid",
    "torch.exp", "torch.log", "torch.norm", "torch.cdist", "torch.einsum",
    "torch.nn.functional.normalize", "torch.nn.functional.softmax", "torch.nn.functional.log_softmax",
    "torch.nn.functional.cosine_similarity", "torch.nn.functional.interpolate", "torch.nn.functional.pad",
})
"""Torch functions that compute a new tensor (never a view of an argument): run with gradients off,
the result has no autograd history (the test suite checks this on the installed torch)."""

TENSOR_TO_ARRAY_METHODS = frozenset({"numpy"})
"""Tensor methods that give a numpy array of its values (on the CPU), without its history."""

ARRAY_ONLY_METHODS = frozenset({"astype", "tobytes", "tofile"})
"""Methods of numpy arrays that tensors lack: a value they are called on is no tensor
(``semantic.array_data`` reads them)."""

TEXT_ONLY_METHODS = frozenset({
    "lower", "upper", "strip", "lstrip", "rstrip", "startswith", "endswith", "splitlines",
})
"""Methods of strings (and bytes) that tensors and numpy arrays lack: a value they are called on is
no tensor (``semantic.array_data`` reads them)."""

TEXT_SPLIT = "split"
"""A method of strings and of tensors alike; a tensor's needs a size (``x.split(2)``), so one called
with no argument or a string (``caption.split(" ")``) is a string's (``semantic.array_data``)."""

FORMER_TENSOR_ATTRIBUTES = frozenset({"names"})
"""Attributes that tensors had in older torch releases and the newest may lack (``names``, of named
tensors): code written for those releases still uses them, so ``NON_TENSOR_ATTRIBUTES`` keeps them."""

NON_TENSOR_ATTRIBUTES = TENSOR_METADATA_ATTRIBUTES | FORMER_TENSOR_ATTRIBUTES | frozenset({
    "layout", "is_leaf", "grad_fn", "training",
})
"""Attributes of a tensor (or, ``training``, of a module) whose value holds no GPU tensor:
``analysis.tensors`` reads ``x.shape`` as not tensor-like."""

NON_TENSOR_METHODS = TENSOR_SHAPE_METHODS | TENSOR_TO_PYTHON_METHODS | frozenset({
    "cpu", "numpy", "nelement", "element_size", "backward", "data_ptr", "is_contiguous", "stride",
    "storage_offset", "get_device", "__len__", "register_hook", "is_floating_point",
    # methods of nn.Module
    "eval", "train", "zero_grad", "parameters", "named_parameters", "state_dict", "load_state_dict",
    "modules", "children", "named_modules", "named_children",
})
"""Methods of tensors (or modules) whose result holds no GPU tensor: ``analysis.tensors`` reads
``loss = loss.item()`` as releasing what ``loss`` held."""

INDEX_METHODS = frozenset({"argmax", "argmin", "nonzero", "argsort", "bool", "long", "int"})
"""Tensor methods whose result is indices or a mask: a few bytes whatever the input's size
(``analysis.tensors`` adds transformers' ``generate``, whose result is token ids)."""

RELEASING_BUILTINS = frozenset({"float", "int", "bool", "str", "len", "round", "repr", "list", "tuple"})
"""Builtins whose result holds no GPU tensor (``float(loss)``); ``list(t)`` keeps tensors only of a
tensor, and is judged by its argument."""

VALUE_BUILTINS = RELEASING_BUILTINS - {"list", "tuple"}
"""Builtins whose result is a Python value whatever they are given, without a tensor or its history
(``analysis.tensors`` and ``semantic.confined`` read them)."""

CLOCKS = frozenset({"time.time", "time.perf_counter", "time.monotonic", "time.process_time", "time.time_ns"})
"""The standard library's clocks, which return Python numbers (``start_time = time.time()`` in an
evaluation loop)."""

INTEGER_CASTS = frozenset({"bool", "byte", "char", "short", "int", "long"})
"""Tensor methods that cast to an integer or boolean dtype, which can carry no autograd history
(``mask.mul(255).byte()``)."""

HISTORY_FREE_METHODS = TENSOR_TO_PYTHON_METHODS | TENSOR_SHAPE_METHODS | INDEX_METHODS | INTEGER_CASTS | frozenset({
    "detach", "numpy", "eq", "ne", "lt", "le", "gt", "ge",
})
"""Tensor methods whose result carries no autograd history whatever the receiver's: Python values,
shapes, indices, masks, integer casts and detached copies (``semantic.confined`` reads them)."""

TENSOR_ATTRIBUTES = TENSOR_METADATA_ATTRIBUTES | TENSOR_SHAPE_METHODS | TENSOR_TO_PYTHON_METHODS | frozenset({
    "T", "data", "grad", "float", "half", "double", "to", "cuda", "cpu", "view", "reshape", "copy_",
    "clone", "detach", "numpy", "sum", "mean", "norm", "unsqueeze", "squeeze", "storage", "element_size",
})
"""The commonest attributes and methods of a tensor: GPU002 reads using only these (and mapping
methods) on a loaded object as no sign that it is a module."""

# -- Modules ---------------------------------------------------------------------------------------

MODULE_API = frozenset({
    "add_module", "apply", "bfloat16", "buffers", "children", "compile", "cpu", "cuda", "double", "eval",
    "extra_repr", "float", "get_buffer", "get_extra_state", "get_parameter", "get_submodule", "half", "ipu",
    "load_state_dict", "modules", "mtia", "named_buffers", "named_children", "named_modules",
    "named_parameters", "parameters", "register_backward_hook", "register_buffer", "register_forward_hook",
    "register_forward_pre_hook", "register_full_backward_hook", "register_full_backward_pre_hook",
    "register_load_state_dict_post_hook", "register_load_state_dict_pre_hook", "register_module",
    "register_parameter", "register_state_dict_post_hook", "register_state_dict_pre_hook", "requires_grad_",
    "set_extra_state", "set_submodule", "share_memory", "state_dict", "to", "to_empty", "train", "type",
    "xpu", "zero_grad",
})
"""The public methods of ``torch.nn.Module`` other than ``forward``: ``self.parameters()`` in a
module's method calls one of them, not a submodule (GPU004 reads them)."""

MODULE_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "buffers", "named_buffers", "zero_grad",
    "state_dict", "load_state_dict", "modules", "named_modules", "children", "named_children",
    "requires_grad_", "register_forward_hook", "register_buffer", "half", "bfloat16",
})
"""Methods of ``nn.Module`` whose call shows the receiver is a module (of them tensors have only
``requires_grad_``, ``half`` and ``bfloat16``): ``analysis.tensors`` and ``semantic.survey`` collect
the names they are called on."""

MODULE_ONLY_METHODS = frozenset({
    "eval", "train", "parameters", "named_parameters", "modules", "named_modules", "children",
    "named_children", "state_dict", "load_state_dict", "zero_grad",
})
"""Methods of ``nn.Module`` that tensors lack: a chain that calls one works on a module
(``semantic.moved_at_once`` reads ``m.cuda().eval()`` as moving the module ``m``)."""

CUDA_AVAILABILITY = "torch.cuda.is_available"
"""The test a program branches on to run on a GPU where one is present: a load without
``map_location`` in its true branch, beside a mapped one in the other, restores onto the saved
device on purpose (``semantic.restored_branch``)."""

DICT_CLASSES = frozenset({"collections.OrderedDict", "collections.defaultdict", "typing.OrderedDict"})
"""Classes of the standard library whose call with no arguments makes a new, empty dict (a state
dict's type: ``OrderedDict()``)."""

MODULE_CALL_METHOD = "forward"
"""The method ``nn.Module.__call__`` runs: ``model(x)`` calls it without spelling its name."""

GRAD_FREE_LIBRARY_METHODS: Dict[str, FrozenSet[str]] = {
    "sentence_transformers.SentenceTransformer": frozenset({"encode", "encode_query", "encode_document"}),
}
"""Methods of library models that run their forward passes with gradients off themselves:
sentence-transformers' ``SentenceTransformer.encode`` (and its query and document variants) wraps
the model's forward pass in ``torch.no_grad()`` (``torch.inference_mode()`` in later releases), so
a call of it builds no graph. Keyed by the class that builds the model."""
FORWARD_METHODS = frozenset({"forward", "inference", "infer", "encode", "decode", "encode_image", "encode_text"})
"""Methods that run a model's forward pass (``model.inference(x)`` in Tacotron-style models,
``model.encode(src)`` and ``model.decode(memory, tgt)`` in encoder-decoders, CLIP's
``model.encode_image(images)`` and ``model.encode_text(tokens)``, its two towers)."""

TORCH_NN_SPELLINGS = frozenset({"", "nn", "torch.nn"})
"""How a class of ``torch.nn`` is named as written, read where a class of another file is read
without its imports resolved (``nn.Module``, ``torch.nn.Sequential``, a bare ``Module``)."""

MODULE_RETURNING_METHODS = frozenset({
    "float", "half", "bfloat16", "double", "to", "cuda", "cpu", "eval", "train", "requires_grad_",
})
"""Methods of ``nn.Module`` that return the module they are called on: ``model.float().eval()`` is
``model``."""

MODE_SWITCHES = frozenset({"eval", "train"})
"""Methods of ``nn.Module`` that switch its mode and leave its tensors where they are:
``semantic.run_as_loaded`` reads ``model.eval()`` as no move of a loaded module."""

WEIGHT_ATTRIBUTES = frozenset({"weight", "bias"})
"""A layer's parameters (``layer.weight``, ``layer.bias``): ``analysis.scope`` reads assigning one as
replacing a tensor the module held."""

LOSS_MODULES = frozenset({
    "AdaptiveLogSoftmaxWithLoss", "BCELoss", "BCEWithLogitsLoss", "CTCLoss", "CosineEmbeddingLoss",
    "CrossEntropyLoss", "GaussianNLLLoss", "HingeEmbeddingLoss", "HuberLoss", "KLDivLoss", "L1Loss",
    "LinearCrossEntropyLoss", "MSELoss", "MarginRankingLoss", "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss", "MultiMarginLoss", "NLLLoss", "NLLLoss2d", "PoissonNLLLoss", "SmoothL1Loss",
    "SoftMarginLoss", "TripletMarginLoss", "TripletMarginWithDistanceLoss",
})
"""The loss modules of ``torch.nn`` (the subclasses of ``torch.nn.modules.loss._Loss``, and
``AdaptiveLogSoftmaxWithLoss``, which returns a loss too), by class name: ``is_loss_module`` reads
them for ``analysis.scope``'s criteria and GPU005."""

LOSS_FUNCTIONS = frozenset(f"torch.nn.functional.{name}" for name in (
    "binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss", "cross_entropy",
    "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss", "kl_div", "l1_loss",
    "margin_ranking_loss", "mse_loss", "multi_margin_loss", "multilabel_margin_loss",
    "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss", "smooth_l1_loss", "soft_margin_loss",
    "triplet_margin_loss", "triplet_margin_with_distance_loss",
))
"""The loss functions of ``torch.nn.functional``: like a loss module, each holds no weights and
keeps nothing of its inputs, so ``F.cross_entropy(out, y).item()`` cuts ``out`` from the graph
(GPU004)."""

STORAGE_KEEPING_LOSS_FUNCTIONS = frozenset({
    "torch.nn.functional.mse_loss", "torch.nn.functional.smooth_l1_loss",
    "torch.nn.functional.binary_cross_entropy", "torch.nn.functional.soft_margin_loss",
})
"""Losses whose reduced value, 0-dim or not, keeps the storage of the elementwise losses it reduces
(as large as the input), even once a backward pass has freed its graph; every other torch loss gives
a number of its own."""
STORAGE_KEEPING_LOSS_MODULES = frozenset({"MSELoss", "SmoothL1Loss", "BCELoss", "SoftMarginLoss"})
"""The loss classes that call :data:`STORAGE_KEEPING_LOSS_FUNCTIONS`."""

MODULE_CLASSES = LOSS_MODULES | frozenset({
    "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveAvgPool3d", "AdaptiveMaxPool1d", "AdaptiveMaxPool2d",
    "AdaptiveMaxPool3d", "AlphaDropout", "AvgPool1d", "AvgPool2d", "AvgPool3d", "BatchNorm1d",
    "BatchNorm2d", "BatchNorm3d", "Bilinear", "CELU", "ChannelShuffle", "CircularPad1d", "CircularPad2d",
    "CircularPad3d", "ConstantPad1d", "ConstantPad2d", "ConstantPad3d", "Container", "Conv1d", "Conv2d",
    "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "CosineSimilarity", "CrossMapLRN2d",
    "DataParallel", "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "ELU", "Embedding", "EmbeddingBag",
    "FeatureAlphaDropout", "Flatten", "Fold", "FractionalMaxPool2d", "FractionalMaxPool3d", "GELU", "GLU",
    "GRU", "GRUCell", "GroupNorm", "Hardshrink", "Hardsigmoid", "Hardswish", "Hardtanh", "Identity",
    "InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d", "LPPool1d", "LPPool2d", "LPPool3d", "LSTM",
    "LSTMCell", "LayerNorm", "LazyBatchNorm1d", "LazyBatchNorm2d", "LazyBatchNorm3d", "LazyConv1d",
    "LazyConv2d", "LazyConv3d", "LazyConvTranspose1d", "LazyConvTranspose2d", "LazyConvTranspose3d",
    "LazyInstanceNorm1d", "LazyInstanceNorm2d", "LazyInstanceNorm3d", "LazyLinear", "LeakyReLU", "Linear",
    "LocalResponseNorm", "LogSigmoid", "LogSoftmax", "MaxPool1d", "MaxPool2d", "MaxPool3d", "MaxUnpool1d",
    "MaxUnpool2d", "MaxUnpool3d", "Mish", "Module", "ModuleDict", "ModuleList", "MultiheadAttention",
    "PReLU", "PairwiseDistance", "ParameterDict", "ParameterList", "PixelShuffle", "PixelUnshuffle",
    "RMSNorm", "RNN", "RNNBase", "RNNCell", "RNNCellBase", "RReLU", "ReLU", "ReLU6", "ReflectionPad1d",
    "ReflectionPad2d", "ReflectionPad3d", "ReplicationPad1d", "ReplicationPad2d", "ReplicationPad3d",
    "SELU", "Sequential", "SiLU", "Sigmoid", "Softmax", "Softmax2d", "Softmin", "Softplus", "Softshrink",
    "Softsign", "SyncBatchNorm", "Tanh", "Tanhshrink", "Threshold", "Transformer", "TransformerDecoder",
    "TransformerDecoderLayer", "TransformerEncoder", "TransformerEncoderLayer", "Unflatten", "Unfold",
    "Upsample", "UpsamplingBilinear2d", "UpsamplingNearest2d", "ZeroPad1d", "ZeroPad2d", "ZeroPad3d",
})
"""The public classes of ``torch.nn`` that subclass ``torch.nn.Module`` (``torch.nn.Parameter`` and
``Buffer`` are tensors, not modules): ``is_module_constructor`` reads them."""

SIZED_LAYERS: Dict[str, Tuple[str, Tuple[str, ...]]] = {
    "Linear": ("linear", ("in_features", "out_features", "bias")),
    **{f"Conv{d}d": ("conv", ("in_channels", "out_channels", "kernel_size", "stride", "padding", "dilation", "groups", "bias")) for d in (1, 2, 3)},
    **{f"ConvTranspose{d}d": ("conv", ("in_channels", "out_channels", "kernel_size", "stride", "padding", "output_padding", "groups", "bias")) for d in (1, 2, 3)},
    "Embedding": ("embedding", ("num_embeddings", "embedding_dim")),
    **{f"BatchNorm{d}d": ("batch_norm", ("num_features", "eps", "momentum", "affine", "track_running_stats")) for d in (1, 2, 3)},
    "RNN": ("recurrent", ("input_size", "hidden_size", "num_layers", "nonlinearity", "bias", "batch_first", "dropout", "bidirectional")),
    "GRU": ("recurrent", ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional")),
    "LSTM": ("recurrent", ("input_size", "hidden_size", "num_layers", "bias", "batch_first", "dropout", "bidirectional", "proj_size")),
}
"""``torch.nn`` layers whose state dict's size follows from their arguments, by class name: the
kind of formula (``semantic.model_size`` holds them: a linear layer's ``in * out + out``...) and the
names of the parameters a positional argument fills, in order."""

RECURRENT_GATES = {"RNN": 1, "GRU": 3, "LSTM": 4}
"""How many gates a recurrent layer of ``SIZED_LAYERS`` computes: its weights have that many times
``hidden_size`` rows."""

PARAMETER_FREE_LAYERS = frozenset({
    "ReLU", "ReLU6", "LeakyReLU", "ELU", "GELU", "SiLU", "Tanh", "Sigmoid", "Softmax", "LogSoftmax",
    "Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "MaxPool1d", "MaxPool2d", "MaxPool3d", "AvgPool1d",
    "AvgPool2d", "AvgPool3d", "AdaptiveAvgPool1d", "AdaptiveAvgPool2d", "AdaptiveMaxPool1d",
    "AdaptiveMaxPool2d", "Flatten", "Identity", "Upsample",
})
"""``torch.nn`` layers with an empty state dict, whatever their arguments."""

MODULE_WRAPPERS = frozenset({"DataParallel", "DistributedDataParallel"})
"""``torch.nn`` classes that wrap the module they are given first: their state dict is that module's,
each key prefixed with ``module.``."""

MODULE_CONTAINERS = frozenset({"Sequential", "ModuleList"})
"""``torch.nn`` containers whose state dict is that of the modules they are given."""

NESTED_MODULE_CLASSES = frozenset({
    "BNReLU2d", "BNReLU3d", "ConvBn1d", "ConvBn2d", "ConvBn3d", "ConvBnReLU1d", "ConvBnReLU2d",
    "ConvBnReLU3d", "ConvReLU1d", "ConvReLU2d", "ConvReLU3d", "DeQuantize", "DistributedDataParallel",
    "DistributedDataParallelCPU", "EmbeddingPackedParams", "FXFloatFunctional", "FloatFunctional",
    "LinearBn1d", "LinearPackedParams", "LinearReLU", "ModuleWrapper", "NonDynamicallyQuantizableLinear",
    "PackedParameter", "ParametrizationList", "QFunctional", "Quantize", "WeightedQuantizedModule",
})
"""The other public ``nn.Module`` subclasses of ``torch.nn``'s public submodules, which ``torch.nn``
itself does not export (``torch.nn.parallel.DistributedDataParallel``, the quantized and fused
modules): ``is_module_constructor`` reads them."""


COMMAND_LINE_PARSES = frozenset({"parse_args", "parse_known_args"})
"""``argparse.ArgumentParser`` methods that read the command line: module-level code calling one is
a script's."""

EXECUTOR_MODULES = ("multiprocessing", "torch.multiprocessing", "concurrent.futures", "threading")
"""Modules whose pools, executors and threads run a function they are handed as it is, with
gradients on (a worker process starts with them on): ``pool.map(extract, chunks)`` is no sampler
calling back under its own grad mode."""

DATA_LOADER = "torch.utils.data.DataLoader"
DATA_SUBSET = "torch.utils.data.Subset"
"""A subset of a dataset, given first: its examples are the dataset's."""
TENSOR_DATASET = "torch.utils.data.TensorDataset"
"""A dataset of the tensors it is given: its examples are slices of them, on their device."""
TQDM = frozenset({"tqdm.tqdm", "tqdm.auto.tqdm", "tqdm.notebook.tqdm"})
"""Progress bars that yield what they wrap, as it is."""
ROW_REDUCING_METHODS = frozenset({"max", "argmax"})
ROW_REDUCING_FUNCTIONS = frozenset({"torch.max", "torch.argmax"})
"""Reductions that, over dimension 1 (``torch.max(scores, 1)``, ``scores.argmax(dim=1)``), pick one
class per example of a batch of classifier scores: GPU003 reads what they are given as a batch's
class scores, one short row per example."""
ROW_PRESERVING_METHODS = frozenset({"softmax", "log_softmax", "sigmoid", "detach"})
ROW_PRESERVING_FUNCTIONS = frozenset({
    f"{TORCH_PACKAGE}.{name}" for name in ("softmax", "log_softmax", "sigmoid")
} | {f"{FUNCTIONAL_NAMESPACE}{name}" for name in ("softmax", "log_softmax", "sigmoid")})
"""Normalisations that keep a batch of class scores one row per example (``F.softmax(outputs,
dim=1)``, ``outputs.sigmoid()``, ``outputs.detach()``): a row reduction of what they return reduces
the scores they are given."""
DEVICE_MOVES = frozenset({"to", "cuda", "cpu"})
"""Methods of tensors and modules that put them on a device the code chooses."""
ACCELERATOR_MOVES = DEVICE_MOVES - {"cpu"}
"""The methods that may put a tensor or module on an accelerator (``cpu()`` only takes it off one;
``to`` may do either, as its device says)."""
SUBMODULE_REACHING_METHODS = frozenset({"type", "apply", "_apply", "modules", "children", "named_modules", "named_children"})
"""Methods of ``nn.Module`` that may move it (``model.type(torch.cuda.FloatTensor)``,
``model.apply(fn)``) or hand out its submodules for code to move (``for m in model.modules(): m.cuda()``)."""
PLACEMENT_KEEPING_METHODS = DEVICE_KEEPING_TENSOR_METHODS | (LAYOUT_METHODS - DEVICE_MOVES - {"type"})
"""Tensor methods whose result stays on the receiver's device: casts, reshapes and reductions (not
``.type(...)``, which may name a CUDA type, nor ``type_as``, which takes another tensor's device)."""
PARAMETER = "torch.nn.Parameter"
"""The wrapper that makes a module parameter of the tensor it is given: its storage, on its device."""
TENSOR_STORAGE = "data"
"""The tensor attribute whose assignment swaps the tensor's storage, device included, for another's."""
BUFFER_REGISTRATION = "register_buffer"
"""The ``nn.Module`` method that makes a tensor a buffer of the module (``register_buffer(name, tensor)``)."""
TENSOR_REGISTRATIONS = frozenset({BUFFER_REGISTRATION, "register_parameter"})
"""``nn.Module`` methods that make the tensor they are given one of the module's own, under the name
they are given first."""
MODULE_ADDITIONS = TENSOR_REGISTRATIONS | frozenset({"add_module", "register_module"})
"""``nn.Module`` methods that give a module a parameter, a buffer or a submodule its constructor
does not spell (``semantic.weightless_passes`` reads a class calling none as holding no weights)."""
GRAD_REQUEST_KEYWORD = "requires_grad"
"""The keyword with which a factory makes a tensor that asks for its gradient."""
GRAD_REQUEST_METHOD = "requires_grad_"
"""The tensor method that makes a tensor ask for its gradient."""
NN_PACKAGE = "torch.nn."
TRANSFORMS_PACKAGE = "torchvision.transforms."
VARIABLE = "torch.autograd.Variable"
"""The tensor wrapper of older torch: since 0.4 it returns the tensor it is given."""
NUMBER_FACTORIES = frozenset(
    {f"{TORCH_PACKAGE}.{name}" for name in SHAPE_FACTORIES if not name.endswith("_like")}
    | {f"{TORCH_PACKAGE}.{name}" for name in (LITERAL_TENSOR, RANGE_FUNCTION, "randint", "linspace", "eye", "as_tensor")}
)
"""torch's functions that make a tensor out of the numbers, shapes and Python lists they are given."""
LEGACY_TENSOR_CLASSES = frozenset({f"{TORCH_PACKAGE}.{kind}Tensor" for kind in ("", "Float", "Double", "Long", "Int", "Byte", "Bool")})
"""The tensor classes of older torch, called to make a CPU tensor (``torch.FloatTensor(2, 3)``)."""
FLOATING_LEGACY_TENSOR_CLASSES = frozenset({f"{TORCH_PACKAGE}.{kind}Tensor" for kind in ("", "Float", "Double")})
"""The legacy tensor classes whose elements are floating point: given sizes
(``torch.Tensor(64, 3, 224, 224)``), they allocate as a shape factory does."""
CPU_FABRICATIONS = NUMBER_FACTORIES | LEGACY_TENSOR_CLASSES
"""Functions and legacy tensor classes that make a tensor out of nothing but the numbers, shapes and
Python lists they are given: without a ``device`` argument (and with no default device set), on the
CPU. GPU004 reads a forward pass given only such tensors as a smoke test on the CPU."""
DEVICE_TAKING_MAKERS = NUMBER_FACTORIES | frozenset(
    {f"{TORCH_PACKAGE}.{name}" for name in SHAPE_FACTORIES if name.endswith("_like")}
    | {f"{TORCH_PACKAGE}.{name}" for name in ("randint_like", "randperm", "logspace", "asarray")}
)
"""torch's functions that make a tensor where their ``device`` argument says (``torch.zeros(n,
device=device)``): ``semantic.run_as_loaded`` reads one given a device as an input made there."""
DEFAULT_DEVICE_SETTERS = frozenset({"torch.set_default_device", "torch.set_default_tensor_type"})
"""Functions that make torch's factories allocate on another device (``torch.set_default_device("cuda")``)."""
ACCELERATOR_MOVE_METHODS = frozenset({"cuda", "xpu", "ipu", "mtia"})
"""Methods of tensors and modules that put them on an accelerator whatever their arguments say."""
CUDA_NAMESPACE = "torch.cuda."
ALLOCATION_FREE_CUDA_FUNCTIONS = EMPTY_CACHE | {CUDA_AVAILABILITY} | frozenset({
    f"torch.cuda.{name}" for name in (
        "synchronize", "device_count", "manual_seed", "manual_seed_all", "memory_allocated", "memory_reserved",
        "max_memory_allocated", "max_memory_reserved", "memory_summary", "reset_peak_memory_stats", "ipc_collect",
        "get_device_name",
    )
})
"""Functions of ``torch.cuda`` that put nothing of the program's on the GPU: cache and memory
statistics, availability, seeding."""
TORCH_DTYPES = frozenset({
    f"torch.{name}" for name in (
        "float", "float16", "float32", "float64", "half", "bfloat16", "double", "long", "int64", "int", "int32",
        "int16", "short", "int8", "uint8", "bool", "complex64", "complex128",
    )
})
"""torch's dtypes: ``x.to(torch.float32)`` converts, moving nothing."""
PLACING_LIBRARIES = frozenset({"lightning", "pytorch_lightning", "accelerate", "deepspeed"})
"""Libraries whose trainers put the model on an accelerator by themselves."""
TENSOR_NEW_METHODS = frozenset({"new_zeros", "new_ones", "new_empty", "new_full", "new_tensor"})
"""Tensor methods that make a new tensor, on the device their ``device`` argument says (else the
receiver's)."""
DEVICE_NAME_WORDS = ("device", "gpu", "cuda", "rank")
"""Words, in lower case, of the names code gives a device or a GPU's index (``device``,
``args.gpu``, ``cuda_id``, ``local_rank``): ``x.to(args.gpu)`` moves ``x`` to a device the code names."""
DEVICE_CONTEXT = "torch.device"
"""``with torch.device("cuda"):`` makes the factories in its block allocate there."""

TINY_IMAGE_DATASETS = {
    "torchvision.datasets.MNIST": 28 * 28, "torchvision.datasets.FashionMNIST": 28 * 28,
    "torchvision.datasets.KMNIST": 28 * 28, "torchvision.datasets.QMNIST": 28 * 28,
    "torchvision.datasets.EMNIST": 28 * 28, "torchvision.datasets.USPS": 16 * 16,
    "torchvision.datasets.CIFAR10": 32 * 32, "torchvision.datasets.CIFAR100": 32 * 32,
    "torchvision.datasets.SVHN": 32 * 32,
}
"""torchvision's datasets of tiny images, with the pixels of one image: 28 x 28 for the MNIST family,
16 x 16 for USPS, 32 x 32 for CIFAR and SVHN (an example is an image and its label)."""
SIZE_KEEPING_TRANSFORMS = frozenset({
    "Compose", "ToTensor", "PILToTensor", "ToImage", "ToDtype", "ConvertImageDtype", "ToPILImage", "Normalize",
    "RandomHorizontalFlip", "RandomVerticalFlip", "RandomAffine", "ColorJitter", "Grayscale", "RandomGrayscale",
    "GaussianBlur", "RandomErasing", "RandomInvert", "RandomPosterize", "RandomSolarize", "RandomAdjustSharpness",
    "RandomAutocontrast", "RandomEqualize", "AutoAugment", "RandAugment", "TrivialAugmentWide", "AugMix",
    "RandomApply", "RandomChoice", "RandomOrder",
})
"""torchvision transforms whose output image is no larger than their input (``RandomRotation`` keeps
its size unless ``expand=True``; a crop keeps it at a size of at most the image's side, without
``pad_if_needed``): ``semantic.tiny_batches`` reads them."""
ROTATION_TRANSFORM = "RandomRotation"
CROP_TRANSFORMS = frozenset({"RandomCrop", "CenterCrop"})

RESIZING_NAMES = frozenset({"resize", "resized_crop", "scale", "randomsizedcrop", "interpolate", "upsample"})
"""Lower-cased last components (past any ``Random`` prefix) of the calls that resize images:
``transforms.Resize``, ``transforms.RandomResizedCrop``, ``transforms.functional.resize``,
``F.interpolate``, ``nn.Upsample``..."""


def resizes_images(qualified: str) -> bool:
    """Whether the call named ``qualified`` may resize an image: a torchvision transform or a torch
    function or layer whose name says so (:data:`RESIZING_NAMES`)."""
    if not qualified.startswith(("torchvision.", "torch.nn.")):
        return False
    name = qualified.rpartition(".")[2].lower()
    name = name[len("random"):] if name.startswith("random") and name != "randomsizedcrop" else name
    return name in RESIZING_NAMES or name.startswith(("upsample", "upsampling", "resize"))


def is_torch_tensor_function(qualified: str) -> bool:
    """Whether the function named ``qualified`` computes a tensor: any function of the
    ``TENSOR_NAMESPACES``, or a lowercase ``torch.X`` but the ``NON_TENSOR_TORCH`` ones."""
    if qualified.startswith(TENSOR_NAMESPACES):
        return True
    parts = qualified.split(".")
    return len(parts) == 2 and parts[0] == "torch" and parts[1] not in NON_TENSOR_TORCH and not parts[1][:1].isupper()


def nn_class_name(qualified: str) -> str:
    """The last component of a name under ``torch.nn`` (outside the ``TENSOR_NAMESPACES``), else ``""``."""
    if not qualified.startswith("torch.nn.") or qualified.startswith(TENSOR_NAMESPACES):
        return ""
    return qualified.rpartition(".")[2]


def is_history_free_metric(qualified: str) -> bool:
    """Whether ``qualified`` names a torchmetrics class of :data:`HISTORY_FREE_METRICS`, as the
    package exports it (``torchmetrics.Accuracy``) or from a submodule, task-specific classes too
    (``torchmetrics.classification.MulticlassAccuracy``)."""
    package, _, name = qualified.partition(".")
    if package != METRICS_PACKAGE:
        return False
    name = name.rpartition(".")[2]
    for task in METRIC_TASKS:
        if name.startswith(task) and name[len(task):] in HISTORY_FREE_METRICS:
            return True
    return name in HISTORY_FREE_METRICS


def builds_history_free_metric(qualified: AbstractSet[str]) -> bool:
    """Whether a call whose callee may have the names ``qualified`` builds a metric of
    :data:`HISTORY_FREE_METRICS`: every one of them names one (not a fallback imported from
    elsewhere under the same name where torchmetrics is missing)."""
    return bool(qualified) and all(is_history_free_metric(name) for name in qualified)


def is_module_constructor(qualified: str) -> bool:
    """Whether ``qualified`` names a ``torch.nn`` module class: ``torch.nn.Linear``, and deeper paths
    to one (``torch.nn.modules.linear.Linear``, ``torch.nn.parallel.DistributedDataParallel``) by
    their last component; never ``torch.nn.Parameter``."""
    name = nn_class_name(qualified)
    return name in MODULE_CLASSES or name in NESTED_MODULE_CLASSES


def is_loss_module(qualified: str) -> bool:
    """Whether ``qualified`` names a ``torch.nn`` loss class (``torch.nn.CrossEntropyLoss``, or a
    deeper path to one such as ``torch.nn.modules.loss.MSELoss``)."""
    return nn_class_name(qualified) in LOSS_MODULES
